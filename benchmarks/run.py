"""`make bench`: perf_analyzer against `platform serve` and a canned-response ceiling.

Every scenario is measured twice in the same run with the same load generator:
against our server, and against a trivial server that answers with canned or
echoed bytes (benchmarks/canned.py), the ceiling of what the load generator
and loopback allow. The table prints both and our fraction of the ceiling.
Each measurement is three 1-second windows, averaged (perf_analyzer's
stability rule rarely converges on a busy 2-core machine).

The "(wrk)" rows put TF Serving REST `:predict` and grps REST predict beside
OIP HTTP JSON, all at c8 with wrk (perf_analyzer speaks only OIP): one
`simple` request per dialect (rest_dialects.py), each checked once before
anything is measured; then the same for `saved_model_half_plus_three`,
against its own OIP row. They are measured in rounds (OIP, its canned ceiling,
then each dialect, back to back); a dialect row's "of oip wrk" is the median
of its per-round ratios to the OIP row. Choosing any of them measures the
OIP row too, as their reference.

The "metrics" rows measure `simple` HTTP JSON c8 against the benchmarked
server (metrics on, scraped every second as Prometheus would, only faster)
and against a second server started with `--no-allow-metrics`, alternating
in the same run; "metrics on" shows its median ratio to "metrics off"
(the cost of the metrics is 1 minus that ratio).

The "tls" rows do the same for TLS: `simple` HTTP JSON c8 and gRPC c8
against the benchmarked server (plain text, "tls off") and against a second
server serving the same ports over TLS with certificates made for the run
("tls on": HTTPS, and gRPC with TLS), alternating; "tls on" shows its median
ratio to "tls off". Connections are kept, so this is the cost of encrypting
requests and answers, not of handshakes.

    make bench                      # everything (about 5 minutes)
    make bench BENCH_ARGS="--only simple"
    make bench BENCH_ARGS="--only wrk --repeat 3"
    make bench BENCH_ARGS="--only metrics --repeat 5"
    make bench BENCH_ARGS="--only tls --repeat 5"
    make bench BENCH_ARGS="--only shm"
    make bench BENCH_ARGS="--only peer --repeat 3"   # beside Triton (make triton-peer), bare grpc.aio, its floor, model-only
    make bench BENCH_ARGS="--only pipelines"
    make bench BENCH_ARGS="--only torchscript"
    make bench BENCH_ARGS="--only savedmodel"
    make bench BENCH_ARGS="--only openai"

The "openai" rows (benchmarks/openai_rows.py) time the OpenAI-compatible
dialect: TTFT and streamed tokens/s over /chat/completions at c1 and c16
against the same generator model called in process, and /embeddings against
OIP infer on the same model; each with its ratio to the reference.

The "shm" rows (shm_rows.py) measure identity_fp32 at 1, 16 and 64 MiB
over HTTP binary and gRPC, then the same with system shared memory for the
input and the output, in the same round against a second server started
with --allow-client-shm; "of ref." is a shared-memory row's rate as a
multiple of the row without it ("of ref." of a wrk dialect row: its ratio to
OIP wrk).

The "peer" rows (peer.py) measure `simple` and `identity_fp32` over gRPC
against our server, Triton's own server (when `make triton-peer` installed
it), a bare grpc.aio echo server, grpc.aio's floor (no work in Python) and
grpc.aio running the peer model's code and nothing else (model_only.py),
round after round, all serving the same python-backend model files; they
print a table of their own.

The "torchscript" rows (torchscript_rows.py) serve a TorchScript MLP with dynamic
batching at c1 and c8 over HTTP binary and gRPC; their "ceiling" is the same
module called in this process with the batch sizes the server ran (the bare
framework), so the fraction is the share of bare torch's throughput served.

The "savedmodel" rows (savedmodel_rows.py) serve a SavedModel MLP with dynamic
batching at c1 and c8 over HTTP binary and gRPC; their "ceiling" is the same
SavedModel called in this process with the batch sizes the server ran (the
bare framework), so the fraction is the share of bare TensorFlow's throughput
served.

The "pipelines" rows (benchmarks/pipelines.py) time a nested model call (BLS)
against calling the inner model directly, in process, and a two-step ensemble
against the two calls a client would make instead.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import framework_bench
import grpc
import openai_rows
import peer
import pipelines
import rest_dialects
import savedmodel_rows
import shm_rows
import torchscript_rows
import wrk

from modelplatform.testing import ServerProcess, free_port
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
PERF_ANALYZER = ROOT / ".venv" / "perf_analyzer" / "perf_analyzer"
MiB = 1024 * 1024
WRK_CONCURRENCY = 8
#: The framework rows: one served MLP per framework against the bare framework (framework_bench.py).
FRAMEWORKS = (torchscript_rows.TORCHSCRIPT, savedmodel_rows.SAVEDMODEL)


@dataclass(frozen=True)
class Scenario:
    label: str
    model: str
    transport: str  # http-json | http-binary | grpc
    concurrency: int
    shape: str = ""

    def arguments(self, http: str, grpc_url: str, ca: Path | None = None) -> list[str]:
        """perf_analyzer's arguments; with ``ca`` (a server's CA file) over TLS."""
        args = ["-m", self.model, "--concurrency-range", str(self.concurrency)]
        if self.transport == "grpc":
            args += ["-i", "grpc", "-u", grpc_url]
            if ca is not None:
                args += ["--ssl-grpc-use-ssl", "true", "--ssl-grpc-root-certifications-file", str(ca)]
        else:
            args += ["-i", "http", "-u", http if ca is None else f"https://{http}"]
            if ca is not None:
                args += ["--ssl-https-ca-certificates-file", str(ca)]
        if self.transport == "http-json":
            args += ["--input-tensor-format", "json", "--output-tensor-format", "json"]
        if self.shape:
            args += ["--shape", self.shape]
        return args + ["--input-data", "zero"]


def scenarios() -> list[Scenario]:
    found = []
    for transport in ("http-json", "http-binary", "grpc"):
        for concurrency in (1, 8, 32):
            found.append(Scenario(f"simple {transport} c{concurrency}", "simple", transport, concurrency))
    for size in (1, 16):
        shape = f"INPUT0:{size * MiB // 4}"
        for transport in ("http-binary", "grpc"):
            found.append(
                Scenario(f"identity_fp32 {size} MiB {transport} c1", "identity_fp32", transport, 1, shape)
            )
    for model in ("simple", "simple_batched", "sleep_2ms", "sleep_2ms_batched"):
        found.append(Scenario(f"{model} http-binary c32", model, "http-binary", 32))
    return found


def bench_repository() -> Path:
    """The bundled models plus `simple_batched`: `simple` with dynamic batching on."""
    root = Path(tempfile.mkdtemp(prefix="bench-repo-"))
    shutil.copytree(ROOT / "model_repository", root, dirs_exist_ok=True)
    shutil.copytree(root / "simple", root / "simple_batched")
    config = (
        (root / "simple_batched" / "config.pbtxt")
        .read_text()
        .replace('name: "simple"', 'name: "simple_batched"')
    )
    (root / "simple_batched" / "config.pbtxt").write_text(config + "dynamic_batching { }\n")
    return root


def capture(server: ServerProcess, models: set[str], folder: Path) -> None:
    """What the canned servers answer before inference: bytes from the real server."""
    captured: dict[str, str] = {}
    outputs: dict[str, list[str]] = {}
    get = lambda path: urllib.request.urlopen(f"http://{server.http_url}{path}", timeout=10).read()  # noqa: E731 - a one-line helper, local to this function
    # The ceiling keeps no statistics, so it must not advertise them.
    server_metadata = json.loads(get("/v2"))
    server_metadata["extensions"] = [e for e in server_metadata["extensions"] if e != "statistics"]
    captured["/v2"] = json.dumps(server_metadata).encode().hex()
    channel = grpc.insecure_channel(server.grpc_url)
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    grpc_metadata = stub.ServerMetadata(pb.ServerMetadataRequest())
    kept = [e for e in grpc_metadata.extensions if e != "statistics"]
    del grpc_metadata.extensions[:]
    grpc_metadata.extensions.extend(kept)
    captured["grpc-server"] = grpc_metadata.SerializeToString().hex()
    captured["live"] = pb.ServerLiveResponse(live=True).SerializeToString().hex()
    captured["ready"] = pb.ServerReadyResponse(ready=True).SerializeToString().hex()
    for model in models:
        metadata = get(f"/v2/models/{model}")
        captured[f"/v2/models/{model}"] = metadata.hex()
        captured[f"/v2/models/{model}/config"] = get(f"/v2/models/{model}/config").hex()
        grpc_meta = stub.ModelMetadata(pb.ModelMetadataRequest(name=model))
        captured[f"grpc-meta/{model}"] = grpc_meta.SerializeToString().hex()
        captured[f"grpc-config/{model}"] = (
            stub.ModelConfig(pb.ModelConfigRequest(name=model)).SerializeToString().hex()
        )
        outputs[model] = [o["name"] for o in json.loads(metadata)["outputs"]]
    channel.close()
    (folder / "captured.json").write_text(json.dumps(captured))
    (folder / "outputs.json").write_text(json.dumps(outputs))


class Canned:
    """canned.py serving ``kind``; with ``loops``, on ``port`` shared with others (SO_REUSEPORT)."""

    def __init__(self, kind: str, folder: Path, port: int | None = None, loops: int | None = None) -> None:
        self.port = port or free_port()
        shared = [] if loops is None else [str(loops)]
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("canned.py")),
                kind,
                str(self.port),
                str(folder),
                *shared,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "canned_started":
            raise RuntimeError(f"canned {kind} server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def measure(scenario: Scenario, http: str, grpc_url: str, ca: Path | None = None) -> float:
    """Inferences per second, or 0.0 when perf_analyzer failed (reported in the table)."""
    return measure_arguments(scenario.label, scenario.arguments(http, grpc_url, ca))


def measure_arguments(label: str, arguments: list[str], window_ms: int = 1000) -> float:
    """perf_analyzer with these arguments: inferences per second, or 0.0 when it failed."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as report:
        command = [
            str(PERF_ANALYZER),
            *arguments,
            "--measurement-interval",
            str(window_ms),
            "--stability-percentage",
            "999",
            "--max-trials",
            "3",
            "-f",
            report.name,
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return 0.0
        if result.returncode != 0:
            sys.stderr.write(
                f"{label}: perf_analyzer failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}\n"
            )
            return 0.0
        rows = list(csv.DictReader(open(report.name)))
    return float(rows[0]["Inferences/Second"]) if rows else 0.0


def measure_ceiling(scenario: Scenario, canned: dict[str, Canned]) -> tuple[float, str]:
    """The canned server's rate; for gRPC the faster of grpc.aio and grpcio's sync server."""
    http = f"127.0.0.1:{canned['http'].port}"
    if scenario.transport != "grpc":
        return measure(scenario, http, ""), "http"
    rates = {
        kind: measure(scenario, http, f"127.0.0.1:{canned[kind].port}") for kind in ("grpc", "grpc-sync")
    }
    best = max(rates, key=rates.__getitem__)
    return rates[best], " ".join(f"{kind} {rate:.0f}/s" for kind, rate in rates.items())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="run scenarios whose label contains this text")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--server-args", default="", help="extra `platform serve` arguments")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure each scenario (ours, then the ceiling) this many times; report medians",
    )
    args = parser.parse_args()
    chosen = [s for s in scenarios() if args.only in s.label]
    rest_groups = rest_dialects.chosen(args.only)
    rest = [request for group in rest_groups for request in group]
    metrics_cost = args.only in METRICS_SCENARIO.label + " metrics"
    tls_cost = [scenario for scenario in TLS_SCENARIOS if args.only in scenario.label + " tls"]
    peer_rows = [scenario for scenario in peer.peer_scenarios() if args.only in scenario.label]
    shm = shm_rows.chosen(args.only)
    frameworks = [(f, framework_bench.chosen(f, args.only)) for f in FRAMEWORKS]
    if rest:
        wrk.executable()  # missing wrk fails here, not after the other rows
    repository = bench_repository()
    folder = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    results = []
    with ServerProcess("--model-repository", str(repository), *args.server_args.split()) as server:
        check_rest_bodies(rest, server)
        capture(server, {s.model for s in chosen} | {r.model for r in rest}, folder)
        canned = {kind: Canned(kind, folder) for kind in ("http", "grpc", "grpc-sync")}
        try:
            for scenario in chosen:
                rows = [measure_pair(scenario, server, canned) for _ in range(max(1, args.repeat))]
                results.append(median_row(rows))
            for group in rest_groups:
                results += measure_rest_rows(group, server, canned["http"], max(1, args.repeat))
            if metrics_cost:
                results += measure_metrics_cost(server, repository, args.server_args, max(1, args.repeat))
            if tls_cost:
                results += measure_tls_cost(
                    tls_cost, server, repository, args.server_args, max(1, args.repeat)
                )
            if shm:
                results += shm_rows.measure_rows(
                    shm, measure_arguments, repository, args.server_args, max(1, args.repeat)
                )
            for framework, rows in frameworks:
                if rows:
                    results += framework_bench.measure_rows(
                        framework, rows, measure_arguments, args.server_args, max(1, args.repeat)
                    )
        finally:
            for server_process in canned.values():
                server_process.stop()
    shutil.rmtree(repository, ignore_errors=True)
    if peer_rows:
        peer_results = peer.measure_peer_rows(
            peer_rows, max(1, args.repeat), measure_peer, capture, Canned, args.server_args
        )
    print_table(results)
    if peer_rows:
        peer.print_peer_table(peer_results)
        results += peer_results
    pipeline_rows = pipelines.rows() if args.only in PIPELINES_LABEL else []
    if pipeline_rows:
        pipelines.print_rows(pipeline_rows)
    dialect_rows = openai_rows.rows() if args.only in openai_rows.LABEL else []
    if dialect_rows:
        openai_rows.print_rows(dialect_rows)
    if args.json:
        args.json.write_text(json.dumps(results + pipeline_rows + dialect_rows, indent=2))


def measure_peer(scenario: peer.PeerScenario, grpc_url: str) -> float:
    return measure(
        Scenario(scenario.label, scenario.model, "grpc", scenario.concurrency, scenario.shape), "", grpc_url
    )


def measure_pair(scenario: Scenario, server: ServerProcess, canned: dict[str, Canned]) -> dict:
    """Ours, then the ceiling, back to back (the machine's load drifts between runs)."""
    ours = measure(scenario, server.http_url, server.grpc_url)
    ceiling, by = measure_ceiling(scenario, canned)
    row = {"scenario": scenario.label, "ours": ours, "ceiling": ceiling, "ceiling_server": by}
    print_row(row)
    return row


def check_rest_bodies(requests: list[rest_dialects.RestRequest], server: ServerProcess) -> None:
    """Each wrk body once, before any timing: a refused body stops the run (wrk would time errors)."""
    for request in requests:
        try:
            rest_dialects.check(request, "127.0.0.1", server.http_port)
        except rest_dialects.BodyRejected as error:
            raise SystemExit(f"bench body refused: {error}") from error


def measure_rest_rows(
    requests: list[rest_dialects.RestRequest], server: ServerProcess, canned: Canned, repeat: int
) -> list[dict]:
    """Medians over `repeat` rounds; every round measures each request (OIP first) back to back."""
    rounds = [measure_rest_round(requests, server, canned) for _ in range(repeat)]
    return [median_rest_row([r[i] for r in rounds]) for i in range(len(requests))]


def measure_rest_round(
    requests: list[rest_dialects.RestRequest], server: ServerProcess, canned: Canned
) -> list[dict]:
    """One wrk measurement per request; the OIP reference also against the canned server's echo."""
    reference, *dialects = requests
    ours = wrk.requests_per_second(reference.label, server.http_url, reference, WRK_CONCURRENCY)
    ceiling_url = f"127.0.0.1:{canned.port}"
    ceiling = wrk.requests_per_second(f"{reference.label} ceiling", ceiling_url, reference, WRK_CONCURRENCY)
    rows = [{"scenario": reference.label, "ours": ours, "ceiling": ceiling, "ceiling_server": "http (wrk)"}]
    print_row(rows[0])
    for request in dialects:
        rate = wrk.requests_per_second(request.label, server.http_url, request, WRK_CONCURRENCY)
        rows.append(
            {
                "scenario": request.label,
                "ours": rate,
                "ceiling": None,
                "ceiling_server": "",
                "of_reference": rate / ours if ours else 0.0,
                "reference": reference.label,
            }
        )
        print_row(rows[-1])
    return rows


PIPELINES_LABEL = "pipelines (nested calls, ensembles)"
METRICS_SCENARIO = Scenario("simple http-json c8", "simple", "http-json", 8)


def measure_metrics_cost(
    server: ServerProcess, repository: Path, server_args: str, repeat: int
) -> list[dict]:
    """Metrics on (``server``, scraped every second) and off (a second server), alternating."""
    off_args = ("--model-repository", str(repository), "--no-allow-metrics", *server_args.split())
    pairs = []
    with ServerProcess(*off_args) as quiet, Scraper(server.metrics_port):
        for _ in range(repeat):
            off = measure(METRICS_SCENARIO, quiet.http_url, quiet.grpc_url)
            on = measure(METRICS_SCENARIO, server.http_url, server.grpc_url)
            print(f"measured metrics on {on:.1f}/s, off {off:.1f}/s", file=sys.stderr, flush=True)
            pairs.append((on, off))
    return _on_off_rows(f"{METRICS_SCENARIO.label} metrics", pairs, repeat)


TLS_SCENARIOS = (
    Scenario("simple http-json c8", "simple", "http-json", 8),
    Scenario("simple grpc c8", "simple", "grpc", 8),
)


def measure_tls_cost(
    chosen: list[Scenario], server: ServerProcess, repository: Path, server_args: str, repeat: int
) -> list[dict]:
    """Plain text (``server``) and TLS (a second server, HTTPS and gRPC with TLS), alternating."""
    folder = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    ca, cert, key = make_certificates(folder)
    tls_args = ("--http-use-ssl", "--http-server-cert", str(cert), "--http-server-key", str(key),
                "--grpc-use-ssl", "--grpc-server-cert", str(cert), "--grpc-server-key", str(key))  # fmt: skip
    rows = []
    with ServerProcess("--model-repository", str(repository), *tls_args, *server_args.split()) as secure:
        for scenario in chosen:
            pairs = []
            for _ in range(repeat):
                plain = measure(scenario, server.http_url, server.grpc_url)
                tls = measure(scenario, f"localhost:{secure.http_port}", f"localhost:{secure.grpc_port}", ca)
                print(
                    f"measured {scenario.label} tls on {tls:.1f}/s, off {plain:.1f}/s",
                    file=sys.stderr,
                    flush=True,
                )
                pairs.append((tls, plain))
            rows += _on_off_rows(f"{scenario.label} tls", pairs, repeat)
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def _on_off_rows(label: str, pairs: list[tuple[float, float]], repeat: int) -> list[dict]:
    """The "off" row and the "on" row with its median ratio to "off" (pairs are (on, off))."""
    off_row = {
        "scenario": f"{label} off",
        "ours": _median([off for _, off in pairs]),
        "ceiling": None,
        "of_reference": 1.0,
        "runs": repeat,
    }
    on_row = {
        "scenario": f"{label} on",
        "ours": _median([on for on, _ in pairs]),
        "ceiling": None,
        "of_reference": _median([on / off if off else 0.0 for on, off in pairs]),
        "runs": repeat,
    }
    return [off_row, on_row]


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for localhost, made for this run (the tests' helper)."""
    sys.path.insert(0, str(ROOT))
    from tests.e2e.tls_certs import Authority  # only the tls rows need cryptography

    authority = Authority("bench CA")
    ca, cert, key = folder / "ca.pem", folder / "server.crt", folder / "server.key"
    ca.write_bytes(authority.pem)
    authority.server().write(cert, key)
    return ca, cert, key


class Scraper:
    """Scrapes the metrics port every second while the "metrics on" rows are measured."""

    def __init__(self, port: int) -> None:
        self._url = f"http://127.0.0.1:{port}/metrics"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            with urllib.request.urlopen(self._url, timeout=10) as reply:
                reply.read()


def median_rest_row(rows: list[dict]) -> dict:
    """Medians of one request's rounds: its rate, and its ceiling or its ratio to the reference."""
    row = {**rows[0], "ours": _median([r["ours"] for r in rows]), "runs": len(rows)}
    for key in ("ceiling", "of_reference"):
        if row.get(key) is not None:
            row[key] = _median([r[key] for r in rows])
    return row


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def median_row(rows: list[dict]) -> dict:
    """Median of ours and of the ceiling over repeated pairs (one run: that run)."""
    ours = _median([r["ours"] for r in rows])
    ceiling = _median([r["ceiling"] for r in rows])
    return {**rows[0], "ours": ours, "ceiling": ceiling, "runs": len(rows)}


def print_row(row: dict) -> None:
    if row["ceiling"] is None:
        against = f"{row['of_reference']:.2f} of {row.get('reference', rest_dialects.OIP.label)} this round"
    else:
        against = f"ceiling {row['ceiling']:.1f}/s, {row['ceiling_server']}"
    print(f"measured {row['scenario']}: {row['ours']:.1f}/s ({against})", file=sys.stderr, flush=True)


def print_table(results: list[dict]) -> None:
    """One table: wrk dialect and shm rows have no ceiling of their own, only a ratio to a reference row."""
    print(
        f"\n| {'scenario':40} | {'ours infer/s':>12} | {'ceiling infer/s':>15} | {'fraction':>8} "
        f"| {'of ref.':>10} |"
    )
    print(f"|{'-' * 42}|{'-' * 14}|{'-' * 17}|{'-' * 10}|{'-' * 12}|")
    for row in results:
        if row["ceiling"] is None:
            ceiling = fraction = "-"
        else:
            ceiling = f"{row['ceiling']:.1f}"
            fraction = f"{row['ours'] / row['ceiling']:.2f}" if row["ceiling"] else "0.00"
        of_reference = f"{row['of_reference']:.2f}" if "of_reference" in row else ""
        print(
            f"| {row['scenario']:40} | {row['ours']:12.1f} | {ceiling:>15} | {fraction:>8} "
            f"| {of_reference:>10} |"
        )


if __name__ == "__main__":
    main()
