"""`simple` over gRPC: what a second event loop or a second process buys a grpc.aio server.

Every call of a grpc.aio server runs through its one event-loop thread. This
measures whether a server could get past that thread by adding loops, with the
two yardsticks of the peer rows (canned.py: ``grpc-floor``, grpc.aio carrying
the bytes and nothing else; ``grpc-required``, the model and the work a server
must keep), each served three ways on one port:
- one loop in one process;
- two loops in one process (two grpc.aio servers, one thread each, SO_REUSEPORT);
- two processes of one loop each (SO_REUSEPORT, as ``--workers 2``).
Triton (when `make triton-peer` installed it) and our own server run beside
them. perf_analyzer measures every server once per round, the order reversed
every other round; the table shows median rates and the medians of the
per-round ratios. Only rows of the same run compare.

    python benchmarks/grpc_loops.py --rounds 4 --concurrency 8
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peer  # noqa: E402 - the peer models and Triton, beside this file
import run  # noqa: E402 - perf_analyzer and the canned capture, beside this file

from modelplatform.testing import ServerProcess, free_port  # noqa: E402 - after the path

#: Each way of serving one port: (how many processes, how many loops in each).
SHAPES = {"one loop": (1, 1), "two loops, one process": (1, 2), "two processes": (2, 1)}
KINDS = {"floor": "grpc-floor", "required": "grpc-required"}


class SharedPort:
    """``processes`` canned.py servers of ``kind``, ``loops`` event loops each, on one port."""

    def __init__(self, kind: str, folder: Path, processes: int, loops: int) -> None:
        self.port = free_port()
        self.servers = [run.Canned(kind, folder, self.port, loops) for _ in range(processes)]

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def measure_round(urls: dict[str, str], concurrency: int, reverse: bool) -> dict[str, float]:
    scenario = run.Scenario("grpc loops", "simple", "grpc", concurrency)
    order = list(urls)[::-1] if reverse else list(urls)
    rates = {name: run.measure_arguments(name, scenario.arguments("", urls[name])) for name in order}
    print(", ".join(f"{name} {rates[name]:.0f}/s" for name in urls), file=sys.stderr, flush=True)
    return rates


def print_table(rounds: list[dict[str, float]]) -> None:
    def ratio(name: str, reference: str) -> str:
        values = [r[name] / r[reference] for r in rounds if r.get(reference)]
        return f"{statistics.median(values):.2f}" if values else "-"

    print("| server | rate /s | of Triton | of the same yardstick on one loop |")
    print("|---|---|---|---|")
    for name in rounds[0]:
        kind = name.partition(",")[0]
        same = f"{kind}, one loop"
        of_triton = ratio(name, "triton") if "triton" in rounds[0] else "-"
        of_one = ratio(name, same) if same in rounds[0] and name != same else "-"
        print(f"| {name} | {statistics.median(r[name] for r in rounds):,.0f} | {of_triton} | {of_one} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="grpc-loops-"))
    servers: list[peer.TritonPeer | SharedPort] = []
    with ServerProcess("--model-repository", str(peer.PEER_MODELS), "--load-model", "simple") as ours:
        run.capture(ours, {"simple"}, folder)
        urls = {"ours": ours.grpc_url}
        try:
            tree = peer.triton_tree()
            if tree is not None:
                triton = peer.TritonPeer(tree, peer.PEER_MODELS)
                servers.append(triton)
                urls["triton"] = triton.grpc_url
            for name, kind in KINDS.items():
                for shape, (processes, loops) in SHAPES.items():
                    shared = SharedPort(kind, folder, processes, loops)
                    servers.append(shared)
                    urls[f"{name}, {shape}"] = f"127.0.0.1:{shared.port}"
            rounds = [measure_round(urls, args.concurrency, index % 2 == 1) for index in range(args.rounds)]
        finally:
            for server in servers:
                server.stop()
    print_table(rounds)


if __name__ == "__main__":
    main()
