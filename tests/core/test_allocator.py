"""platform serve fixes glibc's mmap and trim thresholds and arena count unless the operator chose (allocator.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from modelplatform.base.allocator import SETTINGS, _glibc

pytestmark = pytest.mark.skipif(_glibc() is None, reason="needs glibc (mallopt)")

PROBE = """
import os
from modelplatform.base.allocator import tune_allocator
tune_allocator()
print(*(os.environ.get(name) for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_")))
"""


def probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_the_server_settings_are_applied_and_exported_for_workers():
    assert probe() == [str(value) for _, _, value in SETTINGS]


def test_an_operators_own_setting_is_kept():
    assert probe(MALLOC_ARENA_MAX="4") == [str(1 << 20), "4", str(64 << 20)]
    assert probe(MALLOC_MMAP_THRESHOLD_="65536") == ["65536", "2", str(64 << 20)]
    assert probe(MALLOC_TRIM_THRESHOLD_="131072") == [str(1 << 20), "2", "131072"]


def test_the_values_are_ones_glibc_accepts():
    libc = _glibc()
    for _, parameter, value in SETTINGS:
        assert libc.mallopt(parameter, value) == 1
