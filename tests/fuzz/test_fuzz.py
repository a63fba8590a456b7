"""The fuzz harness (fuzz/) in `make test`: every crasher it found stays fixed, and a bounded run finds nothing.

The regression inputs in tests/fuzz/corpus/<target>/ are in the target's
input format (fuzz/targets.py); the .txt beside each says what it once did.
`make fuzz` runs the same targets for longer (docs/reliability.md, "Fuzzing").
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzz.__main__ import TARGET_NAMES
from fuzz.findings import kind_of
from fuzz.server import FuzzServer
from fuzz.targets import TARGETS
from fuzz.worker import REGRESSIONS

ROOT = Path(__file__).resolve().parents[2]
REGRESSION_INPUTS = sorted(p for p in REGRESSIONS.glob("*/*") if p.suffix != ".txt")
#: Seconds per target of the bounded run: ten targets and their start-up stay under a minute.
BOUNDED_SECONDS = 3


@pytest.fixture(scope="module")
def server() -> Iterator[FuzzServer]:
    running = FuzzServer(quiet=False)  # logging stays as the other tests expect it
    yield running
    running.close()


def test_targets_are_listed_where_the_runner_reads_them() -> None:
    assert set(TARGET_NAMES) == set(TARGETS)


@pytest.mark.parametrize("path", REGRESSION_INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_crasher_found_stays_fixed(server: FuzzServer, path: Path) -> None:
    outcome = server.run(TARGETS[path.parent.name].run(server, path.read_bytes()))
    assert kind_of(outcome) is None, (outcome, path.with_suffix(".txt").read_text())
    assert outcome.status in (400, "INVALID_ARGUMENT"), outcome


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_seeds_reach_an_answer(server: FuzzServer, name: str) -> None:
    """Seeds are valid requests: at least one per target is answered with success, none is a finding."""
    outcomes = [server.run(TARGETS[name].run(server, seed)) for seed in TARGETS[name].seeds()]
    assert [o for o in outcomes if kind_of(o)] == []
    assert any(o.status in (200, "OK") for o in outcomes), outcomes


def test_a_bounded_run_of_every_target_finds_nothing(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "fuzz", "--seconds", str(BOUNDED_SECONDS), "--findings", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240, env={**os.environ})
    print(done.stdout, done.stderr[-2000:])
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    rows = [line.split() for line in done.stdout.splitlines()[1 : 1 + len(TARGET_NAMES)]]
    assert sorted(row[0] for row in rows) == sorted(TARGET_NAMES)
    assert all(int(row[2].replace(",", "")) > 0 for row in rows)
