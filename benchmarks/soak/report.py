"""What the soak prints: a running row per interval, then the summary and its verdict."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from soak.memory import MemoryLog, MiB, warmup_secs
from soak.outcomes import ERROR, GONE, KINDS, SERVER_ERROR, WRONG
from soak.tally import Tally

MAX_LOG_LINES = 20
RUNNING_HEADER = (
    f"{'elapsed':>7} {'requests':>9} {'req/s':>6} {'gone':>5} {'errors':>6} {'5xx':>4} {'wrong':>5} "
    f"{'p50 ms':>7} {'p99 ms':>7} {'rss MiB':>8}"
)


def clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def running_row(elapsed: float, total: Tally, window: Tally, window_secs: float, rss: int) -> str:
    """Cumulative counts; rate and percentiles of the last window only."""
    p50, _, p99 = window.percentiles()
    return (
        f"{clock(elapsed):>7} {total.total():>9} {window.total() / max(window_secs, 1e-9):>6.1f} "
        f"{total.total(GONE):>5} {total.total(ERROR):>6} {total.total(SERVER_ERROR):>4} "
        f"{total.total(WRONG):>5} {p50:>7.1f} {p99:>7.1f} {rss / MiB:>8.1f}"
    )


@dataclass
class Verdict:
    seconds: float
    tally: Tally
    memory: MemoryLog
    budget_mib: float
    incidents: list[str] = field(default_factory=list)  # drivers that failed, a server that died
    log_lines: Counter[str] = field(default_factory=Counter)  # serverlog.notable_lines

    def growth_mib(self) -> float | None:
        growth = self.memory.growth_after_warmup()
        return None if growth is None else growth / MiB

    def failures(self) -> list[str]:
        found = list(self.incidents)
        if n := self.tally.total(SERVER_ERROR):
            found.append(f"{n} answers were 5xx")
        if n := self.tally.total(WRONG):
            found.append(f"{n} answers had wrong values")
        growth = self.growth_mib()
        if self.memory.judged and growth is not None and growth > self.budget_mib:
            found.append(f"memory grew {growth:.1f} MiB after the warm-up (budget {self.budget_mib:g} MiB)")
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 1),
            "requests": self.tally.total(),
            "totals": {kind: self.tally.total(kind) for kind in KINDS},
            "dialects": self.tally.summary(),
            "memory": {
                "warmup_secs": warmup_secs(self.memory.run_secs),
                "judged": self.memory.judged,
                "growth_after_warmup_mib": self.growth_mib(),
                "per_minute_mib": [
                    [m, median / MiB, top / MiB] for m, median, top in self.memory.per_minute()
                ],
            },
            "server_log_notable": dict(self.log_lines.most_common(MAX_LOG_LINES)),
            "failures": self.failures(),
        }


def summary_lines(verdict: Verdict) -> list[str]:
    tally = verdict.tally
    lines = [
        f"== soak: {clock(verdict.seconds)}, {tally.total()} requests "
        f"({tally.total() / max(verdict.seconds, 1e-9):.1f}/s)",
        "",
    ]
    lines += _dialect_table(tally) + [""] + _unexpected(tally) + _memory(verdict) + _log(verdict.log_lines)
    failures = verdict.failures()
    lines.append("")
    lines.append("verdict: PASS" if not failures else "verdict: FAIL: " + "; ".join(failures))
    return lines


def _dialect_table(tally: Tally) -> list[str]:
    header = (
        f"{'dialect':<16} {'requests':>9} {'ok':>8} {'gone':>6} {'errors':>6} {'5xx':>4} {'wrong':>5} "
        f"{'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7}"
    )
    rows = [header]
    for dialect in [*tally.dialects(), None]:
        counts = tally.counts[dialect] if dialect else {k: tally.total(k) for k in KINDS}
        requests = tally.requests(dialect) if dialect else tally.total()
        p50, p90, p99 = tally.percentiles(dialect)
        rows.append(
            f"{dialect or 'all':<16} {requests:>9} {counts['ok']:>8} {counts[GONE]:>6} {counts[ERROR]:>6} "
            f"{counts[SERVER_ERROR]:>4} {counts[WRONG]:>5} {p50:>7.1f} {p90:>7.1f} {p99:>7.1f}"
        )
    return rows


def _unexpected(tally: Tally) -> list[str]:
    found = [
        f"  {dialect}: {count}x {example}"
        for dialect in tally.dialects()
        for example, count in tally.examples[dialect].most_common()
    ]
    if not found:
        return ["unexpected answers: none", ""]
    return ["unexpected answers (distinct, by dialect):", *found, ""]


def _memory(verdict: Verdict) -> list[str]:
    memory = verdict.memory
    lines = [
        "server memory (VmRSS of the server's process tree):",
        f"  {'minute':>6} {'median MiB':>10} {'max MiB':>8}",
    ]
    lines += [f"  {m:>6} {median / MiB:>10.1f} {top / MiB:>8.1f}" for m, median, top in memory.per_minute()]
    growth = verdict.growth_mib()
    warm = f"warm-up {warmup_secs(memory.run_secs):.0f} s"
    if growth is None:
        lines.append(f"  {warm}: no sample after it")
    elif not memory.judged:
        lines.append(
            f"  {warm}: growth after it {growth:+.1f} MiB (run too short to judge: under twice the warm-up)"
        )
    else:
        budget = f"budget {verdict.budget_mib:g} MiB"
        lines.append(f"  {warm}: growth of the per-minute median after it {growth:+.1f} MiB ({budget})")
    return lines


def _log(notable: Counter[str]) -> list[str]:
    if not notable:
        return ["", "server log: no warnings, errors or tracebacks"]
    lines = ["", f"server log: {sum(notable.values())} lines of warnings, errors or tracebacks:"]
    return lines + [f"  {count}x {line}" for line, count in notable.most_common(MAX_LOG_LINES)]
