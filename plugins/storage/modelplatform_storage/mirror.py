"""A local mirror of a remote repository: the ``RepositorySource`` the core loads from.

The mirror remembers what each local file was copied from (ETag, size and
modification time, in a hidden manifest beside the models). Bringing a folder
in step lists the remote side and compares the listings: only new or changed
objects are downloaded, files whose object is gone are deleted. A kept
mirror (``TRITON_AWS_MOUNT_DIRECTORY``) keeps its manifest, so a restart
downloads only what changed. Several processes may share one mirror (the
workers of ``--workers N``): each change happens under a lock on the folder,
after re-reading the manifest another process may have written. The index
asks for the bucket's model folders (``model_names``) without touching the mirror.

Before anything is downloaded, a sync checks that it fits: within
``mirror_max_bytes`` when the operator set one, and within the free space of
the mirror's disk always. One that does not fit downloads nothing and fails
with the sizes, rather than filling the disk and failing half-way.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path, PurePosixPath
from typing import Any

import structlog

from modelplatform import Unavailable

from .failures import described
from .filesystems import (
    MAX_TOP_LEVEL_ENTRIES,
    Listing,
    RemoteFile,
    fetch_file,
    list_files,
    top_level_folders,
)
from .locations import Location

log = structlog.get_logger("modelplatform_storage")

#: The manifest: hidden, so repository scans and fingerprints never see it.
MANIFEST = ".modelplatform-mirror.json"
#: Locked while a process changes the mirror (processes sharing it take turns).
LOCK = ".modelplatform-mirror.lock"


class BucketMirror:
    """Keeps ``local_root`` in step with ``location``; every method may block on the network."""

    def __init__(
        self, location: Location, fs: Any, local_root: Path, owned: bool, max_bytes: int = 0
    ) -> None:
        self.location = location.url
        self._where = location
        self._fs = fs
        self._root = local_root
        #: A temporary folder this mirror made (deleted by close()); a given one is kept.
        self._owned = owned
        #: The most the mirror may hold, in bytes (``mirror_max_bytes``); 0: the disk's free space.
        self._max_bytes = max_bytes
        self._lock = threading.Lock()  # one sync at a time: loads and polls share the folder
        self._manifest: dict[str, RemoteFile] = {}
        if owned:
            atexit.register(self.close)  # should the server stop without reaching close()

    @property
    def local_root(self) -> Path:
        return self._root

    def refresh(self) -> None:
        """Every model folder in step with the bucket; refuses a path holding no objects."""
        listing = self._listed("")
        if not listing:  # as Triton: a path holding nothing is refused (a typo), never served empty
            raise Unavailable(f"{self.location}: no objects under this path (empty or mistyped)")
        self._sync(listing, scope="")

    def fetch_model(self, name: str) -> None:
        """``name``'s folder in step with the bucket (deleted when the bucket holds none)."""
        self._sync(self._listed(name), scope=name)

    def model_names(self) -> list[str]:
        """The model folders the bucket holds now (one listing, bounded); hidden ones left out."""
        with self._described_errors():
            names, cut = top_level_folders(self._fs, self._where.root)
        if cut:
            log.warning("repository_listing_truncated", url=self.location,
                        entries=MAX_TOP_LEVEL_ENTRIES, models=len(names))  # fmt: skip
        return sorted({name for name in names if name and not name.startswith(".")})

    def close(self) -> None:
        if self._owned and self._root.exists():
            shutil.rmtree(self._root, ignore_errors=True)
            log.debug("repository_mirror_removed", path=str(self._root))

    def _listed(self, scope: str) -> Listing:
        folder = f"{self._where.root}/{scope}" if scope else self._where.root
        with self._described_errors():
            listing = list_files(self._fs, folder)
        prefix = f"{scope}/" if scope else ""
        return {prefix + path: info for path, info in listing.items() if _safe(prefix + path)}

    def _sync(self, listing: Listing, scope: str) -> None:
        with self._lock, _locked(self._root / LOCK):
            self._manifest = _read_manifest(self._root / MANIFEST)
            stale = [p for p in self._manifest if _within(p, scope) and p not in listing]
            wanted = [p for p, info in listing.items() if self._changed(p, info)]
            self._check_room(listing, wanted, stale, scope)
            try:
                for path in wanted:
                    self._fetch(path, listing[path])
                for path in stale:
                    self._forget(path)
            finally:  # what was fetched before a failure is not fetched again
                if wanted or stale:
                    _write_manifest(self._root / MANIFEST, self._manifest)
            if wanted or stale:
                log.info("repository_mirrored", url=self.location, scope=scope or "*",
                         fetched=len(wanted), removed=len(stale))  # fmt: skip

    def _check_room(self, listing: Listing, wanted: list[str], stale: list[str], scope: str) -> None:
        """Refuse a sync that would pass ``mirror_max_bytes`` or the free space of the disk."""
        incoming = sum(listing[path].size for path in wanted)
        if not incoming:
            return
        what = f"model '{scope}'" if scope else "the repository"
        if self._max_bytes:
            leaving = sum(self._manifest[path].size for path in {*wanted, *stale} if path in self._manifest)
            held = sum(info.size for info in self._manifest.values())
            after = held - leaving + incoming
            if after > self._max_bytes:
                raise Unavailable(
                    f"{self.location}: fetching {what} ({incoming} bytes) would make the mirror "
                    f"{after} bytes, over mirror_max_bytes ({self._max_bytes})"
                )
        free = shutil.disk_usage(self._root).free
        if incoming > free:
            raise Unavailable(
                f"{self.location}: fetching {what} needs {incoming} bytes, "
                f"{free} bytes are free in {self._root}"
            )

    def _changed(self, path: str, info: RemoteFile) -> bool:
        return self._manifest.get(path) != info or not (self._root / path).is_file()

    def _fetch(self, path: str, info: RemoteFile) -> None:
        with self._described_errors():
            fetch_file(self._fs, f"{self._where.root}/{path}", self._root / path)
        self._manifest[path] = info

    @contextlib.contextmanager
    def _described_errors(self) -> Iterator[None]:
        """Every library error as one line naming the URL (failures.py)."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - every library error becomes one line
            raise described(error, self.location, self._where.bucket) from None

    def _forget(self, path: str) -> None:
        local = self._root / path
        local.unlink(missing_ok=True)
        del self._manifest[path]
        for parent in local.parents:  # empty folders left behind go too (a removed version)
            if parent == self._root:
                break
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` held by this process (released if the process dies)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _within(path: str, scope: str) -> bool:
    return not scope or path.startswith(scope + "/")


def _safe(path: str) -> bool:
    """A key that stays inside the mirror (no '..', no absolute path); others are skipped."""
    parts = PurePosixPath(path).parts
    if path.startswith("/") or any(part in ("..", ".") for part in parts) or "\\" in path:
        log.warning("repository_object_skipped", key=path, reason="escapes the repository folder")
        return False
    return True


def _read_manifest(path: Path) -> dict[str, RemoteFile]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {key: RemoteFile(**value) for key, value in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}  # none yet, or unreadable: every file is fetched again


def _write_manifest(path: Path, manifest: dict[str, RemoteFile]) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps({k: asdict(v) for k, v in manifest.items()}), encoding="utf-8")
    partial.replace(path)
