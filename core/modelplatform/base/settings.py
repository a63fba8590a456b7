"""Server settings, resolved once: defaults < config file < MODELPLATFORM_* env < CLI flags.

The config file is TOML; top-level keys are the field names below, and a
``[plugins.<name>]`` table holds a plugin's own options (read by that plugin
from ``Settings.plugin_options``). Environment variables are the field names
upper-cased with a ``MODELPLATFORM_`` prefix; lists are comma-separated.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplatform.base.errors import InvalidArgument
from modelplatform.frontends.tls import check_settings as _check_tls

ENV_PREFIX = "MODELPLATFORM_"
MiB = 1024 * 1024
#: Timeouts beyond a year are typos (and overflow event-loop timers): refused.
MAX_TIMEOUT_SECS = 365 * 24 * 3600.0
#: Upper bound of the drain delay and the exit timeout (one hour): a typo must not keep a pod for days.
MAX_DRAIN_SECS = 3600.0
#: A scheme (s3://, gs://, as://): a remote repository, not a folder.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


@dataclass(frozen=True, slots=True)
class Settings:
    model_repository: Path = Path("model_repository")
    #: Set when the repository is given as a URL (``s3://``, ``gs://``, ``as://``): a storage
    #: plugin mirrors it, and ``model_repository`` then names the local mirror.
    model_repository_url: str = ""
    host: str = "0.0.0.0"
    http_port: int = 8000
    grpc_port: int = 8001
    #: Allow-list of plugin names; empty means every installed plugin.
    plugins: tuple[str, ...] = ()
    #: Block-list of plugin names.
    disable_plugins: tuple[str, ...] = ()
    #: none | poll | explicit (Triton's model control modes).
    model_control_mode: str = "explicit"
    #: Models loaded at start in explicit mode; "*" loads every model.
    load_models: tuple[str, ...] = ("*",)
    repository_poll_secs: float = 15.0
    #: Accept ``file:<version>/<name>`` load parameters (lets a client install code).
    allow_file_upload: bool = False
    #: Let clients register shared-memory regions and name them in requests (Triton's --allow-client-shm).
    allow_client_shm: bool = False
    #: Most shared-memory regions registered at once (system and CUDA together).
    max_shm_regions: int = 64
    #: ``key:value``: the repository API answers only requests carrying this header; the
    #: old spelling of ``model-repository:key=value`` in both restricted lists below.
    repository_restrict: str = ""
    #: Triton's ``<api>[,<api>...]:<key>=<value>`` groups for HTTP (access/restrictions.py).
    http_restricted_api: tuple[str, ...] = ()
    #: The same for gRPC (metadata ``triton-grpc-protocol-<key>``).
    grpc_restricted_protocol: tuple[str, ...] = ()
    #: TOML (or .json) file of scoped API keys (access/keys.py); "" = no keys needed.
    api_keys_file: str = ""
    #: With API keys: health endpoints answer without a key (for probes).
    api_keys_open_health: bool = True
    #: Server ready only when every requested model is READY (Triton's default).
    strict_readiness: bool = True
    log_verbose: int = 0
    log_format: str = "console"
    #: Largest accepted request body; larger is refused before it is read (HTTP 413).
    max_request_bytes: int = 256 * MiB
    #: Largest element count of one tensor; checked before anything is allocated.
    max_tensor_elements: int = 64 * MiB
    #: Largest single BYTES element.
    max_bytes_element: int = 64 * MiB
    #: gRPC message size limit; -1 lifts it (as Triton and tritonclient do).
    grpc_max_message_bytes: int = -1
    server_name: str = "modelplatform"
    #: Server processes sharing the ports (SO_REUSEPORT); see cluster.py.
    workers: int = 1
    #: Answer dialects' hot HTTP routes (HttpRoute.hot) in the C-parsed fast lane (http/fastlane.py).
    http_fast_lane: bool = True
    #: HTTP/1.1 and gRPC (h2c) on the HTTP port, sorted per connection (oneport.py); no gRPC port.
    single_port: bool = False
    #: Longest a client may stay silent while sending a request's head or body (HTTP 408); 0 = none.
    http_request_timeout_secs: float = 60.0
    #: Longest the server takes to produce an HTTP answer (the dialect's 504 after); 0 = none.
    http_response_timeout_secs: float = 0.0
    #: Longest an idle keep-alive HTTP connection stays open.
    http_keep_alive_timeout_secs: float = 75.0
    #: On SIGTERM/SIGINT: seconds of full service with readiness already false (shutdown.py).
    drain_delay_secs: float = 5.0
    #: Then: seconds for calls in flight to finish before they end with UNAVAILABLE (Triton's name).
    exit_timeout_secs: float = 30.0
    #: Serve Prometheus metrics (the metrics plugin): on ``metrics_port`` and at /metrics.
    allow_metrics: bool = True
    metrics_port: int = 8002
    #: Address of the metrics port; "" binds the HTTP address (``host``).
    metrics_address: str = ""
    #: How often sampled gauges (CPU, memory, GPU) are read, in milliseconds.
    metrics_interval_ms: int = 2000
    #: ``key=value`` options of the metrics (Triton's ``--metrics-config``), see docs/observability.md.
    metrics_config: tuple[str, ...] = ()
    #: OTLP/HTTP traces endpoint (``http://collector:4318/v1/traces``); "" traces nothing.
    trace_otlp_endpoint: str = ""
    #: Trace one request in every ``trace_rate`` (Triton's rate); a sampled ``traceparent`` is always traced.
    trace_rate: int = 1000
    #: TLS on the gRPC port (Triton's flags); ``grpc_use_ssl_mutual`` also asks clients for a certificate.
    grpc_use_ssl: bool = False
    grpc_use_ssl_mutual: bool = False
    #: PEM files: the server's certificate (chain) and key; the root certificate(s) client certificates chain to.
    grpc_server_cert: str = ""
    grpc_server_key: str = ""
    grpc_root_cert: str = ""
    #: TLS on the HTTP port (the fast lane included), named as the gRPC settings.
    http_use_ssl: bool = False
    http_use_ssl_mutual: bool = False
    http_server_cert: str = ""
    http_server_key: str = ""
    http_root_cert: str = ""
    #: TLS on the metrics port: each one not given (None, "") takes the HTTP setting's value.
    metrics_use_ssl: bool | None = None
    metrics_use_ssl_mutual: bool | None = None
    metrics_server_cert: str = ""
    metrics_server_key: str = ""
    metrics_root_cert: str = ""
    plugin_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def options_for(self, plugin: str) -> Mapping[str, Any]:
        return self.plugin_options.get(plugin, {})


@dataclass(frozen=True, slots=True)
class Limits:
    """The client-controlled sizes every codec bounds, read once from Settings."""

    max_tensor_elements: int
    max_bytes_element: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(settings.max_tensor_elements, settings.max_bytes_element)


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
#: Booleans whose "not given" (None) means something: take another setting's value.
_OPTIONAL_BOOLS = frozenset({"metrics_use_ssl", "metrics_use_ssl_mutual"})


def resolve(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge every source in precedence order and validate the result."""
    values: dict[str, Any] = {}
    if config_file is not None:
        values.update(_from_file(config_file))
    values.update(_from_env(os.environ if env is None else env))
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return _build(_url_apart(values))


def is_remote(location: str) -> bool:
    """Whether ``location`` names a remote repository (a URL) rather than a folder."""
    return bool(_URL.match(location))


def _url_apart(values: dict[str, Any]) -> dict[str, Any]:
    """A URL given as the repository goes to ``model_repository_url`` (a Path loses its ``//``)."""
    given = values.get("model_repository")
    if isinstance(given, str) and is_remote(given):
        values = {k: v for k, v in values.items() if k != "model_repository"}
        values["model_repository_url"] = given
    return values


def _from_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise InvalidArgument(f"config file {path}: {error}") from None
    plugin_options = data.pop("plugins", None)
    if isinstance(plugin_options, dict):
        data["plugin_options"] = plugin_options
    elif plugin_options is not None:
        data["plugins"] = plugin_options
    return data


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    return {
        name: env[ENV_PREFIX + name.upper()]
        for name in _FIELDS
        if name != "plugin_options" and ENV_PREFIX + name.upper() in env
    }


def _build(values: dict[str, Any]) -> Settings:
    unknown = set(values) - set(_FIELDS)
    if unknown:
        raise InvalidArgument(f"unknown setting(s): {', '.join(sorted(unknown))}")
    converted = {name: _convert(name, value) for name, value in values.items()}
    settings = Settings(**converted)
    _check(settings)
    return settings


def _convert(name: str, value: Any) -> Any:
    default = _FIELDS[name].default
    try:
        if isinstance(default, bool) or name in _OPTIONAL_BOOLS:
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        if isinstance(default, tuple):
            items = value.split(_separator(name)) if isinstance(value, str) else value
            return tuple(str(item).strip() for item in items if str(item).strip())
        if isinstance(default, Path):
            return Path(value)
        if isinstance(default, (int, float, str)):
            return type(default)(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"setting {name}: cannot use {value!r}") from None
    return value


#: Lists whose items hold commas themselves: ';' separates them in environment variables.
_SEMICOLON_LISTS = frozenset({"http_restricted_api", "grpc_restricted_protocol"})


def _separator(name: str) -> str:
    return ";" if name in _SEMICOLON_LISTS else ","


def _check(settings: Settings) -> None:
    if settings.model_control_mode not in ("none", "poll", "explicit"):
        raise InvalidArgument("model_control_mode must be none, poll or explicit")
    if settings.model_repository_url and not is_remote(settings.model_repository_url):
        raise InvalidArgument("model_repository_url must be a URL such as s3://bucket/models")
    if settings.repository_restrict and not _is_header_pair(settings.repository_restrict):
        raise InvalidArgument("repository_restrict must be 'header-name:value'")
    if settings.log_format not in ("console", "json"):
        raise InvalidArgument("log_format must be console or json")
    for name in (
        "max_request_bytes",
        "max_tensor_elements",
        "max_bytes_element",
        "workers",
        "max_shm_regions",
    ):
        if getattr(settings, name) <= 0:
            raise InvalidArgument(f"{name} must be positive")
    _check_timeouts(settings)
    _check_drain(settings)
    _check_metrics(settings)
    _check_tracing(settings)
    _check_access(settings)
    _check_tls(settings)


def _check_access(settings: Settings) -> None:
    """Restrictions parse and keep each category in one group; the key file loads (exit 2 if not)."""
    from modelplatform.frontends.gate import AccessGate  # access imports settings' neutral errors only

    AccessGate.from_settings(settings)


def _check_timeouts(settings: Settings) -> None:
    if not 0 < settings.http_keep_alive_timeout_secs < MAX_TIMEOUT_SECS:
        raise InvalidArgument(
            f"http_keep_alive_timeout_secs must be above 0 and below {MAX_TIMEOUT_SECS:.0f}"
        )
    for name in ("http_request_timeout_secs", "http_response_timeout_secs"):
        if not 0 <= getattr(settings, name) < MAX_TIMEOUT_SECS:
            raise InvalidArgument(f"{name} must be between 0 (none) and {MAX_TIMEOUT_SECS:.0f}")


def _check_drain(settings: Settings) -> None:
    for name in ("drain_delay_secs", "exit_timeout_secs"):
        if not 0 <= getattr(settings, name) <= MAX_DRAIN_SECS:
            raise InvalidArgument(f"{name} must be between 0 and {MAX_DRAIN_SECS:g}")


def _check_tracing(settings: Settings) -> None:
    if not 1 <= settings.trace_rate <= 2**31 - 1:
        raise InvalidArgument("trace_rate must be 1 or more (one request traced in every trace_rate)")
    endpoint = settings.trace_otlp_endpoint
    if endpoint and not endpoint.startswith(("http://", "https://")):
        raise InvalidArgument("trace_otlp_endpoint must be an http:// or https:// URL (OTLP/HTTP)")


def _check_metrics(settings: Settings) -> None:
    if not 0 <= settings.metrics_port <= 65535:
        raise InvalidArgument("metrics_port must be between 0 and 65535")
    if not 1 <= settings.metrics_interval_ms <= 3_600_000:
        raise InvalidArgument("metrics_interval_ms must be between 1 and 3600000")
    for pair in settings.metrics_config:
        key, sep, value = pair.partition("=")
        if not (sep and key.strip() and value.strip()):
            raise InvalidArgument(f"metrics_config entry {pair!r} is not 'key=value'")


def _is_header_pair(text: str) -> bool:
    key, sep, value = text.partition(":")
    return bool(sep and key.strip() and value.strip())
