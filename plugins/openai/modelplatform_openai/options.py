"""The openai plugin's one option: the path prefix its API is served under.

``/openai/v1`` by default (KServe's choice): ``/v1/models/...`` belongs to
TF Serving's REST API. ``/v1`` (the prefix the OpenAI SDK's examples use)
may be configured where TF Serving REST is not loaded (routes.py refuses
the clash at start-up, naming it).
"""

from __future__ import annotations

from modelplatform import InvalidArgument, Option, PluginError, ServerContext, Settings

PLUGIN = "openai"
DEFAULT_PREFIX = "/openai/v1"
#: The dialect whose routes own ``/v1``: TF Serving's REST API.
TFSERVING_REST = "tfserving-rest"


def check_prefix(prefix: str) -> None:
    if not prefix.startswith("/") or prefix.endswith("/") or "{" in prefix or "}" in prefix:
        raise InvalidArgument(
            f"openai prefix {prefix!r} must be a static absolute path without a trailing slash "
            "(e.g. /openai/v1 or /v1)"
        )


OPTIONS = (
    Option(
        "prefix",
        str,
        DEFAULT_PREFIX,
        "Path prefix of the OpenAI-compatible API (default /openai/v1; /v1 where TF Serving REST "
        "is not loaded).",
        check_prefix,
        metavar="<path>",
    ),
)


def prefix_of(settings: Settings) -> str:
    prefix = str(settings.options_for(PLUGIN, OPTIONS)["prefix"])
    check_prefix(prefix)
    return prefix


def refuse_tfserving_clash(prefix: str, context: ServerContext) -> None:
    """``/v1`` is TF Serving's: the router would refuse the clash; say why, and what to do."""
    owns_v1 = prefix == "/v1" or prefix.startswith("/v1/")
    if owns_v1 and TFSERVING_REST in context.dialects:
        raise PluginError(
            f"openai: prefix '{prefix}' clashes with TF Serving REST's /v1 routes ('{TFSERVING_REST}' is "
            "loaded, and the router refuses clashing routes); keep the default /openai/v1, or disable "
            f"'{TFSERVING_REST}' (--disable-plugin {TFSERVING_REST})"
        )
