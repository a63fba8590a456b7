"""Where the event loop and grpc.aio's poller run (frontends/placement.py).

The rule (``Chooser``) is checked on call rates given to it; the pinning on a
real server, by reading its threads' CPUs from /proc.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from modelplatform.base.errors import InvalidArgument
from modelplatform.frontends import placement
from modelplatform.frontends.placement import FIRST_TRY_TICKS, QUICK_TRY_TICKS, Chooser, Pinning
from modelplatform.testing import ServerProcess, resolved_settings

from ..conftest import MODEL_REPOSITORY

ALLOWED = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs two CPUs")


def _run(chooser: Chooser, rate_of: dict[bool, float], ticks: int) -> list[bool]:
    """Placements chosen over ``ticks`` ticks of a steady load answering ``rate_of[together]``."""
    placements = []
    for _ in range(ticks):
        placements.append(chooser.step(rate_of[chooser.together]))
    return placements


def test_idle_stays_apart_and_tries_nothing():
    chooser = Chooser()
    assert _run(chooser, {True: 0.0, False: 0.0}, 50) == [False] * 50


def test_a_load_that_wants_two_cpus_tries_one_soon_and_stays_apart():
    chooser = Chooser()
    placements = _run(chooser, {True: 2_700.0, False: 3_600.0}, 1_000)
    assert placements[QUICK_TRY_TICKS] is True  # tried one CPU right after calls began
    assert placements[QUICK_TRY_TICKS + 2] is False  # and went back: it answered less
    assert placements.count(False) > 0.95 * len(placements)


def test_a_load_that_wants_one_cpu_moves_there_and_tries_apart_ever_more_rarely():
    chooser = Chooser()
    placements = _run(chooser, {True: 2_500.0, False: 1_750.0}, 1_500)
    assert placements[QUICK_TRY_TICKS + 2] is True  # tried one CPU and kept it
    assert placements[-1] is True
    later = range(QUICK_TRY_TICKS + 2, len(placements))
    tries = [i for i in later if not placements[i] and placements[i - 1]]
    assert len(tries) >= 4
    assert tries[0] - QUICK_TRY_TICKS <= 2 * QUICK_TRY_TICKS + 2  # the quick win checked at once
    gaps = [b - a for a, b in zip(tries[1:], tries[2:])]
    assert gaps == sorted(gaps) and gaps[-1] > gaps[0]  # each lost try waits longer
    assert tries[1] - tries[0] >= FIRST_TRY_TICKS


def test_a_quick_win_against_a_ramping_load_is_checked_and_taken_back():
    # c8 on two CPUs: apart answers 5,000/s, one CPU 3,800/s; the first ticks ramp up.
    chooser = Chooser()
    ramp = iter([1_000.0, 2_000.0, 3_000.0])  # the partial tick, then two slow whole ones
    placements = []
    for _ in range(200):
        steady = 3_800.0 if chooser.together else 5_000.0
        placements.append(chooser.step(next(ramp, steady)))
    assert placements[QUICK_TRY_TICKS + 2] is True  # one CPU beat the ramp-up ...
    assert placements.index(False, QUICK_TRY_TICKS + 2) <= 2 * QUICK_TRY_TICKS + 6  # ... not for long
    assert placements[-1] is False
    assert placements[20:].count(True) <= 2  # then one CPU is tried rarely (one try: two ticks)


def test_a_tie_keeps_one_cpu():
    chooser = Chooser()
    placements = _run(chooser, {True: 2_000.0, False: 2_040.0}, 100)
    assert placements[-1] is True


@needs_two_cpus
def test_moving_apart_frees_a_thread_started_while_pinned_at_once():
    """A thread started just before the move would otherwise keep the one CPU: no tick
    frees threads while the loop runs apart."""
    seen: dict[str, set[int]] = {}

    def loop_thread() -> None:  # stands for the event loop's thread
        pinning = Pinning(min(ALLOWED), frozenset(ALLOWED), (threading.get_native_id(),))
        pinning.place(True)
        release = threading.Event()
        started = threading.Event()
        ids: list[int] = []

        def stray() -> None:
            ids.append(threading.get_native_id())
            started.set()
            release.wait(10)

        child = threading.Thread(target=stray)
        child.start()
        started.wait(10)
        seen["inherited"] = os.sched_getaffinity(ids[0])
        pinning.place(False)
        seen["after"] = os.sched_getaffinity(ids[0])
        seen["loop"] = os.sched_getaffinity(0)
        release.set()
        child.join()

    worker = threading.Thread(target=loop_thread)
    worker.start()
    worker.join()
    assert seen["inherited"] == {min(ALLOWED)}
    assert seen["after"] == ALLOWED
    assert seen["loop"] == ALLOWED


@needs_two_cpus
def test_a_refused_move_leaves_the_loop_unpinned(monkeypatch: pytest.MonkeyPatch):
    """A thread the system will not move (here: one that is gone) turns the placement off."""

    class GonePoller:
        native_id = 2**30  # above any pid_max: sched_setaffinity answers ESRCH

    monkeypatch.setattr(placement, "poller_threads", lambda: [GonePoller()])
    seen: dict[str, object] = {}

    def loop_thread() -> None:
        seen["placement"] = placement.start_placement("together", lambda: 0)
        seen["cpus"] = os.sched_getaffinity(0)

    worker = threading.Thread(target=loop_thread)
    worker.start()
    worker.join()
    assert seen == {"placement": None, "cpus": ALLOWED}


def test_an_unknown_placement_is_refused_by_name():
    with pytest.raises(InvalidArgument, match="grpc_cpu_placement"):
        resolved_settings(grpc_cpu_placement="sometimes")


def _settled(pid: int, count: int) -> dict[int, set[int]]:
    """The threads on one CPU once ``count`` remain (a thread started while the loop was pinned
    keeps its one CPU until the next tick): returns the last look."""
    deadline = time.monotonic() + 5
    pinned = _single_cpu_threads(pid)
    while len(pinned) != count and time.monotonic() < deadline:
        time.sleep(0.05)
        pinned = _single_cpu_threads(pid)
    return pinned


def _single_cpu_threads(pid: int) -> dict[int, set[int]]:
    pinned = {}
    for name in os.listdir(f"/proc/{pid}/task"):
        try:
            cpus = os.sched_getaffinity(int(name))
        except OSError:
            continue
        if len(cpus) == 1:
            pinned[int(name)] = cpus
    return pinned


@pytest.fixture(scope="module")
def simple_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("placement")
    shutil.copytree(MODEL_REPOSITORY / "simple", root / "simple")
    return root


def _infer_over_http(server: ServerProcess, count: int) -> None:
    body = (
        b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":[' + b",".join([b"1"] * 16)
        + b']},{"name":"INPUT1","datatype":"INT32","shape":[1,16],"data":[' + b",".join([b"2"] * 16) + b"]}]}"
    )  # fmt: skip
    for _ in range(count):
        request = urllib.request.Request(f"http://{server.http_url}/v2/models/simple/infer", data=body)
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 200


@needs_two_cpus
def test_together_pins_the_loop_and_the_poller_to_one_cpu_and_frees_other_threads(simple_repository):
    args = ("--model-repository", str(simple_repository), "--grpc-cpu-placement", "together")
    with ServerProcess(*args) as server:
        assert server.process is not None
        pid = server.process.pid
        pinned = _settled(pid, 2)
        assert pid in pinned  # the main thread runs the event loop
        assert len(pinned) == 2, pinned  # the loop and grpc.aio's poller, on the same CPU
        assert len({cpu for cpus in pinned.values() for cpu in cpus}) == 1
        # The python model's first calls start its instance thread from the pinned loop.
        threads_before = len(os.listdir(f"/proc/{pid}/task"))
        _infer_over_http(server, 6)
        assert len(os.listdir(f"/proc/{pid}/task")) > threads_before
        assert set(_settled(pid, 2)) == set(pinned)  # the new thread got every CPU back
        assert "grpc_cpu_placement" in server.log()


@needs_two_cpus
def test_apart_pins_nothing(simple_repository):
    args = ("--model-repository", str(simple_repository), "--grpc-cpu-placement", "apart")
    with ServerProcess(*args) as server:
        assert server.process is not None
        _infer_over_http(server, 6)
        assert _single_cpu_threads(server.process.pid) == {}


@needs_two_cpus
def test_auto_pins_nothing_while_idle(simple_repository):
    with ServerProcess("--model-repository", str(simple_repository)) as server:
        assert server.process is not None
        assert _settled(server.process.pid, 0) == {}
        assert "grpc_cpu_placement" in server.log()
