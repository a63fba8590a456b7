"""``--model-repository s3://...`` against a real S3-compatible server (moto, IAM auth on).

The storage plugin mirrors the bucket into a local folder: the server serves
from it, an explicit load fetches that one model again, poll mode sees new
versions, and a wrong credential, a missing bucket or an unreachable
endpoint stops the server with one line naming the URL (exit code 2).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess, free_port
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc
from tests.conftest import MODEL_REPOSITORY, ROOT
from tests.plugins.storage.s3_server import Keys, MotoServer, serving_a_lost_store

pytestmark = [pytest.mark.hook("open_repository"), pytest.mark.timeout(300)]

#: Version 2 of "simple" as uploaded later: products instead of sums, so a test sees which answered.
SIMPLE_V2 = b"""
class Model:
    def infer(self, inputs):
        a, b = inputs["INPUT0"], inputs["INPUT1"]
        return {"OUTPUT0": a * b, "OUTPUT1": a - b}
"""


@pytest.fixture
def bucket(s3: MotoServer) -> str:
    """A fresh bucket holding models/simple."""
    return s3.bucket_holding("models", MODEL_REPOSITORY / "simple")


A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 3, dtype=np.int32)


def _infer_http(url: str) -> np.ndarray:
    """OUTPUT0 of "simple" for A and B (sums from version 1, products from version 2)."""
    client = httpclient.InferenceServerClient(url)
    inputs = [httpclient.InferInput(name, [1, 16], "INT32") for name in ("INPUT0", "INPUT1")]
    inputs[0].set_data_from_numpy(A)
    inputs[1].set_data_from_numpy(B)
    return client.infer("simple", inputs).as_numpy("OUTPUT0")


def _infer_grpc(url: str) -> np.ndarray:
    """The same over gRPC, with the generated stubs (tritonclient.grpc's protos would clash
    with the core's in one process)."""
    request = pb.ModelInferRequest(model_name="simple", raw_input_contents=[A.tobytes(), B.tobytes()])
    for name in ("INPUT0", "INPUT1"):
        request.inputs.add(name=name, datatype="INT32", shape=[1, 16])
    request.outputs.add(name="OUTPUT0")
    with grpc.insecure_channel(url) as channel:
        reply = pb_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
    return np.frombuffer(reply.raw_output_contents[0], dtype=np.int32).reshape(1, 16)


SUMS = A + B
PRODUCTS = A * B


@pytest.mark.parametrize("form", ["s3://127.0.0.1:{port}", "s3://http://127.0.0.1:{port}"])
def test_serves_the_models_of_a_bucket_to_http_and_grpc_clients(s3, bucket, form):
    url = form.format(port=s3.port) + f"/{bucket}/models"
    with ServerProcess("--model-repository", url, env=s3.keys.env()) as server:
        assert np.array_equal(_infer_http(server.http_url), SUMS)
        assert np.array_equal(_infer_grpc(server.grpc_url), SUMS)


@pytest.mark.parametrize("mode", ["explicit", "poll"])
def test_every_worker_follows_the_bucket(s3, bucket, mode):
    """Workers attach to the supervisor's mirror; an API load or a poll brings version 2 to all."""
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    args = ("--model-repository", url, "--workers", "2", "--model-control-mode", mode,
            "--repository-poll-secs", "0.5")  # fmt: skip
    with ServerProcess(*args, env=s3.keys.env(), timeout=120) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        _wait_for(lambda: client.is_server_ready(), server)
        assert all(np.array_equal(_infer_http(server.http_url), SUMS) for _ in range(4))
        s3.upload(bucket, "models", MODEL_REPOSITORY / "simple",
                  files={"models/simple/2/model.py": SIMPLE_V2})  # fmt: skip
        if mode == "explicit":
            client.load_model("simple")  # applied by the sibling worker too
        # Every new connection may reach either worker: both must answer with version 2.
        _wait_for(lambda: all(np.array_equal(_infer_http(server.http_url), PRODUCTS)
                              for _ in range(8)), server)  # fmt: skip


def test_platform_models_lists_a_bucket(s3, bucket):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    result = subprocess.run([sys.executable, "-m", "modelplatform", "models", "--model-repository", url],
                            env={**os.environ, **s3.keys.env()}, capture_output=True, text=True,
                            timeout=120, cwd=ROOT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["simple", "versions", "1", "python"]


def test_kserve_endpoint_variables_name_the_server(s3, bucket):
    env = {**s3.keys.env(), "S3_ENDPOINT": f"127.0.0.1:{s3.port}", "S3_USE_HTTPS": "0"}
    with ServerProcess("--model-repository", f"s3://{bucket}/models", env=env) as server:
        assert np.array_equal(_infer_http(server.http_url), SUMS)


def test_an_explicit_load_fetches_that_model_again_and_only_it(s3, bucket, tmp_path):
    mount = tmp_path / "mount"
    env = {**s3.keys.env(), "TRITON_AWS_MOUNT_DIRECTORY": str(mount)}
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    with ServerProcess("--model-repository", url, env=env) as server:
        s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32",
                  files={"models/simple/2/model.py": SIMPLE_V2})  # fmt: skip
        client = httpclient.InferenceServerClient(server.http_url)
        client.load_model("simple")
        assert np.array_equal(_infer_http(server.http_url), PRODUCTS)
        assert not (mount / "identity_fp32").exists()  # not asked for: not fetched
        client.load_model("identity_fp32")
        assert client.is_model_ready("identity_fp32")
        assert (mount / "identity_fp32" / "1" / "model.py").is_file()


def test_poll_mode_loads_a_version_uploaded_later(s3, bucket):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    args = ("--model-repository", url, "--model-control-mode", "poll",
            "--repository-poll-secs", "0.5")  # fmt: skip
    with ServerProcess(*args, env=s3.keys.env()) as server:
        assert np.array_equal(_infer_http(server.http_url), SUMS)
        s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32",
                  files={"models/simple/2/model.py": SIMPLE_V2})  # fmt: skip
        client = httpclient.InferenceServerClient(server.http_url)
        both = ("simple", "2"), ("identity_fp32", "")
        _wait_for(lambda: all(client.is_model_ready(*model) for model in both), server)
        assert np.array_equal(_infer_http(server.http_url), PRODUCTS)


def test_a_temporary_mirror_is_removed_at_exit(s3, bucket):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    with ServerProcess("--model-repository", url, env=s3.keys.env()) as server:
        mirror = _mirror_path(server.log())
        assert (mirror / "simple" / "1" / "model.py").is_file()
        assert server.stop() == 0
    assert not mirror.exists()


def test_a_given_mount_directory_is_kept_and_reused(s3, bucket, tmp_path):
    mount = tmp_path / "mount"
    env = {**s3.keys.env(), "TRITON_AWS_MOUNT_DIRECTORY": str(mount)}
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    with ServerProcess("--model-repository", url, env=env) as server:
        assert _mirror_path(server.log()) == mount.resolve()
    model_file = mount / "simple" / "1" / "model.py"
    assert model_file.is_file()
    written = model_file.stat().st_mtime_ns
    with ServerProcess("--model-repository", url, env=env) as server:  # a restart: nothing changed
        assert np.array_equal(_infer_http(server.http_url), SUMS)
    assert model_file.stat().st_mtime_ns == written  # compared by listing, not downloaded again


def test_a_load_over_mirror_max_bytes_is_refused_and_the_others_serve_on(s3, bucket, tmp_path):
    """The bound from the config file's [plugins.storage] table; the big model is never fetched."""
    mount = tmp_path / "mount"
    config = tmp_path / "platform.toml"
    config.write_text("[plugins.storage]\nmirror_max_bytes = 20000\n")
    env = {**s3.keys.env(), "TRITON_AWS_MOUNT_DIRECTORY": str(mount)}
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    with ServerProcess("--config", str(config), "--model-repository", url, env=env) as server:
        s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32",
                  files={"models/identity_fp32/1/weights.bin": b"\0" * 30_000})  # fmt: skip
        client = httpclient.InferenceServerClient(server.http_url)
        with pytest.raises(InferenceServerException) as refused:
            client.load_model("identity_fp32")
        assert "over mirror_max_bytes (20000)" in str(refused.value)
        assert not (mount / "identity_fp32").exists()
        assert np.array_equal(_infer_http(server.http_url), SUMS)


# ---- refusals: one line naming the URL, exit code 2 ----


def _serve_until_it_exits(url: str, env: dict[str, str]) -> tuple[int, str]:
    command = [sys.executable, "-m", "modelplatform", "serve", "--model-repository", url,
               "--http-port", str(free_port()), "--grpc-port", str(free_port()),
               "--metrics-port", str(free_port())]  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_"))}
    result = subprocess.run(command, env={**clean, **env}, capture_output=True, text=True,
                            timeout=120, cwd=ROOT)  # fmt: skip
    return result.returncode, result.stderr


def _assert_refused(url: str, env: dict[str, str], words: str) -> None:
    returncode, stderr = _serve_until_it_exits(url, env)
    lines = stderr.strip().splitlines()
    assert returncode == 2, stderr
    assert len(lines) == 1 and url in lines[0] and words in lines[0], stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("wrong", ["key", "secret"])
def test_a_wrong_credential_is_refused_at_start(s3, bucket, wrong):
    keys = s3.keys
    if wrong == "key":
        bad = Keys("AKIAUNKNOWNKEY000000", keys.secret_access_key)
    else:
        bad = Keys(keys.access_key_id, "not-the-secret")
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    _assert_refused(url, bad.env(), "access denied")


def test_a_missing_bucket_is_refused_at_start(s3):
    url = f"s3://127.0.0.1:{s3.port}/no-such-bucket-here/models"
    _assert_refused(url, s3.keys.env(), "bucket 'no-such-bucket-here' does not exist")


def test_an_empty_folder_is_refused_at_start(s3, bucket):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/mistyped"
    _assert_refused(url, s3.keys.env(), "no objects under this path")


def test_a_repository_over_mirror_max_bytes_is_refused_at_start(s3, bucket):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    env = {**s3.keys.env(), "MODELPLATFORM_STORAGE_MIRROR_MAX_BYTES": "100"}
    _assert_refused(url, env, "over mirror_max_bytes (100)")


def test_the_mirror_bound_flag_wins_over_its_variable(s3, bucket):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    env = {**s3.keys.env(), "MODELPLATFORM_STORAGE_MIRROR_MAX_BYTES": "100"}  # alone, refused (above)
    with ServerProcess("--model-repository", url, "--storage-mirror-max-bytes", "0", env=env) as server:
        assert httpclient.InferenceServerClient(server.http_url).is_model_ready("simple")


def test_an_unreachable_endpoint_is_refused_at_start(s3):
    url = f"s3://127.0.0.1:{free_port()}/models-bucket/models"  # nothing listens there
    _assert_refused(url, s3.keys.env(), "cannot reach the storage endpoint")


def test_an_unknown_scheme_is_refused_at_start():
    _assert_refused("hdfs://namenode/models", {}, "no installed plugin opens hdfs://")


@pytest.mark.parametrize(("url", "library", "extra"), [
    ("gs://bucket/models", "gcsfs", "gcs"), ("as://account/container/models", "adlfs", "azure")
])  # fmt: skip
def test_a_scheme_whose_library_is_missing_names_the_extra(url, library, extra):
    if importlib.util.find_spec(library) is not None:
        pytest.skip(f"{library} is installed: the URL would be opened")
    _assert_refused(url, {}, f"pip install 'modelplatform-storage[{extra}]'")


def test_a_load_fails_naming_the_url_when_the_storage_is_gone(bucket, tmp_path):
    server, url = serving_a_lost_store(MODEL_REPOSITORY / "simple")  # the module's store serves on
    try:
        client = httpclient.InferenceServerClient(server.http_url)
        with pytest.raises(InferenceServerException) as refused:
            client.load_model("simple")
        assert url in str(refused.value) and "cannot reach" in str(refused.value)
        assert client.is_model_ready("simple")  # the mirrored version keeps serving
    finally:
        server.stop()


def _mirror_path(log: str) -> Path:
    found = re.search(r"repository_mirror_opened\s.*?path=(\S+)", log)
    assert found, log
    return Path(found.group(1))


def _wait_for(condition, server: ServerProcess, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except InferenceServerException:
            pass
        time.sleep(0.25)
    pytest.fail(f"not reached in {timeout}s:\n{server.log()[-4000:]}")


def test_sigterm_while_mirroring_removes_the_temporary_mirror(s3, bucket, tmp_path):
    """A pod stopped during its first download leaves no half-filled temporary folder behind."""
    # Many objects, fetched one request each: the download lasts seconds, whatever the load.
    big = {f"models/simple/1/blob-{i}.bin": os.urandom(4096) for i in range(800)}
    s3.upload(bucket, "models", MODEL_REPOSITORY / "simple", files=big)
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    command = [sys.executable, "-m", "modelplatform", "serve", "--model-repository", url,
               "--http-port", str(free_port()), "--grpc-port", str(free_port()),
               "--metrics-port", str(free_port())]  # fmt: skip
    env = {**os.environ, **s3.keys.env(), "TMPDIR": str(tmp_path)}  # where mkdtemp makes it
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=ROOT)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not any(tmp_path.rglob("*.part")) and time.monotonic() < deadline:
            time.sleep(0.02)  # downloading: the first partial file appeared
        assert any(tmp_path.iterdir()), "no mirror was made"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) != 0
    finally:
        if process.poll() is None:
            process.kill()
    assert not any(p.name.startswith("modelplatform-repository-") for p in tmp_path.iterdir())
