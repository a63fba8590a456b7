"""The core's own options, declared as a plugin declares its own (options.py).

Each one is a :class:`~modelplatform.base.settings.Settings` field: its type
and default are the field's; here are its flag names, help and panel. Every
core option is top level (``--http-port``, ``MODELPLATFORM_HTTP_PORT``,
``http_port = 8000``); the flags mirror ``tritonserver``'s where they overlap.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from modelplatform.base.cache_config import check_cache_config
from modelplatform.base.options import Declared, Option
from modelplatform.base.settings import Settings

#: The panels ``serve --help`` groups the core's options in (options without one go to "Options").
NETWORK, MODELS, LIMITS = "Network", "Models", "Limits"
SECURITY, OBSERVABILITY = "Security", "Observability"


def _tls(listener: str) -> list[dict[str, Any]]:
    port = {"http": "HTTP", "grpc": "gRPC"}[listener]
    mutual = f"Serve mutual TLS on the {port} port: clients need a certificate of the root cert."
    return [
        {"name": f"{listener}_use_ssl", "help": f"Serve TLS on the {port} port.", "panel": SECURITY},
        {"name": f"{listener}_use_ssl_mutual", "help": mutual, "panel": SECURITY},
        {"name": f"{listener}_server_cert", "metavar": "<pem>", "panel": SECURITY,
         "help": "Certificate (chain), PEM; re-read on change or SIGHUP."},
        {"name": f"{listener}_server_key", "metavar": "<pem>", "help": "Private key, PEM.", "panel": SECURITY},
        {"name": f"{listener}_root_cert", "metavar": "<pem>", "panel": SECURITY,
         "help": "CA certificate(s) of the clients (mutual TLS)."},
    ]  # fmt: skip


#: In ``serve --help`` order. ``name`` is the Settings field; the rest goes to :class:`Option`.
_TABLE: list[dict[str, Any]] = [
    {"name": "plugins", "flags": ("--plugins",), "repeatable": False, "metavar": "<a,b>",
     "help": "Comma-separated allow-list of plugin names."},
    {"name": "disable_plugins", "flags": ("--disable-plugin",), "metavar": "<name>",
     "help": "Plugin name to block (repeatable)."},
    {"name": "model_repository", "type": str, "flags": ("--model-repository", "--model-store"),
     "metavar": "<path>", "panel": MODELS,
     "help": "Model repository: a folder, or s3://, gs://, as:// (the storage plugin)."},
    {"name": "model_control_mode", "help": "none | poll | explicit (as Triton).", "panel": MODELS},
    {"name": "load_models", "flags": ("--load-model",), "metavar": "<model>", "panel": MODELS,
     "help": "Model to load at start; '*': all."},
    {"name": "repository_poll_secs", "help": "Rescan interval in poll mode.", "panel": MODELS},
    {"name": "strict_readiness", "help": "Ready only when all models are.", "panel": MODELS},
    {"name": "cache_config", "flags": ("--cache-config",), "metavar": "local,size=<bytes>",
     "separator": ";", "panel": MODELS, "check": check_cache_config,
     "help": "Response cache (Triton's syntax; repeatable); models opt in with response_cache."},
    {"name": "host", "flags": ("--host", "--http-address"), "help": "Address to bind.", "panel": NETWORK},
    {"name": "http_port", "help": "HTTP port (every REST dialect).", "panel": NETWORK},
    {"name": "grpc_port", "help": "gRPC port (every gRPC service).", "panel": NETWORK},
    {"name": "workers", "help": "Server processes sharing the ports.", "panel": NETWORK},
    {"name": "http_fast_lane", "help": "C-parsed fast path for hot routes.", "panel": NETWORK},
    {"name": "single_port", "help": "HTTP and gRPC (h2c) both on the HTTP port; no gRPC port.",
     "panel": NETWORK},
    {"name": "grpc_cpu_placement", "panel": NETWORK,
     "help": "auto | together | apart: the event loop and grpc's poller on one CPU (together), "
             "left to the system (apart), or whichever answers more calls (auto)."},
    {"name": "max_request_bytes", "help": "Largest request body.", "panel": LIMITS},
    {"name": "max_tensor_elements", "help": "Largest tensor element count.", "panel": LIMITS},
    {"name": "max_bytes_element", "help": "Largest BYTES element.", "panel": LIMITS},
    {"name": "grpc_max_message_bytes", "help": "gRPC message size limit; -1 lifts it.", "panel": LIMITS,
     "cli": False},
    {"name": "repository_restrict", "panel": SECURITY,
     "help": "'header:value' the repository API needs (short for model-repository:header=value "
             "on both restricted lists)."},
    {"name": "http_restricted_api", "metavar": "<apis>:<k>=<v>", "separator": ";", "panel": SECURITY,
     "help": "APIs (a,b,...) that need HTTP header <k>: <v> (repeatable; Triton's syntax)."},
    {"name": "grpc_restricted_protocol", "metavar": "<apis>:<k>=<v>", "separator": ";",
     "panel": SECURITY, "help": "APIs that need gRPC metadata triton-grpc-protocol-<k>: <v> (repeatable)."},
    {"name": "api_keys_file", "panel": SECURITY,
     "help": "TOML/JSON file of scoped API keys (hashes); re-read when it changes."},
    {"name": "api_keys_open_health", "panel": SECURITY,
     "help": "With API keys, health endpoints need none (default: open, for probes)."},
    {"name": "cors_allow_origin", "flags": ("--cors-allow-origin",), "metavar": "<origin>", "panel": SECURITY,
     "help": "Origin whose pages may call the HTTP APIs (repeatable; '*': any); none: CORS off."},
    {"name": "cors_allow_methods", "flags": ("--cors-allow-method",), "metavar": "<method>", "panel": SECURITY,
     "help": "Method a preflight may ask for (repeatable; default: the path's own)."},
    {"name": "cors_allow_headers", "flags": ("--cors-allow-header",), "metavar": "<header>", "panel": SECURITY,
     "help": "Request header a preflight may ask for (repeatable; '*': any)."},
    {"name": "cors_expose_headers", "flags": ("--cors-expose-header",), "metavar": "<header>",
     "panel": SECURITY, "help": "Response header pages may read (repeatable)."},
    {"name": "cors_allow_credentials", "panel": SECURITY,
     "help": "Pages may send cookies and HTTP authentication (not with origin '*')."},
    {"name": "cors_max_age_secs", "panel": SECURITY, "help": "Seconds a browser keeps a preflight's answer."},
    {"name": "server_name", "help": "Name the server gives in its metadata.", "panel": OBSERVABILITY,
     "cli": False},
    {"name": "model_repository_url", "help": "Set from model_repository when that is a URL.",
     "panel": MODELS, "cli": False},
    {"name": "log_verbose", "help": ">0 logs debug events.", "panel": OBSERVABILITY},
    {"name": "log_format", "help": "console | json", "panel": OBSERVABILITY},
    {"name": "http_request_timeout_secs", "panel": LIMITS,
     "help": "Most seconds a client may stay silent while sending a request (408); 0 = none."},
    {"name": "http_response_timeout_secs", "panel": LIMITS,
     "help": "Most seconds to produce an HTTP answer, then the dialect's 504; 0 = none (default)."},
    {"name": "http_keep_alive_timeout_secs", "help": "Seconds an idle keep-alive connection stays open.",
     "panel": NETWORK},
    {"name": "drain_delay_secs", "panel": NETWORK,
     "help": "On SIGTERM: seconds served with readiness already false (default 5)."},
    {"name": "exit_timeout_secs", "panel": NETWORK,
     "help": "Then: seconds for calls in flight before they end UNAVAILABLE (default 30)."},
    *_tls("grpc"),
    *_tls("http"),
]  # fmt: skip


def _declared(entry: dict[str, Any]) -> Declared:
    field = _FIELDS[entry["name"]]
    default = field.default
    kind = entry.pop("type", Path if isinstance(default, Path) else type(default))
    return Declared(Option(type=kind, default=default, top_level=True, **entry))


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
CORE_OPTIONS: tuple[Declared, ...] = tuple(_declared(dict(entry)) for entry in _TABLE)
