"""The soak's command line and orchestration: the server, the drivers, the clock.

    make soak MINUTES=30
    python -m soak --minutes 5 [--summary-json FILE]    (with benchmarks/ on PYTHONPATH)

Exit status 0 when no answer was a 5xx or wrong, memory stayed within the
budget after the warm-up (runs long enough to judge it), every driver ran to
its end and the server stayed up; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from modelplatform.testing import ServerProcess
from soak.driver import FAMILIES
from soak.memory import MemoryLog, tree_rss_bytes
from soak.payloads import BODY_LIMIT_BYTES
from soak.report import RUNNING_HEADER, Verdict, running_row, summary_lines
from soak.serverlog import notable_lines
from soak.tally import Tally

BENCHMARKS = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = BENCHMARKS.parent / "model_repository"
MEMORY_SAMPLE_SECS = 5.0
#: A driver's requests time out after 60 s; past this it is stuck.
DRIVER_GRACE_SECS = 90.0


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the run (default 5)")
    parser.add_argument("--seconds", type=float, help="length of the run in seconds (overrides --minutes)")
    parser.add_argument("--pause-ms", type=float, default=10.0, help="each driver's pause between requests")
    parser.add_argument(
        "--report-secs", type=float, help="running table interval (default 10 s, 30 s past 10 min)"
    )
    parser.add_argument(
        "--memory-budget-mib", type=float, default=20.0, help="allowed growth after the warm-up"
    )
    parser.add_argument("--summary-json", type=Path, help="also write the summary as JSON here")
    return parser.parse_args(argv)


class Drivers:
    """The client processes, and the threads merging what they print into two tallies."""

    def __init__(self, server: ServerProcess, seconds: float, pause_ms: float, report_secs: float) -> None:
        self.total, self.window, self.lock = Tally(), Tally(), threading.Lock()
        self.incidents: list[str] = []
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(BENCHMARKS), os.environ.get("PYTHONPATH", "")]),
        }
        report = min(report_secs, 5.0)
        # stderr goes to a file: a pipe nobody reads until the end could fill and stall a driver.
        self.stderr = {family: tempfile.TemporaryFile("w+") for family in FAMILIES}
        self.processes = {
            family: subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "soak.driver",
                    family,
                    server.http_url,
                    server.grpc_url,
                    str(seconds),
                    str(pause_ms),
                    str(report),
                ],
                stdout=subprocess.PIPE,
                stderr=self.stderr[family],
                text=True,
                env=env,
            )
            for family in FAMILIES
        }
        self.readers = [
            threading.Thread(target=self._read, args=(family, process), daemon=True)
            for family, process in self.processes.items()
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, family: str, process: subprocess.Popen[str]) -> None:
        for line in process.stdout:  # type: ignore[union-attr]  # started with stdout=PIPE, so it is set
            piece = json.loads(line)
            with self.lock:
                self.total.merge(piece)
                self.window.merge(piece)

    def running(self) -> bool:
        return any(process.poll() is None for process in self.processes.values())

    def take_window(self) -> Tally:
        with self.lock:
            window, self.window = self.window, Tally()
        return window

    def finish(self) -> None:
        """Wait for the readers; a driver that failed or is stuck becomes an incident."""
        for family, process in self.processes.items():
            if process.poll() is None:
                process.kill()
                self.incidents.append(f"driver {family} was stuck past the end and was killed")
            process.wait()
        for reader in self.readers:
            reader.join(timeout=10)
        for family, process in self.processes.items():
            if process.returncode not in (0, -9):
                self.stderr[family].seek(0)
                tail = self.stderr[family].read()[-1500:]
                self.incidents.append(f"driver {family} exited with {process.returncode}: {tail}")
            self.stderr[family].close()


def soak(server: ServerProcess, args: argparse.Namespace, seconds: float) -> Verdict:
    report_secs = args.report_secs or (10.0 if seconds <= 600 else 30.0)
    assert server.process is not None
    memory = MemoryLog(seconds)
    drivers = Drivers(server, seconds, args.pause_ms, report_secs)
    started = last_row = time.monotonic()
    next_sample = started
    print(RUNNING_HEADER, flush=True)
    while drivers.running() and time.monotonic() < started + seconds + DRIVER_GRACE_SECS:
        now = time.monotonic()
        if now >= next_sample:
            memory.add(now - started, tree_rss_bytes(server.process.pid))
            next_sample += MEMORY_SAMPLE_SECS
        if now - last_row >= report_secs:
            print(
                running_row(
                    now - started, drivers.total, drivers.take_window(), now - last_row, memory.samples[-1][1]
                ),
                flush=True,
            )
            last_row = now
        if server.process.poll() is not None:
            drivers.incidents.append(f"the server exited with {server.process.returncode}")
            break
        time.sleep(0.2)
    drivers.finish()
    return Verdict(
        time.monotonic() - started, drivers.total, memory, args.memory_budget_mib, drivers.incidents
    )


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    seconds = args.seconds if args.seconds is not None else args.minutes * 60
    server_args = [
        "--model-repository",
        str(MODEL_REPOSITORY),
        "--model-control-mode",
        "explicit",
        "--max-request-bytes",
        str(BODY_LIMIT_BYTES),
    ]
    with ServerProcess(*server_args, timeout=120) as server:
        print(
            f"soak: {seconds:.0f} s against {server.http_url} (HTTP) and {server.grpc_url} (gRPC); "
            f"server log {server.log_path}",
            flush=True,
        )
        verdict = soak(server, args, seconds)
    verdict.log_lines = notable_lines(server.log())
    print("\n".join(summary_lines(verdict)), flush=True)
    if args.summary_json:
        args.summary_json.write_text(json.dumps(verdict.as_json(), indent=1))
    return 1 if verdict.failures() else 0
