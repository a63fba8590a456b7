"""grpc core's experiments the server runs with, set before grpc is imported.

grpc core reads ``GRPC_EXPERIMENTS`` once, when ``import grpc`` initialises
it, so this runs from this package's ``__init__``, ahead of every module that
imports grpc; an operator's own ``GRPC_EXPERIMENTS`` wins. A process that
imported grpc before this package keeps grpc's defaults (harmless: slower
small calls, not different answers).

``-event_engine_listener``: with grpc's EventEngine listener, a call's bytes
are read on grpc's ``event_engine`` threads, which then wake the completion
queue's poller thread, which wakes the event loop. Without it the poller
thread reads the socket itself: one thread wake-up less per call, worth
15-25 % on small calls one at a time (docs/performance.md, "One gRPC call at
a time").
"""

from __future__ import annotations

import os

GRPC_EXPERIMENTS = "-event_engine_listener"


def use_grpc_experiments(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Set ``GRPC_EXPERIMENTS`` unless the operator did."""
    environ.setdefault("GRPC_EXPERIMENTS", GRPC_EXPERIMENTS)
