"""Start-up reads each operator file once (issue 27): every TLS file and the API key file.

``platform serve`` runs in a child process with an audit hook (``sys.addaudithook``,
the interpreter's own ``open`` events) that counts the opens of the watched files
through a whole start-up, until the ports answer, and the drain that follows. The
certificate and key serve three listeners (HTTP, gRPC, and the metrics port, which
follows HTTP's); before, each was read twice per listener and the key file twice.
Re-reading on SIGHUP or a change is tested in test_tls_reload.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from modelplatform.testing import free_port

from .tls_certs import Authority

CHILD = r"""
import atexit, json, os, signal, socket, sys, threading, time

watched = json.loads(os.environ["WATCH"])
report = {"opened": {}, "served": False}


def count_opens(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if path in watched:
            report["opened"][path] = report["opened"].get(path, 0) + 1


def stop_once_serving(ports):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not report["served"]:
        try:
            for port in ports:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            report["served"] = True
        except OSError:
            time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGTERM)


sys.addaudithook(count_opens)
atexit.register(lambda: open(os.environ["REPORT"], "w").write(json.dumps(report)))
threading.Thread(target=stop_once_serving, args=(json.loads(os.environ["PORTS"]),), daemon=True).start()
from modelplatform.composition.cli import main

sys.argv = ["platform", "serve", *sys.argv[1:]]
main()
"""


def test_every_tls_file_and_the_key_file_is_read_once_at_start_up(tmp_path: Path) -> None:
    authority = Authority()
    ca, cert, key, keys = (tmp_path / name for name in ("ca.pem", "server.crt", "server.key", "keys.toml"))
    ca.write_bytes(authority.pem)
    authority.server().write(cert, key)
    keys.write_text(f'[[keys]]\nname = "a"\nsha256 = "{"a" * 64}"\ncategories = ["inference"]\n')
    (tmp_path / "repository").mkdir()
    http, grpc, metrics = free_port(), free_port(), free_port()
    args = [
        "--model-repository", str(tmp_path / "repository"), "--host", "127.0.0.1",
        "--http-port", str(http), "--grpc-port", str(grpc), "--metrics-port", str(metrics),
        "--http-use-ssl", "--http-server-cert", str(cert), "--http-server-key", str(key),
        "--grpc-use-ssl-mutual", "--grpc-server-cert", str(cert), "--grpc-server-key", str(key),
        "--grpc-root-cert", str(ca), "--api-keys-file", str(keys),
        "--drain-delay-secs", "0", "--exit-timeout-secs", "1",
    ]  # fmt: skip
    report = tmp_path / "report.json"
    env = {**os.environ, "WATCH": json.dumps([str(p) for p in (ca, cert, key, keys)]),
           "REPORT": str(report), "PORTS": json.dumps([http, grpc, metrics])}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(report.read_text())
    assert seen["served"], "the ports never answered"
    assert {Path(path).name: count for path, count in seen["opened"].items()} == {
        "ca.pem": 1, "server.crt": 1, "server.key": 1, "keys.toml": 1,
    }  # fmt: skip
