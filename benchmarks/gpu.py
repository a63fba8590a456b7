"""`make bench-gpu`: the GPU path on a real GPU, each row beside its ceiling measured in the same run.

Three tables (docs/performance.md, "On a GPU"):

1. **A model that keeps the GPU busy**: R rounds of ``relu(x @ W)`` with one
   N x N float32 matrix (TorchScript, built here with torch; nothing
   downloaded), served by the pytorch backend on the GPU with dynamic
   batching (max_batch_size 64), driven by perf_analyzer over gRPC and HTTP
   binary at concurrency 1 to 64. The ceiling of each row is the same module
   called directly from Python at batch size c (host input copied to the
   device, output copied back, as the server must), in samples per second.
   GPU utilisation is sampled through NVML every 100 ms during each row.
2. **CUDA shared memory**: 16 and 64 MiB float32 tensors through an
   identity model on the GPU, over gRPC with ``--shared-memory cuda`` (input
   and output stay in device memory) against gRPC carrying the bytes.
3. **Scaling with cores**: ``simple`` over HTTP JSON and gRPC at
   concurrency 64 with ``--workers 1, 2, 4, 8``; efficiency per doubling is
   the rate over twice the rate at half the workers.

    make bench-gpu
    make bench-gpu BENCH_ARGS="--rounds 256 --size 4096 --only busy"

Needs torch with CUDA, pycuda (for CUDA shared memory), nvidia-ml-py and
perf_analyzer (make perf-analyzer); ``scripts/gpu/device_run.sh`` runs it on
the lent machine. Writes the tables as JSON when ``--json`` names a file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from textwrap import dedent

from run import measure_arguments

from modelplatform.testing import ServerProcess

MiB = 1024 * 1024
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
WORKERS = (1, 2, 4, 8)
ROOT = Path(__file__).resolve().parent.parent


def busy_module(rounds: int, size: int) -> object:
    import torch

    class Busy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rounds = rounds
            generator = torch.Generator().manual_seed(0)
            self.weight = torch.nn.Parameter(torch.randn(size, size, generator=generator) / size**0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(self.rounds):
                x = torch.relu(x @ self.weight) * 1.4
            return x

    return torch.jit.script(Busy().eval())


class Identity:
    """Built lazily: torch is needed only when the bench runs."""

    @staticmethod
    def module() -> object:
        import torch

        class Copy(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x.clone()

        return torch.jit.script(Copy())


def write_repository(folder: Path, rounds: int, size: int, instances: int = 2) -> Path:
    import torch

    busy = folder / "gpu_busy"
    (busy / "1").mkdir(parents=True)
    torch.jit.save(busy_module(rounds, size), str(busy / "1" / "model.pt"))
    (busy / "config.pbtxt").write_text(
        dedent(
            f"""
            name: "gpu_busy"
            backend: "pytorch"
            max_batch_size: 64
            input [ {{ name: "INPUT__0" data_type: TYPE_FP32 dims: [ {size} ] }} ]
            output [ {{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ {size} ] }} ]
            dynamic_batching {{ max_queue_delay_microseconds: 200 }}
            instance_group [ {{ kind: KIND_GPU count: {instances} gpus: [ 0 ] }} ]
            """
        )
    )
    identity = folder / "gpu_identity"
    (identity / "1").mkdir(parents=True)
    torch.jit.save(Identity.module(), str(identity / "1" / "model.pt"))
    (identity / "config.pbtxt").write_text(
        dedent(
            """
            name: "gpu_identity"
            backend: "pytorch"
            input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
            output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
            instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]
            """
        )
    )
    return folder


def ceiling(rounds: int, size: int, batch: int, seconds: float = 1.5) -> float:
    """Samples per second of the bare module at ``batch``: host in, device compute, host out."""
    import numpy as np
    import torch

    module = busy_module(rounds, size).to("cuda:0")  # type: ignore[attr-defined]  # a ScriptModule
    host = np.random.default_rng(0).standard_normal((batch, size), dtype=np.float32)
    with torch.inference_mode():
        for _ in range(3):
            module(torch.from_numpy(host).to("cuda:0")).cpu()
        torch.cuda.synchronize()
        calls, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            module(torch.from_numpy(host).to("cuda:0")).cpu().numpy()
            calls += 1
        elapsed = time.perf_counter() - started
    return calls * batch / elapsed


class Utilisation:
    """GPU 0's utilisation through NVML, sampled every 100 ms while a row runs."""

    def __init__(self) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    @contextmanager
    def sampled(self) -> Iterator[list[int]]:
        samples: list[int] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.1):
                samples.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield samples
        finally:
            stop.set()
            thread.join()


def perf(model: str, protocol: str, url: str, concurrency: int, *extra: str) -> float:
    arguments = ["-m", model, "-i", protocol, "-u", url, "--concurrency-range", str(concurrency), *extra]
    return measure_arguments(f"{model} {protocol} c{concurrency}", arguments, window_ms=1000)


def model_statistics(server: ServerProcess, model: str) -> dict:
    """The statistics extension's counters for ``model`` (Triton's shape)."""
    import urllib.request

    with urllib.request.urlopen(f"http://{server.http_url}/v2/models/{model}/stats", timeout=10) as answer:
        return dict(json.load(answer)["model_stats"][0])


def where_the_time_went(before: dict, after: dict) -> dict:
    """Mean batch the server ran, and per execution: queue wait and the three compute phases (ms)."""
    executions = after["execution_count"] - before["execution_count"]
    inferences = after["inference_count"] - before["inference_count"]
    requests = after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"]

    def ms(phase: str, per: int) -> float:
        spent = after["inference_stats"][phase]["ns"] - before["inference_stats"][phase]["ns"]
        return spent / max(per, 1) / 1e6

    return {
        "mean_batch": inferences / max(executions, 1),
        "queue_ms_per_request": ms("queue", requests),
        "compute_input_ms": ms("compute_input", executions),
        "compute_infer_ms": ms("compute_infer", executions),
        "compute_output_ms": ms("compute_output", executions),
    }


def busy_rows(server: ServerProcess, args: argparse.Namespace, gpu: Utilisation) -> list[dict]:
    rows = []
    for concurrency in args.concurrency or CONCURRENCY:
        bare = ceiling(args.rounds, args.size, concurrency)
        for protocol, url in (("grpc", server.grpc_url), ("http", server.http_url)):
            before = model_statistics(server, "gpu_busy")
            with gpu.sampled() as samples:
                rate = perf("gpu_busy", protocol, url, concurrency, "--input-data", "random")
            rows.append(
                {
                    "row": f"gpu_busy {'gRPC' if protocol == 'grpc' else 'HTTP binary'} c{concurrency}",
                    "served": rate,
                    "bare": bare,
                    "of_bare": rate / bare if bare else 0.0,
                    "gpu_util": statistics.fmean(samples) if samples else 0.0,
                    **where_the_time_went(before, model_statistics(server, "gpu_busy")),
                }
            )
            print_row(rows[-1])
    return rows


def shm_rows(server: ServerProcess) -> list[dict]:
    rows = []
    for size in (16, 64):
        elements = size * MiB // 4
        shape = ["--shape", f"INPUT__0:{elements}"]
        plain = perf("gpu_identity", "grpc", server.grpc_url, 1, *shape)
        cuda = perf(
            "gpu_identity", "grpc", server.grpc_url, 1, *shape,
            "--shared-memory", "cuda", "--output-shared-memory-size", str(size * MiB),
        )  # fmt: skip
        rows.append({"row": f"gpu_identity {size} MiB gRPC c1", "plain": plain, "cuda_shm": cuda})
        print(
            f"{rows[-1]['row']:<34} gRPC {plain:8.1f}/s   CUDA shm {cuda:8.1f}/s   x{cuda / max(plain, 1e-9):.2f}"
        )
    return rows


def scaling_rows() -> list[dict]:
    rows = []
    repository = str(ROOT / "model_repository")
    for workers in WORKERS:
        args = ("--model-repository", repository, "--load-model", "simple", "--workers", str(workers))
        with ServerProcess(*args, timeout=120) as server:
            _wait_every_worker_ready(server)
            for label, protocol, url, extra in (
                ("HTTP JSON", "http", server.http_url, ("--input-tensor-format", "json", "--output-tensor-format", "json")),
                ("gRPC", "grpc", server.grpc_url, ()),
            ):  # fmt: skip
                rate = perf("simple", protocol, url, 64, *extra)
                rows.append({"row": f"simple {label} c64", "workers": workers, "rate": rate})
                print(f"simple {label:<9} c64 workers {workers}: {rate:10.1f}/s")
    for row in rows:
        half = next((r for r in rows if r["row"] == row["row"] and r["workers"] * 2 == row["workers"]), None)
        row["efficiency"] = row["rate"] / (2 * half["rate"]) if half and half["rate"] else None
    return rows


def _wait_every_worker_ready(server: ServerProcess, limit_s: float = 90) -> None:
    """The workers share one port and load their models on their own: a request may reach any of
    them, so wait until readiness checks have answered 200 without a miss for 3 s (bounded)."""
    import urllib.error
    import urllib.request

    url = f"http://{server.http_url}/v2/models/simple/ready"
    since, deadline = time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() - since < 3 and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status != 200:
                    since = time.monotonic()
        except (urllib.error.URLError, OSError):
            since = time.monotonic()
        time.sleep(0.01)


def print_row(row: dict) -> None:
    print(
        f"{row['row']:<28} {row['served']:10.1f}/s  bare {row['bare']:10.1f}/s  "
        f"of bare {row['of_bare']:.2f}  GPU {row['gpu_util']:5.1f}%  batch {row['mean_batch']:.1f}  "
        f"queue {row['queue_ms_per_request']:.2f} ms  in/infer/out {row['compute_input_ms']:.2f}/"
        f"{row['compute_infer_ms']:.2f}/{row['compute_output_ms']:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=256, help="matrix products per forward pass")
    parser.add_argument("--size", type=int, default=4096, help="the matrix is size x size float32")
    parser.add_argument("--only", choices=("busy", "shm", "scaling"), action="append")
    parser.add_argument("--concurrency", type=int, action="append", help="busy rows: these only")
    parser.add_argument("--instances", type=int, default=2, help="gpu_busy's KIND_GPU instances")
    parser.add_argument("--json", type=Path, help="also write every row here")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/modelplatform-bench-gpu"))
    args = parser.parse_args()
    chosen = set(args.only or ("busy", "shm", "scaling"))
    results: dict[str, list[dict]] = {}
    if chosen & {"busy", "shm"}:
        repository = write_repository(_fresh(args.folder), args.rounds, args.size, args.instances)
        serve = ("--model-repository", str(repository), "--allow-client-shm")
        with ServerProcess(*serve, timeout=180) as server:
            if "busy" in chosen:
                results["busy"] = busy_rows(server, args, Utilisation())
            if "shm" in chosen:
                results["shm"] = shm_rows(server)
    if "scaling" in chosen:
        results["scaling"] = scaling_rows()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print_tables(results)


def _fresh(folder: Path) -> Path:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def print_tables(results: dict[str, list[dict]]) -> None:
    print(
        "\n| row | served /s | bare module /s | of bare | GPU util | mean batch | queue ms | "
        "infer ms per execution |\n|---|---|---|---|---|---|---|---|"
    )
    for row in results.get("busy", []):
        print(
            f"| {row['row']} | {row['served']:,.0f} | {row['bare']:,.0f} | {row['of_bare']:.2f} | "
            f"{row['gpu_util']:.0f}% | {row['mean_batch']:.1f} | {row['queue_ms_per_request']:.2f} | "
            f"{row['compute_infer_ms']:.2f} |"
        )
    print("\n| row | gRPC /s | CUDA shm /s | ratio |\n|---|---|---|---|")
    for row in results.get("shm", []):
        print(
            f"| {row['row']} | {row['plain']:.1f} | {row['cuda_shm']:.1f} | {row['cuda_shm'] / max(row['plain'], 1e-9):.2f} |"
        )
    print("\n| row | workers | rate /s | efficiency per doubling |\n|---|---|---|---|")
    for row in results.get("scaling", []):
        efficiency = "" if row["efficiency"] is None else f"{row['efficiency']:.2f}"
        print(f"| {row['row']} | {row['workers']} | {row['rate']:,.0f} | {efficiency} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
