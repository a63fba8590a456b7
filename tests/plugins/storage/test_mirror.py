"""The local mirror against a real S3-compatible server (moto, IAM auth on): what a refresh changes."""

from __future__ import annotations

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
    return s3.bucket_holding("mirror", MODEL_REPOSITORY / "simple")


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


# ---- model_names: what the repository index lists ----


def test_model_names_lists_the_bucket_now_not_the_mirror(s3, bucket, tmp_path):
    mirror = _mirror(s3, bucket, tmp_path)
    s3.upload(bucket, "models", MODEL_REPOSITORY / "identity_fp32")
    s3.client().put_object(Bucket=bucket, Key="models/.hidden/config.pbtxt", Body=b"")
    s3.client().put_object(Bucket=bucket, Key="models/README.md", Body=b"a loose object")
    s3.client().put_object(Bucket=bucket, Key="elsewhere/other/config.pbtxt", Body=b"")
    assert mirror.model_names() == ["identity_fp32", "simple"]
    assert not (tmp_path / "identity_fp32").exists()  # listed, not fetched
    s3.client().delete_object(Bucket=bucket, Key="models/simple/config.pbtxt")
    s3.client().delete_object(Bucket=bucket, Key="models/simple/1/model.py")
    assert mirror.model_names() == ["identity_fp32"]
    assert (tmp_path / "simple").is_dir()  # the mirror is left as it was


def test_model_names_stops_reading_at_the_entry_bound(s3, bucket, tmp_path, monkeypatch):
    client = s3.client()
    for number in range(12):
        client.put_object(Bucket=bucket, Key=f"models/m{number:02d}/config.pbtxt", Body=b"")
    mirror = _mirror(s3, bucket, tmp_path)
    assert len(mirror.model_names()) == 13
    monkeypatch.setattr("modelplatform_storage.filesystems.MAX_TOP_LEVEL_ENTRIES", 5)
    assert mirror.model_names() == ["m00", "m01", "m02", "m03", "m04"]


def test_model_names_names_the_url_when_the_bucket_is_gone(s3, bucket, tmp_path):
    mirror = _mirror(s3, bucket, tmp_path)
    client = s3.client()
    for item in client.list_objects_v2(Bucket=bucket)["Contents"]:
        client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)
    with pytest.raises(Unavailable, match=f"{bucket}.*bucket '{bucket}' does not exist"):
        mirror.model_names()
