"""The shared-memory rows of `make bench`: identity_fp32 at 1, 16 and 64 MiB, with and without.

For each size and transport, in the same round and against the same server
(started with --allow-client-shm): perf_analyzer without shared memory
(HTTP binary, gRPC raw), then with `--shared-memory system` for the input and
the output (`--output-shared-memory-size`). A shared-memory row reports its
rate as a multiple of the row without it ("of ref."). The ceiling servers
cannot serve regions, so these rows have no ceiling. Windows are 1 s at
1 MiB, 4 s at 16 MiB and 8 s at 64 MiB (three each, averaged).

    make bench BENCH_ARGS="--only shm"
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from modelplatform.testing import ServerProcess

MiB = 1024 * 1024
SIZES = (1, 16, 64)
TRANSPORTS = ("http-binary", "grpc")
LABEL = "shm"


@dataclass(frozen=True)
class Pair:
    """One size over one transport: the label of the row without shared memory, and with it."""

    size: int
    transport: str

    @property
    def window_ms(self) -> int:
        """Longer windows for large tensors: a loaded machine may answer under one a second."""
        return {1: 1000, 16: 4000}.get(self.size, 8000)

    @property
    def plain_label(self) -> str:
        return f"identity_fp32 {self.size} MiB {self.transport} c1"

    @property
    def shm_label(self) -> str:
        transport = "http" if self.transport.startswith("http") else "grpc"
        return f"identity_fp32 {self.size} MiB {transport} shm c1"

    def arguments(self, url: str, shared: bool) -> list[str]:
        count = self.size * MiB // 4
        args = [
            "-m",
            "identity_fp32",
            "--concurrency-range",
            "1",
            "--shape",
            f"INPUT0:{count}",
            "--input-data",
            "zero",
            "-i",
            "grpc" if self.transport == "grpc" else "http",
            "-u",
            url,
        ]
        if shared:
            args += ["--shared-memory", "system", "--output-shared-memory-size", str(self.size * MiB)]
        return args


def chosen(only: str) -> list[Pair]:
    pairs = [Pair(size, transport) for size in SIZES for transport in TRANSPORTS]
    return [p for p in pairs if only in f"{p.plain_label} {p.shm_label} {LABEL}"]


#: run.measure_arguments: (label, perf_analyzer arguments, window_ms=) -> inferences per second.
Measure = Callable[..., float]


def measure_rows(
    pairs: list[Pair], measure: Measure, repository: Path, server_args: str, repeat: int
) -> list[dict]:
    """Rows for the table: each pair's plain rate and its shared-memory rate (median ratio)."""
    args = ("--model-repository", str(repository), "--allow-client-shm", *server_args.split())
    rows = []
    with ServerProcess(*args) as server:
        for pair in pairs:
            url = server.grpc_url if pair.transport == "grpc" else server.http_url
            rounds = [_round(pair, url, measure) for _ in range(max(1, repeat))]
            rows += _median_rows(pair, rounds)
    return rows


def _round(pair: Pair, url: str, measure: Measure) -> tuple[float, float]:
    plain = measure(pair.plain_label, pair.arguments(url, shared=False), window_ms=pair.window_ms)
    shared = measure(pair.shm_label, pair.arguments(url, shared=True), window_ms=pair.window_ms)
    ratio = f"{shared / plain:.2f}x" if plain else "-"
    print(
        f"measured {pair.shm_label}: {shared:.1f}/s ({ratio} of {plain:.1f}/s without)",
        file=sys.stderr,
        flush=True,
    )
    return plain, shared


def _median_rows(pair: Pair, rounds: list[tuple[float, float]]) -> list[dict]:
    middle = len(rounds) // 2
    plain = sorted(r[0] for r in rounds)[middle]
    shared = sorted(r[1] for r in rounds)[middle]
    ratios = sorted(r[1] / r[0] for r in rounds if r[0])
    ratio = ratios[len(ratios) // 2] if ratios else 0.0
    base = {"ceiling": None, "ceiling_server": "", "runs": len(rounds)}
    return [
        {**base, "scenario": pair.plain_label, "ours": plain},
        {**base, "scenario": pair.shm_label, "ours": shared, "of_reference": ratio},
    ]
