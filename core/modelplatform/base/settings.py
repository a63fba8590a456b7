"""The core's settings, resolved once: defaults < config file < MODELPLATFORM_* env < CLI flags.

The config file is TOML; top-level keys are the field names below, and a
``[plugins.<name>]`` table holds a plugin's own options (declared by the plugin,
options.py; read by it with :meth:`Settings.options_for`). Environment variables
are the field names upper-cased with a ``MODELPLATFORM_`` prefix; lists are
comma-separated. Which options exist: core_options.py and each plugin's
``register_options``; how the sources merge: resolution.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modelplatform.base.access.restrictions import (
    GRPC_RESTRICTED_FLAG,
    HTTP_RESTRICTED_FLAG,
    Restrictions,
    grpc_groups,
    http_groups,
)
from modelplatform.base.cors_settings import check_cors
from modelplatform.base.errors import InvalidArgument
from modelplatform.base.tls_settings import check_tls

if TYPE_CHECKING:
    from modelplatform.base.options import Declared, Option

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
    #: Triton's ``--cache-config local,size=N`` values: the response cache (base/cache_config.py).
    cache_config: tuple[str, ...] = ()
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
    #: Where the event loop and grpc.aio's poller thread run: auto | together | apart (placement.py).
    grpc_cpu_placement: str = "auto"
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
    #: CORS (base/cors_settings.py): origins allowed to call from a browser page; empty: CORS off.
    cors_allow_origin: tuple[str, ...] = ()
    #: Methods a preflight may ask for; empty: whatever the path's routes accept.
    cors_allow_methods: tuple[str, ...] = ()
    #: Request headers a preflight may ask for ("*": any).
    cors_allow_headers: tuple[str, ...] = (
        "content-type", "content-encoding", "inference-header-content-length", "authorization", "x-api-key",
    )  # fmt: skip
    #: Response headers a page may read beyond the CORS-safelisted ones.
    cors_expose_headers: tuple[str, ...] = ("inference-header-content-length",)
    #: Pages may send credentials (cookies, HTTP authentication); never with origin "*".
    cors_allow_credentials: bool = False
    #: Seconds a browser may keep a preflight's answer.
    cors_max_age_secs: int = 600
    #: Each plugin's option values by plugin name: every declared option, defaults filled
    #: in (base/options.py); a ``[plugins.<name>]`` table no plugin declares, as written.
    plugin_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: ``(listener, plugin)``: the plugins' own TLS listeners (options.tls_options), e.g. metrics.
    tls_listeners: tuple[tuple[str, str], ...] = ()

    def options_for(self, plugin: str, declared: Iterable[Option] = ()) -> Mapping[str, Any]:
        """The option values of ``plugin`` (its ``register_options`` names; defaults filled in).

        ``declared``: the plugin's own declarations, whose defaults fill what these settings
        lack (settings built by hand, as tests do, hold no plugin values).
        """
        given = self.plugin_options.get(plugin, {})
        if not declared:
            return given
        return {**{option.name: option.default for option in declared}, **given}

    def allows(self, plugin: str) -> bool:
        """Whether the allow and block lists (``--plugins``, ``--disable-plugin``) enable ``plugin``."""
        if plugin in self.disable_plugins:
            return False
        return not self.plugins or plugin in self.plugins


@dataclass(frozen=True, slots=True)
class Limits:
    """The client-controlled sizes every codec bounds, read once from Settings."""

    max_tensor_elements: int
    max_bytes_element: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(settings.max_tensor_elements, settings.max_bytes_element)


def resolve(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    plugin_options: Sequence[Declared] = (),
    warn: Callable[[str, dict[str, str]], None] | None = None,
) -> Settings:
    """Merge every source in precedence order and validate the result (resolution.py).

    ``plugin_options``: the installed plugins' declarations (composition loads
    them); without them only the core's options and raw ``[plugins.*]`` tables are read.
    """
    from modelplatform.base.resolution import merge  # resolution builds on Settings

    return merge(config_file, os.environ if env is None else env, overrides or {}, plugin_options, warn)


def is_remote(location: str) -> bool:
    """Whether ``location`` names a remote repository (a URL) rather than a folder."""
    return bool(_URL.match(location))


def check(settings: Settings) -> None:
    """The checks that involve several settings (each option's own type is checked when read)."""
    if settings.model_control_mode not in ("none", "poll", "explicit"):
        raise InvalidArgument("model_control_mode must be none, poll or explicit")
    if settings.model_repository_url and not is_remote(settings.model_repository_url):
        raise InvalidArgument("model_repository_url must be a URL such as s3://bucket/models")
    if settings.repository_restrict and not _is_header_pair(settings.repository_restrict):
        raise InvalidArgument("repository_restrict must be 'header-name:value'")
    if settings.grpc_cpu_placement not in ("auto", "together", "apart"):
        raise InvalidArgument("grpc_cpu_placement must be auto, together or apart")
    if settings.log_format not in ("console", "json"):
        raise InvalidArgument("log_format must be console or json")
    for name in ("max_request_bytes", "max_tensor_elements", "max_bytes_element", "workers"):
        if getattr(settings, name) <= 0:
            raise InvalidArgument(f"{name} must be positive")
    _check_timeouts(settings)
    _check_drain(settings)
    _check_restrictions(settings)
    check_tls(settings)
    check_cors(settings)


def _check_restrictions(settings: Settings) -> None:
    """Restrictions parse and keep each category in one group (the key file is read at start-up)."""
    Restrictions.parse(http_groups(settings), HTTP_RESTRICTED_FLAG)
    Restrictions.parse(grpc_groups(settings), GRPC_RESTRICTED_FLAG)


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


def _is_header_pair(text: str) -> bool:
    key, sep, value = text.partition(":")
    return bool(sep and key.strip() and value.strip())
