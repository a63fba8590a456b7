"""The reflection plugin's one option: on (the default, as TF Serving) or off."""

from __future__ import annotations

from modelplatform import Option, Settings

PLUGIN = "reflection"

OPTIONS = (
    Option("enabled", bool, True, flags=("--grpc-reflection",),
           help="Serve gRPC server reflection (v1 and v1alpha) on the gRPC port (default on)."),
)  # fmt: skip


def enabled(settings: Settings) -> bool:
    return bool(settings.options_for(PLUGIN, OPTIONS)["enabled"])
