"""The "peer" rows: our server beside Triton's own and a bare grpc.aio server, in one run.

Triton Inference Server's binary ships in the ``nvidia-pytriton`` wheel
(``make triton-peer`` installs it into .venv/triton-peer; /work/shared's
triton-peer.md has the facts that make it run on a CPU machine). Both
servers load the same python-backend models (benchmarks/peer_models: the
``TritonPythonModel`` API, which our python plugin serves too), and the
same perf_analyzer measures ours, Triton, the bare grpc.aio echo server
(canned.py ``grpc``: protobuf both ways, as a plain Python servicer) and
grpc.aio's floor (canned.py ``grpc-floor``: bytes in, canned bytes out, no
work in Python; no server built on grpcio can beat it) and grpc.aio running the
peer model's own ``model.py`` with nothing around it (canned.py ``grpc-model``,
model_only.py: no grpcio server that runs this model can beat it) and the same
with the work a server must keep (canned.py ``grpc-required``, required_only.py:
validation, statistics, the request scope, the deadline, error statuses) one
after the other, round after round; the rows show medians and the median
per-round ratios.
Without the peer installed its column is left out, with a note.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from modelplatform.testing import ServerProcess, free_port

HERE = Path(__file__).resolve().parent
PEER_MODELS = HERE / "peer_models"
#: Where `make triton-peer` installs nvidia-pytriton (TRITON_PEER_VENV overrides it).
PEER_VENV = Path(os.environ.get("TRITON_PEER_VENV", HERE.parent / ".venv" / "triton-peer"))
MiB = 1024 * 1024
#: The grpc.aio servers measured beside ours and Triton: column name -> canned.py kind.
YARDSTICKS = {"bare": "grpc", "floor": "grpc-floor", "model": "grpc-model", "required": "grpc-required"}


@dataclass(frozen=True)
class PeerScenario:
    label: str
    model: str
    concurrency: int
    shape: str = ""


def peer_scenarios() -> list[PeerScenario]:
    return [
        PeerScenario("peer simple grpc c1", "simple", 1),
        PeerScenario("peer simple grpc c8", "simple", 8),
        PeerScenario("peer identity_fp32 1 MiB grpc c1", "identity_fp32", 1, f"INPUT0:{MiB // 4}"),
        PeerScenario("peer identity_fp32 16 MiB grpc c1", "identity_fp32", 1, f"INPUT0:{16 * MiB // 4}"),
    ]


def triton_tree() -> Path | None:
    """The tritonserver tree inside the peer venv, if installed."""
    for site in (PEER_VENV / "lib").glob("python3*/site-packages"):
        tree = site / "pytriton" / "tritonserver"
        if (tree / "bin" / "tritonserver").exists():
            return tree
    return None


class TritonPeer:
    """tritonserver on free ports, serving ``repository`` (python backend), until stopped."""

    def __init__(self, tree: Path, repository: Path) -> None:
        self.runtime = Path(tempfile.mkdtemp(prefix="triton-peer-"))
        for part in ("bin", "backends", "caches"):
            shutil.copytree(tree / part, self.runtime / part, symlinks=True)
        minor = _venv_python_minor()
        stub = tree / "python_backend_stubs" / minor / "triton_python_backend_stub"
        shutil.copy2(stub, self.runtime / "backends" / "python" / "triton_python_backend_stub")
        self.http_port, self.grpc_port, metrics = free_port(), free_port(), free_port()
        command = [
            str(self.runtime / "bin" / "tritonserver"),
            f"--model-repository={repository}",
            f"--backend-directory={self.runtime / 'backends'}",
            f"--cache-directory={self.runtime / 'caches'}",
            f"--http-port={self.http_port}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-port={metrics}",
            "--allow-gpu-metrics=false",
            "--log-verbose=0",
        ]
        self.log = open(self.runtime / "tritonserver.log", "w")  # closed in stop()
        self.process = subprocess.Popen(
            command, stdout=self.log, stderr=subprocess.STDOUT, env=_peer_env(tree)
        )
        self._wait_ready()

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def _wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if (
                    urllib.request.urlopen(
                        f"http://127.0.0.1:{self.http_port}/v2/health/ready", timeout=2
                    ).status
                    == 200
                ):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        log = (self.runtime / "tritonserver.log").read_text()[-3000:]
        raise RuntimeError(f"tritonserver did not become ready:\n{log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
        shutil.rmtree(self.runtime, ignore_errors=True)


def _venv_python_minor() -> str:
    version = subprocess.run(
        [
            str(PEER_VENV / "bin" / "python"),
            "-c",
            "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return version.stdout.strip()


def _peer_env(tree: Path) -> dict[str, str]:
    """The stub finds its Python from the first python3 on PATH; libpython and the wheel's libs."""
    site = tree.parent.parent
    libdir = subprocess.run(
        [
            str(PEER_VENV / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip() or sysconfig.get_config_var("LIBDIR")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(
        p for p in (libdir, str(site / "nvidia_pytriton.libs"), env.get("LD_LIBRARY_PATH", "")) if p
    )
    env["PATH"] = f"{PEER_VENV / 'bin'}:{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


def measure_peer_rows(
    chosen: list[PeerScenario], repeat: int, measure, capture, canned_type, server_args: str = ""
) -> list[dict]:
    """Ours, Triton (when installed) and the bare grpc.aio server, alternating; median rows."""
    tree = triton_tree()
    if tree is None:
        print("peer: Triton is not installed (`make triton-peer`): its column is left out", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="bench-peer-"))
    rows = []
    with ServerProcess(
        "--model-repository", str(PEER_MODELS), "--load-model", "*", *server_args.split()
    ) as ours:
        capture(ours, {s.model for s in chosen}, folder)
        yardsticks = {name: canned_type(kind, folder) for name, kind in YARDSTICKS.items()}
        peer = TritonPeer(tree, PEER_MODELS) if tree is not None else None
        try:
            for scenario in chosen:
                rounds = [
                    _round(scenario, measure, ours.grpc_url, peer, yardsticks, reverse=index % 2 == 1)
                    for index in range(max(1, repeat))
                ]
                rows.append(_median_round(scenario, rounds))
        finally:
            for server in yardsticks.values():
                server.stop()
            if peer is not None:
                peer.stop()
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def _round(
    scenario: PeerScenario, measure, ours_url: str, peer: TritonPeer | None, yardsticks: dict, reverse: bool
) -> dict:
    """Every server once; every other round in reverse order, so neither ours nor Triton is
    always measured first (the machine drifts within a round)."""
    urls = {"ours": ours_url}
    if peer is not None:
        urls["triton"] = peer.grpc_url
    for kind, server in yardsticks.items():
        urls[kind] = f"127.0.0.1:{server.port}"
    order = list(urls)[::-1] if reverse else list(urls)
    measured = {name: measure(scenario, urls[name]) for name in order}
    rates = {name: measured[name] for name in urls}  # printed and kept in the usual order
    print(
        f"measured {scenario.label}: " + ", ".join(f"{k} {v:.1f}/s" for k, v in rates.items()),
        file=sys.stderr,
        flush=True,
    )
    return rates


def _median_round(scenario: PeerScenario, rounds: list[dict]) -> dict:
    def median(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[len(ordered) // 2] if ordered else 0.0

    row: dict = {"scenario": scenario.label, "runs": len(rounds)}
    for name in ("ours", "triton", *YARDSTICKS):
        if name in rounds[0]:
            row[name] = median([r[name] for r in rounds])
    if "triton" in rounds[0]:  # grpcio's own limits, as shares of Triton's rate: carrying a call,
        for name in ("floor", "model", "required"):  # through the model's Python, with the checks
            row[f"{name}_of_triton"] = median([r[name] / r["triton"] if r["triton"] else 0.0 for r in rounds])
    for name in ("triton", *YARDSTICKS):
        if name in rounds[0]:
            row[f"of_{name}"] = median([r["ours"] / r[name] if r[name] else 0.0 for r in rounds])
    return row


def print_peer_table(rows: list[dict]) -> None:
    """One line per scenario. "floor of triton" is the best any grpcio server could do;
    "model of triton" the best one running the peer model's Python could do; "required of
    triton" the best one that also does the work ours must keep."""
    columns = [  # (header, row key, format)
        ("ours /s", "ours", ".1f"),
        ("triton /s", "triton", ".1f"),
        ("bare aio /s", "bare", ".1f"),
        ("floor /s", "floor", ".1f"),
        ("model /s", "model", ".1f"),
        ("required /s", "required", ".1f"),
        ("of triton", "of_triton", ".2f"),
        ("of model", "of_model", ".2f"),
        ("of required", "of_required", ".2f"),
        ("floor of triton", "floor_of_triton", ".2f"),
        ("model of triton", "model_of_triton", ".2f"),
        ("required of triton", "required_of_triton", ".2f"),
    ]
    print("\n| " + " | ".join([f"{'scenario':36}", *(header for header, _, _ in columns)]) + " |")
    print("|" + "|".join(["-" * 38, *("-" * (len(header) + 2) for header, _, _ in columns)]) + "|")
    for row in rows:
        cells = [
            f"{format(row[key], spec):>{len(header)}}" if key in row else f"{'-':>{len(header)}}"
            for header, key, spec in columns
        ]
        print("| " + " | ".join([f"{row['scenario']:36}", *cells]) + " |")
