"""The remote side through fsspec: open a filesystem, list a folder, fetch one file.

fsspec is imported here, on the first remote URL, never when the plugin
loads; fsspec imports s3fs, gcsfs or adlfs only for their own scheme, so a
missing optional library is reported for the URL that needs it.
"""

from __future__ import annotations

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


def open_filesystem(location: Location, env: Mapping[str, str]) -> Any:
    """An fsspec filesystem for ``location``, credentials from the library's chain."""
    import fsspec  # noqa: PLC0415 - only for a remote repository

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
        relative = name[len(prefix):]
        if relative and not relative.endswith("/"):  # "folder/" marker objects hold nothing
            listing[relative] = _described(info)
    return listing


def fetch_file(fs: Any, remote: str, local: Path) -> None:
    """Download ``remote`` to ``local`` whole or not at all (a loader never reads half a file)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    partial = local.with_name(f".{local.name}.part")  # hidden: repository scans skip it
    try:
        fs.get_file(remote, str(partial))
        os.replace(partial, local)
    finally:
        partial.unlink(missing_ok=True)


def _described(info: Mapping[str, Any]) -> RemoteFile:
    """ETag, size and modification time under the names s3fs, gcsfs and adlfs give them."""
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or ""
    modified = info.get("LastModified") or info.get("updated") or info.get("last_modified") or ""
    return RemoteFile(str(etag), int(info.get("size") or 0), str(modified))
