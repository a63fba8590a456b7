"""The local mirror against a real S3-compatible server (moto, IAM auth on): what a refresh changes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from modelplatform import Unavailable
from modelplatform_storage.cache import open_mirror
from modelplatform_storage.locations import parse
from tests.conftest import MODEL_REPOSITORY
from tests.plugins.storage.s3_server import MotoServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def s3() -> Iterator[MotoServer]:
    with MotoServer() as server:
        yield server


@pytest.fixture(autouse=True)
def keys(s3: MotoServer, monkeypatch) -> None:
    """The server's keys where botocore's chain finds them: the process environment."""
    for name, value in s3.keys.env().items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def bucket(s3: MotoServer) -> str:
    name = f"mirror-{uuid.uuid4().hex[:12]}"
    s3.client().create_bucket(Bucket=name)
    s3.upload(name, "models", MODEL_REPOSITORY / "simple")
    return name


def _mirror(s3: MotoServer, bucket: str, tmp_path, **env: str):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    return open_mirror(parse(url), {**s3.keys.env(), "TRITON_AWS_MOUNT_DIRECTORY": str(tmp_path), **env})


def test_a_removed_object_goes_from_the_mirror_with_its_empty_folder(s3, bucket, tmp_path):
    s3.upload(bucket, "models", MODEL_REPOSITORY / "simple", files={"models/simple/2/model.py": b"x"})
    mirror = _mirror(s3, bucket, tmp_path)
    assert (tmp_path / "simple" / "2" / "model.py").is_file()
    s3.client().delete_object(Bucket=bucket, Key="models/simple/2/model.py")
    mirror.refresh()
    assert not (tmp_path / "simple" / "2").exists()
    assert (tmp_path / "simple" / "1" / "model.py").is_file()


def test_fetch_model_removes_a_model_gone_from_the_bucket(s3, bucket, tmp_path):
    s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32")
    mirror = _mirror(s3, bucket, tmp_path)
    for key in ("models/identity_fp32/config.pbtxt", "models/identity_fp32/1/model.py"):
        s3.client().delete_object(Bucket=bucket, Key=key)
    mirror.fetch_model("identity_fp32")
    assert not (tmp_path / "identity_fp32").exists()
    assert (tmp_path / "simple").is_dir()


def test_a_key_that_would_leave_the_mirror_is_skipped(s3, bucket, tmp_path):
    s3.client().put_object(Bucket=bucket, Key="models/simple/../../escaped.txt", Body=b"no")
    _mirror(s3, bucket, tmp_path / "mount")
    assert not (tmp_path / "escaped.txt").exists()
    assert not list(tmp_path.rglob("escaped.txt"))


def test_a_changed_object_is_fetched_again(s3, bucket, tmp_path):
    mirror = _mirror(s3, bucket, tmp_path)
    s3.client().put_object(Bucket=bucket, Key="models/simple/config.pbtxt", Body=b"# changed\n")
    mirror.fetch_model("simple")
    assert (tmp_path / "simple" / "config.pbtxt").read_bytes() == b"# changed\n"


def test_a_failed_open_leaves_no_temporary_folder(s3, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where mkdtemp makes the mirror
    url = f"s3://127.0.0.1:{s3.port}/no-such-bucket-at-all/models"
    with pytest.raises(Unavailable, match="does not exist"):
        open_mirror(parse(url), s3.keys.env())
    assert list(tmp_path.iterdir()) == []
