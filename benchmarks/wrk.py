"""wrk (Debian's package): one fixed HTTP/1.1 POST at a fixed concurrency, keep-alive.

perf_analyzer speaks only OIP, so the REST dialect rows use wrk for every row
they compare, OIP included. The request is a Lua script written per run:
wrk builds the request once and resends its bytes on each connection, and
the script's `done` prints the counters this module reads (requests,
duration, socket and status errors) instead of parsing wrk's prose.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from typing import Protocol

SECONDS = 3
THREADS = 1  # one event loop is plenty for wrk at these rates; the server needs the other core
SUMMARY_MARK = "wrk_summary"

_DONE = f"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("{SUMMARY_MARK} %d %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    e.connect, e.read, e.write, e.status, e.timeout))
end
"""


class Post(Protocol):
    """What wrk sends (rest_dialects.RestRequest is one)."""

    @property
    def path(self) -> str: ...
    @property
    def body(self) -> bytes: ...
    @property
    def headers(self) -> dict[str, str]: ...


def executable() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("wrk not found: `make bench` installs it (apt-get install wrk)")
    return found


def _lua_string(data: bytes) -> str:
    """A Lua string literal holding `data` byte for byte (non-printable bytes as decimal escapes)."""
    return '"' + "".join(_lua_char(b) for b in data) + '"'


def _lua_char(byte: int) -> str:
    if chr(byte) in '"\\':
        return "\\" + chr(byte)
    return chr(byte) if 32 <= byte < 127 else f"\\{byte:03d}"


def script(post: Post) -> str:
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(post.body)}"]
    for name, value in post.headers.items():
        lines.append(f"wrk.headers[{_lua_string(name.encode())}] = {_lua_string(value.encode())}")
    return "\n".join(lines) + "\n" + _DONE


def requests_per_second(label: str, url: str, post: Post, connections: int, seconds: int = SECONDS) -> float:
    """Completed requests per second, or 0.0 (explained on stderr) when wrk failed or saw errors."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(script(post))
        lua.flush()
        command = [
            executable(),
            "-t",
            str(THREADS),
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "--timeout",
            "10s",
            "-s",
            lua.name,
            f"http://{url}{post.path}",
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            sys.stderr.write(f"{label}: wrk did not finish\n")
            return 0.0
    return _rate(label, result)


def _rate(label: str, result: subprocess.CompletedProcess[str]) -> float:
    summary = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith(SUMMARY_MARK)]
    if result.returncode != 0 or not summary:
        output = result.stdout[-2000:] + result.stderr[-2000:]
        sys.stderr.write(f"{label}: wrk failed ({result.returncode}):\n{output}\n")
        return 0.0
    completed, duration_us, *errors = (int(n) for n in summary[0])
    if any(errors):
        names = ("connect", "read", "write", "status >= 400", "timeout")
        counts = ", ".join(f"{n} {c}" for n, c in zip(names, errors) if c)
        sys.stderr.write(f"{label}: wrk saw errors ({counts}) in {completed} requests\n")
        return 0.0
    return completed / (duration_us / 1e6) if duration_us else 0.0
