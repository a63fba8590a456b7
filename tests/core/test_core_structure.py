"""No import circle in the core: what runs when a core module is imported never comes back to it.

Counted: the imports that run on import (not ``if TYPE_CHECKING:`` blocks, not
imports inside functions). The core defers a few imports so that importing a
module loads no transport or server: model_config's reader (protobuf loads
when a configuration is first read), the gRPC helpers of the plugin-author
API, the CLI's server. Which layer may import which, every import counted,
is test_layers.py's rule.
"""

from __future__ import annotations

from pathlib import Path

import modelplatform

from ..import_graph import cycles, import_graph

CORE = Path(modelplatform.__file__).parent


def test_no_import_circle_in_the_core():
    graph = import_graph(CORE, module_level=True)
    graph.pop("modelplatform")  # the package facade imports everything and nothing imports it back
    for targets in graph.values():
        targets.discard("modelplatform")
    assert cycles(graph) == []


def test_hookspecs_import_no_server_module_not_even_for_types():
    graph = import_graph(CORE)  # every import: type-checking blocks and deferred ones too
    reached, pending = set(), ["modelplatform.hookspecs"]
    while pending:
        for target in graph[pending.pop()] - reached:
            reached.add(target)
            pending.append(target)
    servers = {
        "modelplatform.composition.server",
        "modelplatform.frontends.grpc_server",
        "modelplatform.frontends.http",
    }
    assert not reached & servers and not any(m.startswith("modelplatform.frontends.http.") for m in reached)
