"""Scoped API keys, read from a TOML (or, by suffix, JSON) file and re-read when it changes.

The file lists ``keys``, each with ``name``, ``sha256`` (hex SHA-256 of the
key's UTF-8 text), ``categories`` and optionally ``models``. Only hashes are
stored; a presented key is hashed and compared with every entry in constant
time (hmac.compare_digest). The file is checked for changes at most once per
``poll_secs``, on the request path (each worker process checks its own
copy): a broken new file keeps the keys already loaded and logs an error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from modelplatform.base.access.categories import CATEGORIES, unknown_categories
from modelplatform.base.errors import InvalidArgument

log = structlog.get_logger("modelplatform.base.access")

#: Longest key text hashed: headers are bounded already; this bounds the hashing too.
MAX_KEY_CHARS = 4096
#: Largest key file read (a key file is a few lines per key).
MAX_FILE_BYTES = 4 * 1024 * 1024
_FIELDS = frozenset({"name", "sha256", "categories", "models"})


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key as the file names it: never the key itself, only its hash."""

    name: str
    digest: bytes
    categories: frozenset[str]
    #: The models it may use; None: every model.
    models: frozenset[str] | None = None

    def allows_model(self, model: str) -> bool:
        return self.models is None or model in self.models


def key_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def load_keys(path: Path) -> tuple[ApiKey, ...]:
    """Every key the file lists; InvalidArgument saying what is wrong (never a key or hash)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InvalidArgument(f"API keys file {path} is larger than {MAX_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgument(f"API keys file {path}: {error}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise InvalidArgument(f"API keys file {path}: {error}") from None
    return parse_keys(data, str(path))


def parse_keys(data: Any, source: str) -> tuple[ApiKey, ...]:
    entries = data.get("keys") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise InvalidArgument(f"API keys file {source}: needs a list 'keys' ([[keys]] in TOML)")
    keys = tuple(_entry(entry, number, source) for number, entry in enumerate(entries, 1))
    _refuse_duplicates(keys, source)
    return keys


def _entry(entry: Any, number: int, source: str) -> ApiKey:
    where = f"API keys file {source}, key {number}"
    if not isinstance(entry, Mapping):
        raise InvalidArgument(f"{where}: must be a table")
    unknown = set(entry) - _FIELDS
    if unknown:  # a typo such as 'model' must not silently widen a key's scope
        raise InvalidArgument(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"{where}: 'name' must be a non-empty string")
    where = f"API keys file {source}, key '{name}'"
    return ApiKey(name, _digest(entry.get("sha256"), where), _categories(entry.get("categories"), where),
                  _models(entry.get("models"), where))  # fmt: skip


def _digest(value: Any, where: str) -> bytes:
    if not isinstance(value, str) or len(value) != 64:
        raise InvalidArgument(f"{where}: 'sha256' must be 64 hex digits (SHA-256 of the key)")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise InvalidArgument(f"{where}: 'sha256' must be 64 hex digits (SHA-256 of the key)") from None


def _categories(value: Any, where: str) -> frozenset[str]:
    if not _strings(value) or not value:
        raise InvalidArgument(f"{where}: 'categories' must be a non-empty list of API names")
    unknown = unknown_categories(value)
    if unknown:
        raise InvalidArgument(f"{where}: unknown API '{unknown[0]}' (known: {', '.join(CATEGORIES)})")
    return frozenset(value)


def _models(value: Any, where: str) -> frozenset[str] | None:
    if value is None:
        return None
    if not _strings(value) or not all(value):
        raise InvalidArgument(f"{where}: 'models' must be a list of model names")
    return frozenset(value)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _refuse_duplicates(keys: Iterable[ApiKey], source: str) -> None:
    names: set[str] = set()
    digests: set[bytes] = set()
    for key in keys:
        if key.name in names:
            raise InvalidArgument(f"API keys file {source}: two keys are named '{key.name}'")
        if key.digest in digests:
            raise InvalidArgument(f"API keys file {source}: key '{key.name}' has the hash of another key")
        names.add(key.name)
        digests.add(key.digest)


def _signature(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file is rewritten or replaced (a mounted secret swaps a link)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


class KeyFile:
    """The keys of one file, re-read when its mtime, size or inode changes."""

    def __init__(self, path: Path, poll_secs: float = 1.0) -> None:
        self.path = path
        self._poll_secs = poll_secs
        self._signature = _signature(path)
        self._keys = load_keys(path)
        self._next_check = time.monotonic() + poll_secs
        self._lock = threading.Lock()  # gRPC and HTTP share it; reloads happen once

    def find(self, presented: str) -> ApiKey | None:
        """The key whose hash matches; every entry is compared, so timing says nothing."""
        if not presented or len(presented) > MAX_KEY_CHARS:
            return None
        digest = key_digest(presented)
        found = None
        for key in self._current():
            if hmac.compare_digest(key.digest, digest):
                found = key
        return found

    def _current(self) -> tuple[ApiKey, ...]:
        if time.monotonic() >= self._next_check:
            self._reload_if_changed()
        return self._keys

    def _reload_if_changed(self) -> None:
        with self._lock:
            self._next_check = time.monotonic() + self._poll_secs
            signature = _signature(self.path)
            if signature == self._signature:
                return
            self._signature = signature  # a broken file is reported once, not every poll
            try:
                self._keys = load_keys(self.path)
            except InvalidArgument as error:
                log.error("api_keys_reload_failed", path=str(self.path), error=error.message,
                          kept=len(self._keys))  # fmt: skip
                return
            log.info("api_keys_reloaded", path=str(self.path), keys=len(self._keys))
