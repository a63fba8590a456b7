"""The local mirror against a real S3-compatible server (moto, IAM auth on): what a refresh changes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform import InvalidArgument, Unavailable
from modelplatform_storage.cache import MAX_BYTES_VARIABLE, mirror_max_bytes, open_mirror
from modelplatform_storage.locations import parse
from tests.conftest import MODEL_REPOSITORY
from tests.plugins.storage.s3_server import MotoServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def keys(s3: MotoServer, monkeypatch) -> None:
    """The server's keys where botocore's chain finds them: the process environment."""
    for name, value in s3.keys.env().items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def bucket(s3: MotoServer) -> str:
    return s3.bucket_holding("mirror", MODEL_REPOSITORY / "simple")


def _mirror(s3: MotoServer, bucket: str, tmp_path, options: dict | None = None, **env: str):
    url = f"s3://127.0.0.1:{s3.port}/{bucket}/models"
    environment = {**s3.keys.env(), "TRITON_AWS_MOUNT_DIRECTORY": str(tmp_path), **env}
    return open_mirror(parse(url), environment, options=options)


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


def _model_files(root: Path) -> list[str]:
    """What the mirror holds for models (its hidden manifest and lock left out)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and not p.name.startswith("."))  # fmt: skip


def _simple_bytes() -> int:
    return sum(p.stat().st_size for p in (MODEL_REPOSITORY / "simple").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts)  # fmt: skip


def test_a_repository_over_mirror_max_bytes_is_refused_before_any_download(s3, bucket, tmp_path):
    with pytest.raises(Unavailable, match=r"over mirror_max_bytes \(100\)") as refused:
        _mirror(s3, bucket, tmp_path, {"mirror_max_bytes": 100})
    assert f"the repository ({_simple_bytes()} bytes)" in str(refused.value)
    assert _model_files(tmp_path) == []


def test_a_model_that_would_pass_the_bound_is_not_fetched_and_the_others_stay(s3, bucket, tmp_path):
    mirror = _mirror(s3, bucket, tmp_path, {"mirror_max_bytes": _simple_bytes() + 1000})
    held = _model_files(tmp_path)
    s3.upload(bucket, "models", MODEL_REPOSITORY / "simple",
              files={"models/big/1/model.py": b"#" * 5000, "models/big/config.pbtxt": b"name: 'big'"})  # fmt: skip
    with pytest.raises(Unavailable, match="fetching model 'big' .* over mirror_max_bytes"):
        mirror.fetch_model("big")
    assert _model_files(tmp_path) == held and held
    s3.client().put_object(Bucket=bucket, Key="models/simple/config.pbtxt", Body=b"# changed\n")
    mirror.fetch_model("simple")  # a change that fits is still fetched
    assert (tmp_path / "simple" / "config.pbtxt").read_bytes() == b"# changed\n"


def test_mirror_max_bytes_comes_from_the_environment_first_and_must_be_a_count_of_a_known_key():
    assert mirror_max_bytes({}, {}) == 0
    assert mirror_max_bytes({"mirror_max_bytes": 10}, {}) == 10
    assert mirror_max_bytes({"mirror_max_bytes": 10}, {MAX_BYTES_VARIABLE: "20"}) == 20
    for options, env in (({"mirror_max_bytes": -1}, {}), ({"mirror_max_bytes": True}, {}),
                         ({}, {MAX_BYTES_VARIABLE: "1GB"})):  # fmt: skip
        with pytest.raises(InvalidArgument, match="whole number of bytes"):
            mirror_max_bytes(options, env)
    with pytest.raises(InvalidArgument, match="unknown option mirror_max_byte "):
        mirror_max_bytes({"mirror_max_byte": 10}, {})


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A real 64 KiB filesystem (tmpfs) for the mirror; skipped where mounting is not allowed."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_download_bigger_than_the_free_space_is_refused_before_it_starts(s3, small_disk):
    bucket = s3.bucket_holding("disk", MODEL_REPOSITORY / "simple")
    s3.client().put_object(Bucket=bucket, Key="models/simple/1/weights.bin", Body=b"\0" * 200_000)
    with pytest.raises(Unavailable, match=r"needs \d+ bytes, \d+ bytes are free in"):
        _mirror(s3, bucket, small_disk)
    assert _model_files(small_disk) == []
