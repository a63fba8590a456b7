"""Where one gRPC call's time goes at c1: stamps inside the server, and the machine's cold start.

Three measurements, each against a server started here (the bundled ``simple``
model alone, plugins oip-grpc, oip-rest and python):

``stages``: the real server, with wall-clock stamps (``perf_counter_ns``)
taken around grpc.aio's deserializer, the request scope, the OIP handler,
decoding, the dataplane, the backend call and encoding, while perf_analyzer
sends one ModelInfer at a time. It prints each stamp's median offset from the
deserializer's entry, and the median gap from a handler's exit to the next
call's deserializer (grpc.aio answering, the client turning around, grpc.aio
receiving). The stamps are installed by wrapping functions in the server
process before it starts (this module's ``_install_stamps``): nothing on the
request path takes stamps in a normal server.

``gap``: the same two spans (inside the handler, outside it) for our server
and for the bare grpc.aio servicer (canned.py ``grpc``), stamped the same way
at grpc's own handler boundary, alternating.

``cold``: the same Python work (parse and decode one ModelInfer request) timed
in a hot loop, after the thread slept (as a server thread does between calls at
c1), and after it spun for as long: the machine's own multiplier on code run
once per call.

    python benchmarks/grpc_timeline.py stages [--seconds 5]
    python benchmarks/grpc_timeline.py gap
    python benchmarks/grpc_timeline.py cold
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PERF_ANALYZER = ROOT / ".venv" / "perf_analyzer" / "perf_analyzer"
#: Where the stamped server writes its stamps at exit (JSON: [[tag, ns], ...]).
STAMPS_ENV = "GRPC_TIMELINE_STAMPS"
KEEP = 40_000


def _install_stamps(level: str) -> None:
    """Run inside the server process before it starts: wrap the call's stages with stamps."""
    import atexit
    import functools

    import grpc

    stamps: list[tuple[str, int]] = []
    now = time.perf_counter_ns
    push = stamps.append
    atexit.register(lambda: Path(os.environ[STAMPS_ENV]).write_text(json.dumps(stamps[-KEEP:])))

    def stamped(tag: str, function, asynchronous: bool):
        if asynchronous:

            @functools.wraps(function)
            async def wrapped_async(*args, **kwargs):
                push((tag + ">", now()))
                try:
                    return await function(*args, **kwargs)
                finally:
                    push((tag + "<", now()))

            return wrapped_async

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            push((tag + ">", now()))
            try:
                return function(*args, **kwargs)
            finally:
                push((tag + "<", now()))

        return wrapped

    # grpc's own boundary: the deserializer it calls and the behaviour it awaits.
    handler_of = grpc.unary_unary_rpc_method_handler

    def boundary(behavior, request_deserializer=None, response_serializer=None):
        deserializer = request_deserializer or (lambda data: data)
        return handler_of(
            stamped("grpc", behavior, True),
            request_deserializer=stamped("deser", deserializer, False),
            response_serializer=response_serializer,
        )

    grpc.unary_unary_rpc_method_handler = boundary
    if level != "stages":
        return
    from modelplatform.dataplane import inference
    from modelplatform_oip.rpc import repeats, service
    from modelplatform_python import backend

    service.decode_request = stamped("decode", service.decode_request, False)
    # a call that repeats a known layout is rebuilt from its template instead (rpc/repeats.py)
    repeats.RequestTemplate.request = stamped("decode", repeats.RequestTemplate.request, False)
    service.encode_response_bytes = stamped("encode", service.encode_response_bytes, False)
    inference.Inference.infer = stamped("dataplane", inference.Inference.infer, True)
    backend.PythonBackend.execute = stamped("backend", backend.PythonBackend.execute, True)


def _calls(stamps: list[list]) -> list[dict[str, int]]:
    """The stamps cut into calls (each starts at the deserializer's entry), complete ones only."""
    calls: list[dict[str, int]] = []
    for tag, at in stamps:
        if tag == "deser>":
            calls.append({})
        if calls:
            calls[-1].setdefault(tag, at)
    return [c for c in calls if "grpc<" in c][1:]


def _median_us(values: list[float]) -> str:
    ordered = sorted(values)
    return (
        f"{statistics.median(ordered):7.1f} µs (p10 {ordered[len(ordered) // 10]:.1f}, "
        f"p90 {ordered[len(ordered) * 9 // 10]:.1f})"
    )


def print_stages(stamps: list[list]) -> None:
    calls = _calls(stamps)
    print(f"{len(calls)} calls; median offset from the deserializer's entry:")
    tags = sorted(
        {t for c in calls for t in c},
        key=lambda t: statistics.median(c[t] - c["deser>"] for c in calls if t in c),
    )
    for tag in tags:
        offsets = [(c[tag] - c["deser>"]) / 1000 for c in calls if tag in c]
        print(f"  {tag:12s} {statistics.median(offsets):7.1f} µs")
    print_gap("", calls)


def print_gap(label: str, calls: list[dict[str, int]]) -> None:
    inside = [(c["grpc<"] - c["deser>"]) / 1000 for c in calls]
    outside = [(b["deser>"] - a["grpc<"]) / 1000 for a, b in zip(calls, calls[1:])]
    print(f"{label}inside (deserializer entry -> handler exit): {_median_us(inside)}")
    print(f"{label}outside (handler exit -> next deserializer): {_median_us(outside)}")


class StampedServer:
    """A server process (``command``) with stamps installed; its stamps are read after it stops."""

    def __init__(self, level: str, command: list[str], env: dict[str, str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="grpc-timeline-"))
        self.stamps_path = self.folder / "stamps.json"
        code = (
            f"import sys, runpy; sys.path.insert(0, {str(HERE)!r}); import grpc_timeline; "
            f"grpc_timeline._install_stamps({level!r}); sys.argv = {command!r}; "
            + (
                f"runpy.run_module({command[0]!r}, run_name='__main__', alter_sys=True)"
                if not command[0].endswith(".py")
                else f"runpy.run_path({command[0]!r}, run_name='__main__')"
            )
        )
        self.log = (self.folder / "server.log").open("wb")
        environment = {**os.environ, **env, STAMPS_ENV: str(self.stamps_path)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=self.log, stderr=subprocess.STDOUT, env=environment
        )

    def wait_started(self, marker: str) -> None:
        log = self.folder / "server.log"
        for _ in range(600):
            if marker in log.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"server did not start:\n{log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> list[list]:
        self.process.terminate()
        self.process.wait(timeout=30)
        stamps = json.loads(self.stamps_path.read_text())
        shutil.rmtree(self.folder, ignore_errors=True)
        return stamps


def simple_repository() -> Path:
    repository = Path(tempfile.mkdtemp(prefix="grpc-timeline-repo-"))
    shutil.copytree(ROOT / "model_repository" / "simple", repository / "simple")
    return repository


def our_server(level: str, repository: Path) -> tuple[StampedServer, str]:
    from modelplatform.testing import free_port

    http, grpc_port, metrics = free_port(), free_port(), free_port()
    command = [
        "modelplatform", "serve", "--host", "127.0.0.1", "--http-port", str(http), "--grpc-port", str(grpc_port),
        "--model-repository", str(repository), "--plugins", "oip-grpc,oip-rest,python",
    ]  # fmt: skip
    env = {"MODELPLATFORM_DRAIN_DELAY_SECS": "0", "MODELPLATFORM_METRICS_PORT": str(metrics)}
    server = StampedServer(level, command, env)
    server.wait_started("server_started")
    return server, f"127.0.0.1:{grpc_port}"


def perf_analyzer(url: str, seconds: float, concurrency: int = 1) -> None:
    command = [
        str(PERF_ANALYZER), "-m", "simple", "-i", "grpc", "-u", url, "--concurrency-range", str(concurrency),
        "--input-data", "zero", "--measurement-interval", str(int(seconds * 1000)),
        "--stability-percentage", "999", "--max-trials", "1",
    ]  # fmt: skip
    subprocess.run(command, capture_output=True, timeout=120 + seconds * 3)


def stages(seconds: float) -> None:
    repository = simple_repository()
    server, url = our_server("stages", repository)
    try:
        perf_analyzer(url, seconds)
    finally:
        stamps = server.stop()
    print_stages(stamps)


def gap(seconds: float, rounds: int) -> None:
    sys.path.insert(0, str(HERE))
    import run  # the bench's own capture of what the canned server answers

    from modelplatform.testing import ServerProcess, free_port

    repository = simple_repository()
    canned_folder = Path(tempfile.mkdtemp(prefix="grpc-timeline-canned-"))
    with ServerProcess(
        "--model-repository", str(repository), "--plugins", "oip-grpc,oip-rest,python"
    ) as plain:
        run.capture(plain, {"simple"}, canned_folder)
    port = free_port()
    canned = StampedServer("gap", [str(HERE / "canned.py"), "grpc", str(port), str(canned_folder)], {})
    canned.wait_started("canned_started")
    ours, url = our_server("gap", repository)
    try:
        for _ in range(rounds):
            perf_analyzer(url, seconds)
            perf_analyzer(f"127.0.0.1:{port}", seconds)
    finally:
        print_gap("ours:     ", _calls(ours.stop()))
        canned.process.send_signal(2)  # canned.py has no SIGTERM handler: KeyboardInterrupt runs atexit
        canned.process.wait(timeout=30)
        print_gap("bare aio: ", _calls(json.loads(canned.stamps_path.read_text())))


def cold() -> None:
    import numpy as np

    from modelplatform import Limits
    from modelplatform.testing import resolved_settings
    from modelplatform_oip.protos import grpc_service_pb2 as pb
    from modelplatform_oip.rpc.tensors import decode_request
    from modelplatform_oip.rpc.wire import read_infer_request

    request = pb.ModelInferRequest(model_name="simple")
    for name in ("INPUT0", "INPUT1"):
        request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        request.raw_input_contents.append(np.zeros(16, np.int32).tobytes())
    data = request.SerializeToString()
    limits = Limits.from_settings(resolved_settings())
    clock = time.perf_counter_ns

    def once() -> int:
        started = clock()
        call = read_infer_request(data)
        decode_request(call.message, limits, None, call.raw)
        return clock() - started

    def spin(ns: int) -> None:
        end = clock() + ns
        while clock() < end:
            pass

    print(
        f"parse + decode, hot loop:            {statistics.median(once() for _ in range(20_000)) / 1000:6.1f} µs"
    )
    for pause_us in (100, 500, 2000):
        slept = []
        for _ in range(2000):
            time.sleep(pause_us / 1e6)
            slept.append(once())
        spun = []
        for _ in range(500 if pause_us > 500 else 2000):
            spin(pause_us * 1000)
            spun.append(once())
        print(
            f"after {pause_us:4d} µs asleep: {statistics.median(slept) / 1000:6.1f} µs; "
            f"after {pause_us:4d} µs spinning: {statistics.median(spun) / 1000:6.1f} µs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("stages", "gap", "cold"))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    if arguments.what == "stages":
        stages(arguments.seconds)
    elif arguments.what == "gap":
        gap(arguments.seconds, arguments.rounds)
    else:
        cold()


if __name__ == "__main__":
    main()
