"""modelplatform.testing.free_port: free ports, and under pytest-xdist only the worker's share of them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import deque

from modelplatform import testing
from modelplatform.testing import free_port

PORTS = "from modelplatform.testing import free_port; import json; print(json.dumps([free_port() for _ in range(30)]))"


def _ports_in(env: dict[str, str]) -> list[int]:
    done = subprocess.run([sys.executable, "-c", PORTS], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_free_port_can_be_bound():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # raises if something holds it


def test_a_worker_takes_only_its_share_of_ports(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")

    assert {port % 3 for port in _ports_in(dict(os.environ))} == {1}


def test_outside_xdist_every_port_may_come(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)

    assert len({port % 3 for port in _ports_in(dict(os.environ))}) > 1


def test_a_port_the_kernel_offers_again_is_not_handed_out_twice(monkeypatch):
    """A server takes several ports at once (HTTP, gRPC, metrics), and the kernel may offer a
    port it just offered: once a server got the same HTTP and gRPC port, and failed to bind."""
    offers = iter([41000, 41000, 41000, 41007])  # what bind(0) answers, one offer per socket

    class Kernel:  # the kernel's side of a socket: only its choice of port is scripted
        def __init__(self) -> None:
            self.port = next(offers)

        def __enter__(self) -> Kernel:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def bind(self, address: tuple[str, int]) -> None:
            return None

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.setattr(testing.socket, "socket", Kernel)
    # What this process handed out before (the kernel may have offered 41000 to another test).
    monkeypatch.setattr(testing, "_handed_out", deque(maxlen=256))
    assert [testing.free_port(), testing.free_port()] == [41000, 41007]
