"""torch's CPU thread pools, which are per process: the first model that sets a count wins.

As in Triton, ``INTRA_OP_THREAD_COUNT`` and ``INTER_OP_THREAD_COUNT`` are
process-wide in torch; a later model asking for another count keeps the one in
force, and the server says so (``torch_thread_count_kept``). torch fixes the
inter-op pool once parallel work has started: a count asked for after that is
reported (``torch_interop_threads_not_set``), not silently dropped. The
intra-op count is set again in each worker thread before forward, since torch
reads it per thread the first time the thread computes. Imports torch.
"""

from __future__ import annotations

import structlog
import torch

from .parameters import TorchSettings

log = structlog.get_logger("modelplatform_pytorch")

#: "intra" / "inter" -> the count in force, set by the first model that asked for one.
IN_FORCE: dict[str, int] = {}


def apply(model: str, settings: TorchSettings) -> None:
    """At load: set the pools this model asks for, unless a count is already in force."""
    if _claim(model, "intra", settings.intra_op_threads):
        torch.set_num_threads(settings.intra_op_threads)
    if _claim(model, "inter", settings.inter_op_threads):
        try:
            torch.set_num_interop_threads(settings.inter_op_threads)
        except RuntimeError as error:
            log.warning("torch_interop_threads_not_set", model=model, asked=settings.inter_op_threads,
                        kept=torch.get_num_interop_threads(), reason=str(error))  # fmt: skip


def apply_here(settings: TorchSettings) -> None:
    """Before forward, in the worker thread that runs it: the intra-op count in force."""
    if settings.intra_op_threads and (count := IN_FORCE.get("intra")):
        torch.set_num_threads(count)


def _claim(model: str, pool: str, count: int) -> bool:
    """True when ``count`` should be set now (the first to ask for this pool)."""
    if count == 0:
        return False
    kept = IN_FORCE.setdefault(pool, count)
    if kept != count:
        log.warning("torch_thread_count_kept", model=model, pool=pool, asked=count, kept=kept)
        return False
    return not _set_before(pool, count)


def _set_before(pool: str, count: int) -> bool:
    current = torch.get_num_threads() if pool == "intra" else torch.get_num_interop_threads()
    return current == count
