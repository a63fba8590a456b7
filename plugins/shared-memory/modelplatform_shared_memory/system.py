"""One system shared-memory region: a POSIX shared-memory object mapped into this process.

The client creates the object (``shm_open``) and registers ``key``, ``offset``
and ``byte_size``; the server maps exactly that window, read-write (outputs
are written into it). Keys are checked before anything is opened: a POSIX
name (``/name``, no other slash), not ``.``/``..``, not under the reserved
prefix, opened without following links, and only a regular object whose size
covers the window.

The mapping lives as long as something refers to it: the registry while the
region is registered, and every array or view a request took of it. So
unregistering drops the registry's reference at once and the mapping goes
when the last request using it ends (CPython frees the ``mmap`` object, which
unmaps it and closes its descriptor, when its last reference goes).
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from dataclasses import dataclass

from modelplatform import InvalidArgument

#: Where Linux keeps POSIX shared-memory objects (what shm_open(3) opens).
SHM_DIR = "/dev/shm"
#: Keys the server keeps for its own regions; clients may not register them.
RESERVED_PREFIX = "/modelplatform"
#: NAME_MAX: the longest file name, so the longest key is one more (its slash).
MAX_KEY_LENGTH = 256
_KEY = re.compile(r"/[^/\x00]+")


def check_key(region: str, key: str) -> None:
    """Refuse a key that is not a plain POSIX shared-memory name, naming the region."""
    if not isinstance(key, str) or not _KEY.fullmatch(key) or key in ("/.", "/.."):
        raise InvalidArgument(
            f"shared memory region '{region}': key {key!r} is not a POSIX shared memory name "
            "('/name' with no other slash)"
        )
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidArgument(
            f"shared memory region '{region}': key is {len(key)} characters, over {MAX_KEY_LENGTH}"
        )
    if key.startswith(RESERVED_PREFIX):
        raise InvalidArgument(
            f"shared memory region '{region}': keys starting with '{RESERVED_PREFIX}' are reserved"
        )


@dataclass(frozen=True, slots=True)
class SystemRegion:
    """A registered window of a shared-memory object, mapped read-write."""

    name: str
    key: str
    offset: int
    byte_size: int
    mapping: mmap.mmap
    #: Where the window starts inside ``mapping`` (mappings start at a page boundary).
    start: int

    def view(self, offset: int, size: int, what: str) -> memoryview:
        """``size`` bytes at ``offset`` into the window; refused if they reach past it."""
        if offset < 0 or size < 0 or offset + size > self.byte_size:
            raise InvalidArgument(
                f"{what}: {size} bytes at offset {offset} are outside shared memory region "
                f"'{self.name}' ({self.byte_size} bytes)"
            )
        self._check_not_shrunk(what)
        begin = self.start + offset
        return memoryview(self.mapping)[begin : begin + size]

    def _check_not_shrunk(self, what: str) -> None:
        """A client that truncated its object would make a read fault (SIGBUS): refuse instead."""
        if self.mapping.size() < self.offset + self.byte_size:
            raise InvalidArgument(
                f"{what}: the object behind shared memory region '{self.name}' shrank below "
                "the registered size"
            )


def open_region(name: str, key: str, offset: int, byte_size: int) -> SystemRegion:
    """Map ``byte_size`` bytes at ``offset`` of the object ``key``; 400s name the region."""
    check_key(name, key)
    if not _is_int(offset) or offset < 0:
        raise InvalidArgument(f"shared memory region '{name}': offset must be a non-negative integer")
    if not _is_int(byte_size) or byte_size <= 0:
        raise InvalidArgument(f"shared memory region '{name}': byte_size must be a positive integer")
    descriptor = _open(name, key)
    try:
        _check_object(name, key, descriptor, offset, byte_size)
        start = offset % mmap.ALLOCATIONGRANULARITY
        mapping = mmap.mmap(descriptor, start + byte_size, offset=offset - start)
    except OSError as error:
        raise InvalidArgument(
            f"shared memory region '{name}': cannot map '{key}': {error.strerror}"
        ) from None
    finally:
        os.close(descriptor)  # the mapping keeps its own duplicate
    return SystemRegion(name, key, offset, byte_size, mapping, start)


def _open(name: str, key: str) -> int:
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        return os.open(os.path.join(SHM_DIR, key[1:]), flags)
    except OSError:
        raise InvalidArgument(
            f"shared memory region '{name}': Unable to open shared memory region: '{key}'"
        ) from None


def _check_object(name: str, key: str, descriptor: int, offset: int, byte_size: int) -> None:
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        raise InvalidArgument(f"shared memory region '{name}': '{key}' is not a shared memory object")
    if offset + byte_size > info.st_size:
        raise InvalidArgument(
            f"shared memory region '{name}': offset {offset} + byte_size {byte_size} is beyond "
            f"the end of '{key}' ({info.st_size} bytes)"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
