"""The server's resident memory over the run: VmRSS of its process and its descendants.

The server may run children (python process instances, ``--workers``), so a
sample sums the whole process tree, read from /proc (Linux only).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

MiB = 1024 * 1024
#: Warm-up: the first two minutes or 10 % of the run, whichever is longer.
WARMUP_FLOOR_SECS = 120.0
WARMUP_FRACTION = 0.10


def tree_rss_bytes(root_pid: int) -> int:
    """VmRSS of ``root_pid`` and every descendant alive now (0 for one that vanished meanwhile)."""
    return sum(_rss_bytes(pid) for pid in _descendants(root_pid) | {root_pid})


def _descendants(root_pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(stat.parent.name))
    found: set[int] = set()
    pending = [root_pid]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def warmup_secs(run_secs: float) -> float:
    return max(WARMUP_FLOOR_SECS, WARMUP_FRACTION * run_secs)


@dataclass
class MemoryLog:
    """Samples of (seconds since start, bytes); judges growth after the warm-up."""

    run_secs: float
    samples: list[tuple[float, int]] = field(default_factory=list)

    def add(self, elapsed: float, rss: int) -> None:
        self.samples.append((elapsed, rss))

    @property
    def judged(self) -> bool:
        """Only a run at least twice its warm-up is long enough to judge memory."""
        return self.run_secs >= 2 * warmup_secs(self.run_secs)

    def growth_after_warmup(self) -> float | None:
        """Largest per-minute median RSS after the warm-up minus the median of its last minute, in bytes.

        Medians, because a sample can land while a few MiB-sized requests are in
        flight together; that is a transient, not growth. None: no sample after it.
        """
        warm = warmup_secs(self.run_secs)
        before = [rss for elapsed, rss in self.samples if warm - 60 <= elapsed < warm]
        after: dict[int, list[int]] = {}
        for elapsed, rss in self.samples:
            if elapsed >= warm:
                after.setdefault(int((elapsed - warm) // 60), []).append(rss)
        if not before or not after:
            return None
        return float(max(statistics.median(v) for v in after.values()) - statistics.median(before))

    def per_minute(self) -> list[tuple[int, float, int]]:
        """(minute, median sample in it, largest sample in it) for every minute with a sample."""
        minutes: dict[int, list[int]] = {}
        for elapsed, rss in self.samples:
            minutes.setdefault(int(elapsed // 60), []).append(rss)
        return [(m, statistics.median(values), max(values)) for m, values in sorted(minutes.items())]
