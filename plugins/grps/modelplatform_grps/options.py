"""The grps options, declared once (``register_options``) and read at start-up.

Both entry points (grps-rest and grps-grpc) declare :data:`OPTIONS` with
``table="grps"``: one ``[plugins.grps]`` table, ``--grps-<name>`` flags and
``MODELPLATFORM_GRPS_<NAME>`` variables, in force while either transport is
enabled. ``dag`` is a structure, not a value: only the config table
``[plugins.grps.dag]`` gives it (docs/configuration.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from modelplatform import InvalidArgument, Option, Settings

from .dag import DagSpec

PLUGIN = "grps"
CTRL_MODES = ("query_param", "header_param", "body_param")
WHERE = f"[plugins.{PLUGIN}]"


def _check_mode(mode: str, what: str = "streaming_ctrl_mode") -> None:
    if mode not in CTRL_MODES:
        raise InvalidArgument(f"{what} must be one of {CTRL_MODES}")


def _check_window(seconds: int, what: str = "monitor_window_secs") -> None:
    if not 10 <= seconds <= 86400:
        raise InvalidArgument(f"{what} must be 10..86400")


def _check_dag(table: Mapping[str, Any]) -> None:
    DagSpec.from_mapping(table)


def _grps(name: str, kind: type, default: Any, text: str, check: Any = None, **more: Any) -> Option:
    return Option(name, kind, default, text, check, table=PLUGIN, **more)


OPTIONS = (
    _grps("default_model", str, "", "Model (name or name-version) a predict that names none runs; "
          "empty: such a request is a 400.", metavar="<model>"),
    _grps("start_online", bool, True, "Start online; --no-grps-start-online: offline until "
          "/grps/v1/health/online, as grps."),
    _grps("offline_drains_server", bool, True, "While offline, the server's readiness is false too."),
    _grps("streaming_ctrl_mode", str, "query_param", "How HTTP clients ask for streaming: "
          "query_param, header_param or body_param.", _check_mode),
    _grps("streaming_ctrl_key", str, "streaming", "The query parameter, header or body key that "
          "asks for streaming."),
    _grps("streaming_content_type", str, "application/octet-stream", "Content-Type of a streamed "
          "HTTP response."),
    _grps("monitor_window_secs", int, 300, "Seconds of per-second monitor history kept (10..86400).",
          _check_window),
    _grps("dag", dict, None, "grps's sequential DAG, a config table only ([plugins.grps.dag]); "
          "predict without a model runs it.", _check_dag, cli=False),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class GrpsOptions:
    #: ``name`` or ``name-version`` used when a request names no model.
    default_model: str = ""
    #: grps itself starts offline (ready only after ``online``); we start online.
    start_online: bool = True
    #: While offline, core readiness (``/v2/health/ready``, gRPC ServerReady) is false too.
    offline_drains_server: bool = True
    #: How HTTP clients ask for streaming (grps ``streaming_ctrl``).
    streaming_ctrl_mode: str = "query_param"
    streaming_ctrl_key: str = "streaming"
    streaming_content_type: str = "application/octet-stream"
    #: Seconds of per-second monitor history kept in memory.
    monitor_window_secs: int = 300
    #: grps's sequential DAG (``[plugins.grps.dag]``): what predict runs when no model is named.
    dag: DagSpec | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> GrpsOptions:
        return cls.from_mapping(settings.options_for(PLUGIN))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> GrpsOptions:
        """From a ``[plugins.grps]``-like mapping, checked again (the resolver checked the settings')."""
        known = {f.name: f for f in fields(cls)}
        unknown = set(values) - set(known)
        if unknown:
            raise InvalidArgument(f"{WHERE}: unknown option(s) {sorted(unknown)}")
        plain = {name: value for name, value in values.items() if name != "dag"}
        typed = {name: _typed(name, known[name].default, value) for name, value in plain.items()}
        options = cls(**typed, dag=_dag(values.get("dag")))
        _check_mode(options.streaming_ctrl_mode, f"{WHERE} streaming_ctrl_mode")
        _check_window(options.monitor_window_secs, f"{WHERE} monitor_window_secs")
        return options


def _dag(value: Any) -> DagSpec | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{WHERE} dag must be a table ([plugins.grps.dag])")
    return DagSpec.from_mapping(value)


def _typed(name: str, default: Any, value: Any) -> Any:
    if type(value) is not type(default):
        raise InvalidArgument(f"{WHERE} {name} must be {type(default).__name__}, got {value!r}")
    return value
