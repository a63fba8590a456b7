"""`simple` over gRPC at c1 and c8: two trees side by side, plain port, --single-port and TLS.

Starts, for the tree this file is in and for ``--before`` (another checkout,
e.g. ``git worktree add "$OLD_TREE" <commit>``), a server on each listener:
the plain gRPC port, ``--single-port`` (gRPC sorted from HTTP/1.1 on the HTTP
port) and the gRPC port with TLS (certificates made for the run); plus the
bare grpc.aio echo server (canned.py ``grpc``) with grpc's default experiments
and with this tree's (composition/grpc_experiments.py). Each tree's server runs
its own code (PYTHONPATH) on the bundled repository. perf_analyzer measures
them one after the other, round after round (the order reversed every other
round); the table shows each row's median, its spread and the median p50.
On a shared machine only rows of the same run compare.

    python benchmarks/grpc_variants.py --before "$OLD_TREE" --rounds 4
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PERF_ANALYZER = ROOT / ".venv" / "perf_analyzer" / "perf_analyzer"
sys.path.insert(0, str(HERE))

import run  # noqa: E402 - the bench's certificates and canned capture, beside this file

from modelplatform.testing import ServerProcess, free_port  # noqa: E402 - after run's path

#: What the server sets before importing grpc (core/modelplatform/composition/grpc_experiments.py),
#: given to the bare server too so both sides of a row run with the same grpc core.
GRPC_EXPERIMENTS = "-event_engine_listener"


@dataclass
class Variant:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    url: str
    tls: bool


def python_path(tree: Path) -> str:
    return ":".join([str(tree / "core"), *sorted(glob.glob(f"{tree}/plugins/*/"))])


def start_server(
    name: str, tree: Path, mode: str, certificates: tuple[Path, Path, Path], folder: Path, extra: list[str]
) -> Variant:
    http, grpc_port, metrics = free_port(), free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": python_path(tree), "MODELPLATFORM_DRAIN_DELAY_SECS": "0"}
    env["MODELPLATFORM_METRICS_PORT"] = str(metrics)
    env.pop("GRPC_EXPERIMENTS", None)  # each tree chooses its own
    command = [
        sys.executable, "-m", "modelplatform", "serve", "--host", "127.0.0.1", "--http-port", str(http),
        "--grpc-port", str(grpc_port), "--model-repository", str(tree / "model_repository"), *extra,
    ]  # fmt: skip
    if mode == "single-port":
        command.append("--single-port")
    if mode == "tls":
        _, cert, key = certificates
        command += ["--grpc-use-ssl", "--grpc-server-cert", str(cert), "--grpc-server-key", str(key)]
    log = folder / f"{name}.log"
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    host = "localhost" if mode == "tls" else "127.0.0.1"
    return Variant(
        name, process, log, f"{host}:{http if mode == 'single-port' else grpc_port}", mode == "tls"
    )


def start_bare(name: str, experiments: str | None, canned: Path, folder: Path) -> Variant:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    if experiments:
        env["GRPC_EXPERIMENTS"] = experiments
    log = folder / f"{name}.log"
    command = [sys.executable, str(HERE / "canned.py"), "grpc", str(port), str(canned)]
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    return Variant(name, process, log, f"127.0.0.1:{port}", False)


def wait_started(variant: Variant) -> None:
    for _ in range(1200):
        text = variant.log.read_text(errors="replace")
        if "server_started" in text or "canned_started" in text:
            return
        if variant.process.poll() is not None:
            raise RuntimeError(f"{variant.name} exited:\n{text[-3000:]}")
        time.sleep(0.1)
    raise TimeoutError(f"{variant.name} did not start")


def measure(variant: Variant, concurrency: int, ca: Path) -> tuple[float, float]:
    """(inferences per second, p50 in ms); (0, 0) when perf_analyzer failed."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as report:
        command = [
            str(PERF_ANALYZER), "-m", "simple", "-i", "grpc", "-u", variant.url,
            "--concurrency-range", str(concurrency), "--input-data", "zero", "--measurement-interval", "1000",
            "--stability-percentage", "999", "--max-trials", "3", "-f", report.name,
        ]  # fmt: skip
        if variant.tls:
            command += ["--ssl-grpc-use-ssl", "true", "--ssl-grpc-root-certifications-file", str(ca)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        rows = list(csv.DictReader(open(report.name))) if result.returncode == 0 else []
    if not rows:
        sys.stderr.write(
            f"{variant.name}: perf_analyzer failed:\n{result.stdout[-1500:]}{result.stderr[-1500:]}\n"
        )
        return 0.0, 0.0
    return float(rows[0]["Inferences/Second"]), float(rows[0]["p50 latency"]) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (its tree root)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument(
        "--server-args",
        default="",
        help="more `platform serve` arguments for both trees' servers "
        "(e.g. --disable-plugin NAME for plugins the older tree does not have)",
    )
    parser.add_argument(
        "--after-args",
        default="",
        help="more arguments for this tree's servers only (with --before . : one tree, two settings)",
    )
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="grpc-variants-"))
    certificates = run.make_certificates(folder)
    canned = folder / "canned"
    canned.mkdir()
    with ServerProcess("--model-repository", str(ROOT / "model_repository")) as server:
        run.capture(server, {"simple"}, canned)
    trees = (("before", arguments.before.resolve(), ""), ("after", ROOT, arguments.after_args))
    variants = [
        start_server(
            f"{tree_name} {mode}",
            tree,
            mode,
            certificates,
            folder,
            (arguments.server_args + " " + more).split(),
        )
        for mode in ("plain", "single-port", "tls")
        for tree_name, tree, more in trees
    ]
    variants += [
        start_bare("bare aio, grpc defaults", None, canned, folder),
        start_bare("bare aio, GRPC_EXPERIMENTS", GRPC_EXPERIMENTS, canned, folder),
    ]
    concurrencies = [int(c) for c in arguments.concurrency.split(",")]
    results: dict[tuple[str, int], list[tuple[float, float]]] = {
        (v.name, c): [] for v in variants for c in concurrencies
    }
    try:
        for variant in variants:
            wait_started(variant)
        for round_index in range(arguments.rounds):
            load = Path("/proc/loadavg").read_text().split()[0]
            order = variants if round_index % 2 == 0 else variants[::-1]
            for concurrency in concurrencies:
                for variant in order:
                    results[(variant.name, concurrency)].append(
                        measure(variant, concurrency, certificates[0])
                    )
            print(f"round {round_index + 1}/{arguments.rounds} done (load average {load})", flush=True)
    finally:
        for variant in variants:
            variant.process.terminate()
        for variant in variants:
            variant.process.wait(timeout=30)
    print("| row | /s (median) | min-max | p50 ms |\n|---|---|---|---|")
    for concurrency in concurrencies:
        for variant in variants:
            measured = results[(variant.name, concurrency)]
            rates = [rate for rate, _ in measured]
            p50 = statistics.median(p for _, p in measured)
            print(
                f"| {variant.name} c{concurrency} | {statistics.median(rates):,.0f} | "
                f"{min(rates):,.0f}-{max(rates):,.0f} | {p50:.3f} |"
            )


if __name__ == "__main__":
    main()
