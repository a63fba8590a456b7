"""Version folders under any name TF Serving accepts (issue 28, point 3).

A zero-padded folder (``00000042``) is version 42 and an export timestamp
(``1700000000``) is that version; each is loaded from its own folder. The
test backend answers with a file read from the folder it was given, so a
version read from the wrong folder (or none) fails the test.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import structlog.testing

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.models.repository import is_model_folder, scan, version_number
from modelplatform.testing import InProcessServer, free_port

CONFIG = """backend: "folder_tag"
version_policy: { all {} }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "TAG" data_type: TYPE_STRING dims: [ 1 ] } ]
"""


class FolderTagBackend(Backend):
    """Answers the text of ``tag.txt`` in its version folder."""

    kind: ClassVar[str] = "folder_tag"
    _tag = b""

    async def load(self) -> None:
        path = self.version_dir / "tag.txt"
        if not path.is_file():
            raise InvalidArgument(f"{path} is missing")
        self._tag = path.read_bytes()

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        tag = np.array([self._tag], dtype=object)
        return [InferenceResponse(r.model_name, "", [Tensor("TAG", "BYTES", (1,), tag)]) for r in batch]


class FolderTagPlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [FolderTagBackend]


def write_versions(root: Path, folders: Sequence[str]) -> None:
    model = root / "tagged"
    for folder in folders:
        (model / folder).mkdir(parents=True)
        (model / folder / "tag.txt").write_text(f"from {folder}")
    (model / "config.pbtxt").write_text(CONFIG)


def test_numbers_of_folder_names() -> None:
    assert version_number("00000042") == 42
    assert version_number("1700000000") == 1700000000
    assert version_number("0") == 0
    assert version_number("²") is None  # str.isdigit says yes; int() says no
    assert version_number("9" * 19) is None  # over int64, as TF Serving and Triton refuse
    assert version_number("1a") is None


def test_scan_keeps_each_versions_folder(tmp_path: Path) -> None:
    write_versions(tmp_path, ["00000042", "1700000000", "7", "007"])
    with structlog.testing.capture_logs() as logs:
        entry = scan(tmp_path)["tagged"]
    assert entry.versions == (7, 42, 1700000000)
    assert entry.version_dir(42) == tmp_path / "tagged" / "00000042"
    assert entry.version_dir(1700000000) == tmp_path / "tagged" / "1700000000"
    assert entry.folders[7] == "007"  # the first by name; "7" is reported
    assert [e["entry"] for e in logs if e["event"] == "repository_entry_ignored"] == ["7"]


def test_a_folder_of_versions_is_one_model(tmp_path: Path) -> None:
    write_versions(tmp_path, ["00000042", "1700000000"])
    assert not is_model_folder(tmp_path)  # a repository: its folder "tagged" is no version
    assert is_model_folder(tmp_path / "tagged")  # TF Serving's model base path
    assert not is_model_folder(tmp_path / "tagged" / "00000042")  # no folders at all
    assert not is_model_folder(tmp_path / "absent")


async def test_each_version_is_served_from_its_own_folder(tmp_path: Path) -> None:
    write_versions(tmp_path, ["00000042", "1700000000"])
    settings = Settings(
        model_repository=tmp_path,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
    )
    async with InProcessServer(settings, [FolderTagPlugin()]) as server:
        inference = server.context.dataplane.inference
        tags = {}
        for version in ("42", "1700000000"):
            request = InferenceRequest("tagged", [Tensor.from_array("X", np.zeros(1, np.float32))], version)
            response = await inference.infer(request)
            tags[version] = response.outputs[0].data[0]
            assert response.model_version == version
    assert tags == {"42": b"from 00000042", "1700000000": b"from 1700000000"}
