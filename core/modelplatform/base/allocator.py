"""glibc malloc settings for a long-running server that handles large request buffers.

Two glibc defaults make a server's resident memory climb for many minutes
under mixed traffic and never come back (measured with ``make soak``):

- the mmap threshold is *dynamic*: after a large buffer (a multi-MiB request
  body or tensor) is freed, glibc raises the threshold so later buffers of that
  size come from the heap, where freed space stays resident and fragments;
- every thread that allocates may get its own arena (up to 8 per core), and
  each keeps its own high-water mark.

``platform serve`` fixes the threshold at 1 MiB (larger buffers are always
mapped and unmapped, which costs a syscall next to copying a MiB) and caps the
arenas at 2, the values operators usually set through ``MALLOC_MMAP_THRESHOLD_``
and ``MALLOC_ARENA_MAX``. A fixed mmap threshold also fixes glibc's trim
threshold at 128 KiB, so the heap was given back and faulted in again on every
large gRPC call (grpc's many small slice buffers): a 16 MiB ``identity_fp32``
call cost 41 ms of server CPU, 23 ms with the trim threshold at 64 MiB
(``MALLOC_TRIM_THRESHOLD_``), which keeps at most 64 MiB of free heap resident.
An operator who sets any of these variables keeps theirs.
The variables are also exported so worker processes start with the same
settings. Nothing happens off glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import structlog

log = structlog.get_logger("modelplatform.base.allocator")

#: glibc's mallopt parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
#: Variable name, mallopt parameter, value: what the server uses unless the operator chose.
SETTINGS = (
    ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, 1 << 20),
    ("MALLOC_ARENA_MAX", M_ARENA_MAX, 2),
    ("MALLOC_TRIM_THRESHOLD_", M_TRIM_THRESHOLD, 64 << 20),
)


def tune_allocator() -> None:
    """Apply SETTINGS to this process and its future children, where glibc and the operator allow."""
    libc = _glibc()
    if libc is None:
        return
    for variable, parameter, value in SETTINGS:
        if variable in os.environ:
            continue  # the operator's choice; glibc read it at start-up
        os.environ[variable] = str(value)  # inherited by worker processes
        if not libc.mallopt(parameter, value):
            log.warning("allocator_setting_refused", setting=variable, value=value)


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name or not os.uname().sysname == "Linux":
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version"):
        return None  # musl and others: no mallopt of this kind
    return libc
