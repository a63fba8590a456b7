"""The ``[plugins.grps]`` options, read once at start-up (docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from modelplatform import InvalidArgument, Settings

from .dag import DagSpec

PLUGIN = "grps"
CTRL_MODES = ("query_param", "header_param", "body_param")


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
        known = {f.name: f for f in fields(cls)}
        unknown = set(values) - set(known)
        if unknown:
            raise InvalidArgument(f"[plugins.grps]: unknown option(s) {sorted(unknown)}")
        plain = {name: value for name, value in values.items() if name != "dag"}
        typed = {name: _typed(name, known[name].default, value) for name, value in plain.items()}
        options = cls(**typed, dag=_dag(values.get("dag")))
        if options.streaming_ctrl_mode not in CTRL_MODES:
            raise InvalidArgument(f"[plugins.grps] streaming_ctrl_mode must be one of {CTRL_MODES}")
        if not 10 <= options.monitor_window_secs <= 86400:
            raise InvalidArgument("[plugins.grps] monitor_window_secs must be 10..86400")
        return options


def _dag(value: Any) -> DagSpec | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgument("[plugins.grps] dag must be a table ([plugins.grps.dag])")
    return DagSpec.from_mapping(value)


def _typed(name: str, default: Any, value: Any) -> Any:
    if type(value) is not type(default):
        raise InvalidArgument(f"[plugins.grps] {name} must be {type(default).__name__}, got {value!r}")
    return value
