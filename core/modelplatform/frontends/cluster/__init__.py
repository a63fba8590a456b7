"""``platform serve --workers N``: N server processes behind the same ports.

The parent process (the supervisor) serves no requests. It starts N worker
processes, each a complete server binding the HTTP and gRPC ports with
SO_REUSEPORT (the kernel spreads new connections over them), and listens on
a unix socket in a private temporary folder through which the workers talk:

- **Model operations.** A load or unload that reaches a worker through any
  API (``ModelManager.load``/``unload``, as the repository plugin calls them)
  is applied there, then sent to the supervisor, which relays it to every
  other worker and answers once all have applied it: the caller's answer
  comes after every worker holds the same models. Uploaded model folders
  (temporary ones) are copied for each sibling first, since each worker
  deletes its own copy when done with it. Start-up loads and poll-mode
  rescans are not relayed: every worker does those itself.
- **Statistics.** A worker asked for statistics asks every sibling for its
  own counters of the same query (through the supervisor) and answers the
  sums, so clients see one server whichever worker their connection hit.
- **Readiness.** Each worker reports its own readiness when it changes; the
  supervisor tells all workers whether every one of them is ready, and a
  worker reports itself not ready (a drain reason) until they all are.

Messages are typed (wire.py) and travel over ``multiprocessing.connection``,
authenticated with a key generated per supervisor (channel.py says how the
blocking connection meets asyncio). A worker that exits stops the whole
server (no silent half-service).

Modules: ``wire`` (the messages), ``channel`` (one connection, bridged to
asyncio), ``listener`` (the supervisor accepting workers), ``relay`` (the
supervisor routing messages), ``supervisor`` (worker processes), ``link``
(a worker asking its siblings), ``member`` (a worker answering them).
"""

from modelplatform.frontends.cluster.link import SiblingLink
from modelplatform.frontends.cluster.member import WAITING, Member
from modelplatform.frontends.cluster.supervisor import Supervisor
from modelplatform.frontends.cluster.wire import ClusterAddress

__all__ = ["WAITING", "ClusterAddress", "Member", "SiblingLink", "Supervisor"]
