"""modelplatform.testing.free_port: free ports, and under pytest-xdist only the worker's share of them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import deque

import pytest

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


@pytest.mark.parametrize(("worker", "count"), [("gw0", 2), ("gw1", 2), ("gw1", 3)])
def test_a_worker_takes_only_its_share_of_ports(monkeypatch, worker: str, count: int):
    """gw0 of 2 is `make test`'s own shape: Linux offers bind(0) odd ports only, and it once
    got none of its even share."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(count))

    ports = _ports_in(dict(os.environ))
    assert {port % count for port in ports} == {int(worker[2:])}
    assert len(set(ports)) == len(ports)


def test_ports_lie_below_the_kernels_range_for_outgoing_connections():
    assert all(20000 <= port < 32768 for port in _ports_in(dict(os.environ)))


def test_outside_xdist_every_port_may_come(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)

    assert len({port % 3 for port in _ports_in(dict(os.environ))}) > 1


def test_a_port_drawn_again_is_not_handed_out_twice(monkeypatch):
    """A server takes several ports at once (HTTP, gRPC, metrics), and a draw may repeat:
    once a server got the same HTTP and gRPC port, and failed to bind."""
    first, second = _unheld_ports(2)
    draws = iter([first, first, first, second])
    monkeypatch.setattr(testing._RANDOM, "randrange", lambda start, stop: next(draws))
    _outside_xdist(monkeypatch)

    assert [testing.free_port(), testing.free_port()] == [first, second]


def test_a_port_something_holds_is_not_handed_out(monkeypatch):
    held, free = _unheld_ports(2)
    draws = iter([held, free])
    monkeypatch.setattr(testing._RANDOM, "randrange", lambda start, stop: next(draws))
    _outside_xdist(monkeypatch)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", held))
        holder.listen()
        assert testing.free_port() == free


def _outside_xdist(monkeypatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    # What this process handed out before must not decide these tests.
    monkeypatch.setattr(testing, "_handed_out", deque(maxlen=256))


def _unheld_ports(count: int) -> list[int]:
    """Ports of free_port's range that nothing holds now (another test's may come and go)."""
    found: list[int] = []
    for port in range(31000, 32768):
        if len(found) == count:
            break
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
    return found
