"""The remote side through fsspec: open a filesystem, list a folder (or its top level), fetch a file.

fsspec is imported here, on the first remote URL, never when the plugin
loads; fsspec imports s3fs, gcsfs or adlfs only for their own scheme, so a
missing optional library is reported for the URL that needs it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplatform import Unsupported

from .credentials import storage_options
from .locations import Location


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """What a listing says about one object: enough to see that it changed without reading it."""

    etag: str
    size: int
    modified: str


#: Relative path (``model/1/model.onnx``) -> what the listing says about it.
Listing = dict[str, RemoteFile]

#: Most entries (folders and loose objects) one listing of a repository's top level reads:
#: ten S3 pages of 1000. A repository holding more is listed up to here.
MAX_TOP_LEVEL_ENTRIES = 10_000


def open_filesystem(location: Location, env: Mapping[str, str]) -> Any:
    """An fsspec filesystem for ``location``, credentials from the library's chain."""
    import fsspec  # only for a remote repository

    try:
        return fsspec.filesystem(location.protocol, **storage_options(location, env))
    except ImportError:
        raise Unsupported(
            f"{location.url}: {location.scheme}:// needs "
            f"pip install 'modelplatform-storage[{location.extra}]'"
        ) from None


def list_files(fs: Any, folder: str) -> Listing:
    """Every object under ``folder`` (``bucket/path``), by path relative to it."""
    fs.invalidate_cache()  # a poll must see the bucket as it is now
    found = fs.find(folder, detail=True)
    prefix = folder.rstrip("/") + "/"
    listing: Listing = {}
    for name, info in found.items():
        if info.get("type", "file") != "file" or not name.startswith(prefix):
            continue
        relative = name[len(prefix) :]
        if relative and not relative.endswith("/"):  # "folder/" marker objects hold nothing
            listing[relative] = _described(info)
    return listing


def top_level_folders(fs: Any, folder: str) -> tuple[list[str], bool]:
    """The names of the folders directly under ``folder``, and whether the listing
    stopped at :data:`MAX_TOP_LEVEL_ENTRIES` entries (more may be there).

    S3 is read page by page and left after the bound; other stores are read
    by one fsspec listing (their library pages through it) and cut at the bound.
    """
    fs.invalidate_cache()
    if "s3" in _protocols(fs):
        import fsspec.asyn  # only for a remote repository

        return fsspec.asyn.sync(fs.loop, _s3_top_level, fs, folder, MAX_TOP_LEVEL_ENTRIES)
    entries = fs.ls(folder, detail=True)
    kept = entries[:MAX_TOP_LEVEL_ENTRIES]
    names = [_base(entry["name"]) for entry in kept if entry.get("type") == "directory"]
    return names, len(entries) > len(kept)


async def _s3_top_level(fs: Any, folder: str, limit: int) -> tuple[list[str], bool]:
    """s3fs's delimited listing, read lazily: pages after ``limit`` entries are never asked for."""
    from botocore.exceptions import ClientError  # s3fs's dependency
    from s3fs.errors import translate_boto_error

    bucket, key, _ = fs.split_path(folder)
    prefix = key.rstrip("/") + "/" if key else ""
    names: list[str] = []
    seen = 0
    pages = fs._iterdir(bucket, prefix=prefix, delimiter="/")  # s3fs's async API
    try:
        async with contextlib.aclosing(pages):
            async for entry in pages:
                seen += 1
                if entry["type"] == "directory":
                    names.append(_base(entry["name"]))
                if seen >= limit:
                    return names, True
    except ClientError as error:  # an S3 error code as the OSError s3fs's own calls raise
        raise translate_boto_error(error) from None
    return names, False


def fetch_file(fs: Any, remote: str, local: Path) -> None:
    """Download ``remote`` to ``local`` whole or not at all (a loader never reads half a file)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    partial = local.with_name(f".{local.name}.part")  # hidden: repository scans skip it
    try:
        fs.get_file(remote, str(partial))
        os.replace(partial, local)
    finally:
        partial.unlink(missing_ok=True)


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _base(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1]


def _described(info: Mapping[str, Any]) -> RemoteFile:
    """ETag, size and modification time under the names s3fs, gcsfs and adlfs give them."""
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or ""
    modified = info.get("LastModified") or info.get("updated") or info.get("last_modified") or ""
    return RemoteFile(str(etag), int(info.get("size") or 0), str(modified))
