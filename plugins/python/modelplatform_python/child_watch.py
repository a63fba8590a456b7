"""Waiting for a child's reply within its bounds: the execute timeout and the memory bound.

The instance's own thread does the waiting (child_process.py), so watching
costs no extra thread: it waits on the pipe in slices and, between slices,
reads the child's resident set size (RSS) from ``/proc/<pid>/statm``
through a descriptor kept open (one ``pread``, a few microseconds). A call
that answers at once pays one ``poll`` more than an unwatched call.

The memory is sampled, not capped: a child that allocates faster than one
slice (:data:`SAMPLE_S`) can overshoot its bound by what it allocated in
that time before it is killed.
"""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection

from .child_wire import Reply
from .faults import ChildFault
from .limits import EXECUTE_TIMEOUT, MAX_MEMORY, MiB, ProcessLimits

#: How often a running call's child has its memory read.
SAMPLE_S = 0.05
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


class ResidentMemory:
    """A child's RSS, read from an open ``/proc/<pid>/statm``; close it when the child goes."""

    def __init__(self, pid: int) -> None:
        self._fd: int | None = os.open(f"/proc/{pid}/statm", os.O_RDONLY)

    def bytes(self) -> int:
        """The RSS now; 0 once the child is gone."""
        if self._fd is None:
            return 0
        try:
            fields = os.pread(self._fd, 128, 0).split()
        except OSError:  # the process has exited (ESRCH)
            return 0
        return int(fields[1]) * _PAGE_BYTES if len(fields) > 1 else 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def memory_readable() -> bool:
    """Whether this system shows a process's RSS where :class:`ResidentMemory` reads it."""
    return os.path.exists(f"/proc/{os.getpid()}/statm")


def over_memory(memory: ResidentMemory | None, limits: ProcessLimits) -> str | None:
    """Why the child must go, when it is over its bound; else None."""
    if memory is None or limits.max_memory_bytes is None:
        return None
    resident = memory.bytes()
    if resident <= limits.max_memory_bytes:
        return None
    return (
        f"its process grew to {resident // MiB} MiB, past its bound of "
        f"{limits.max_memory_mib} MiB ({MAX_MEMORY})"
    )


def wait_reply(conn: Connection, limits: ProcessLimits, memory: ResidentMemory | None) -> Reply:
    """The child's reply; raises :class:`ChildFault` past a bound, EOFError if it died."""
    timeout = limits.execute_timeout_s
    if timeout is None and memory is None:
        return conn.recv()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if conn.poll(_next_wait(deadline, memory)):
            return conn.recv()  # a reply, or EOFError when the child died
        fault = over_memory(memory, limits)
        if fault is not None:
            raise ChildFault(f"{fault}, and was killed")
        if deadline is not None and time.monotonic() >= deadline:
            raise ChildFault(
                f"its process did not answer within {timeout:g} s ({EXECUTE_TIMEOUT}) and was killed"
            )


def _next_wait(deadline: float | None, memory: ResidentMemory | None) -> float | None:
    """Until the next memory sample or the deadline, whichever comes first."""
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    if memory is None:
        return left
    return SAMPLE_S if left is None else min(SAMPLE_S, left)
