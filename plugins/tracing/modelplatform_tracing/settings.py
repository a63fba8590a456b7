"""Triton's trace settings, global and per model, as they map onto the OpenTelemetry spans.

``trace_level`` OFF writes no span; TIMESTAMPS (or TENSORS) writes them.
``trace_rate`` traces one request in every N; ``trace_count`` is how many
more may be traced (-1: no limit; it counts down as requests are traced, as
Triton's does). A model's own setting overrides the global one field by
field; a field set to null falls back (for the global setting: to the
start-up value). A changed setting starts counting afresh. ``trace_file``
and ``log_frequency`` are Triton's file output: spans go over OTLP, so the
file stays "" and the frequency "0". This module imports no transport: the
HTTP and gRPC edges turn their bodies into ``{name: [strings] | None}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from modelplatform import InvalidArgument, Unsupported

OFF = "OFF"
#: Levels in the order Triton lists them; TENSORS traces like TIMESTAMPS (spans never carry tensors).
LEVELS = ("TIMESTAMPS", "TENSORS")
MODE = "opentelemetry"
UINT32_MAX = 2**32 - 1
INT32_MAX = 2**31 - 1
#: The fields that make a setting; the rest of Triton's names are accepted only unchanged.
SETTING_FIELDS = ("trace_level", "trace_rate", "trace_count")
KNOWN = (*SETTING_FIELDS, "log_frequency", "trace_file", "trace_mode")

Changes = Mapping[str, Sequence[str] | None]


@dataclass(frozen=True, slots=True)
class TraceSetting:
    levels: tuple[str, ...]  # () is OFF
    rate: int
    count: int


class Sampler:
    """One setting in force, with its own request counter and remaining count."""

    def __init__(self, setting: TraceSetting) -> None:
        self.setting = setting
        self.remaining = setting.count
        self._seen = 0

    @property
    def on(self) -> bool:
        return bool(self.setting.levels)

    def sample(self, forced: bool) -> bool:
        """Whether to trace this request; ``forced``: the caller's ``traceparent`` is sampled."""
        if not self.setting.levels:
            return False
        if forced:  # as in Triton: the caller's decision counts nothing and passes a spent count
            return True
        if self.remaining == 0:
            return False
        self._seen += 1
        if self._seen % self.setting.rate:
            return False
        if self.remaining > 0:
            self.remaining -= 1
        return True


class TraceSettings:
    """The global setting and the models' overrides; ``on_change(on)`` hears whether any traces."""

    def __init__(self, default: TraceSetting, can_trace: bool, on_change: Callable[[bool], None]) -> None:
        self._default = default
        self._can_trace = can_trace
        self._on_change = on_change
        self._global_fields: dict[str, Any] = {}
        self._model_fields: dict[str, dict[str, Any]] = {}
        self._global = Sampler(default)
        self._models: dict[str, Sampler] = {}

    @property
    def on(self) -> bool:
        return self._global.on or any(sampler.on for sampler in self._models.values())

    def sampler(self, model: str) -> Sampler:
        return self._models.get(model, self._global)

    def answer(self, model: str = "") -> dict[str, str | list[str]]:
        """The setting in force for ``model`` ("" for the global one), in Triton's shape."""
        sampler = self.sampler(model) if model else self._global
        setting = sampler.setting
        return {
            "trace_level": list(setting.levels) or [OFF],
            "trace_rate": str(setting.rate),
            "trace_count": str(sampler.remaining),
            "log_frequency": "0",
            "trace_file": "",
            "trace_mode": MODE,
        }

    def update(self, model: str, changes: Changes) -> dict[str, str | list[str]]:
        """Apply Triton's fields (all checked before any applies); answers the setting now."""
        checked = {name: _checked(name, values) for name, values in changes.items()}
        fields = {name: value for name, value in checked.items() if name in SETTING_FIELDS}
        if model:
            self._update_model(model, fields)
        else:
            self._update_global(fields)
        self._on_change(self.on)
        return self.answer(model)

    def _update_global(self, fields: dict[str, Any]) -> None:
        merged = _merged(self._global_fields, fields)
        setting = _overlaid(self._default, merged)
        self._refuse_if_untraceable(setting)
        self._global_fields = merged
        self._global = Sampler(setting)
        for model, own in self._model_fields.items():
            if len(own) < len(SETTING_FIELDS):  # follows the global setting in some field
                self._models[model] = Sampler(_overlaid(setting, own))

    def _update_model(self, model: str, fields: dict[str, Any]) -> None:
        merged = _merged(self._model_fields.get(model, {}), fields)
        setting = _overlaid(self._global.setting, merged)
        self._refuse_if_untraceable(setting)
        if merged:
            self._model_fields[model] = merged
            self._models[model] = Sampler(setting)
        else:  # every field back to the global setting
            self._model_fields.pop(model, None)
            self._models.pop(model, None)

    def _refuse_if_untraceable(self, setting: TraceSetting) -> None:
        if setting.levels and not self._can_trace:
            raise InvalidArgument(
                "Attempting to set invalid trace setting :no OTLP endpoint is configured"
                " (start the server with --trace-otlp-endpoint)"
            )


def _merged(current: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    merged = dict(current)
    for name, value in fields.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def _overlaid(base: TraceSetting, fields: dict[str, Any]) -> TraceSetting:
    return replace(
        base,
        levels=fields.get("trace_level", base.levels),
        rate=fields.get("trace_rate", base.rate),
        count=fields.get("trace_count", base.count),
    )


def _checked(name: str, values: Sequence[str] | None) -> Any:
    """The field's value (None: back to the fallback), or the error Triton would answer."""
    if name not in KNOWN:
        raise InvalidArgument(f"trace setting '{name}' is unknown (known: {', '.join(KNOWN)})")
    if values is None:
        return None
    if name == "trace_level":
        return _levels(values)
    value = _one(name, values)
    if name == "trace_rate":
        return _number(name, value, 1, UINT32_MAX)
    if name == "trace_count":
        return _count(value)
    if name == "log_frequency":
        if _number(name, value, 0, UINT32_MAX):
            raise InvalidArgument("'log_frequency' must be 0: spans are exported over OTLP, not to a file")
        return None
    if name == "trace_file":
        if value:
            raise Unsupported("trace file location can not be updated through network protocol")
        return None
    if value != MODE:
        raise InvalidArgument(f"'trace_mode' is {MODE} and cannot change, got: {value}")
    return None


def _levels(values: Sequence[str]) -> tuple[str, ...]:
    if not values:
        raise InvalidArgument("'trace_level' needs at least one level: OFF, TIMESTAMPS or TENSORS")
    for level in values:
        if level != OFF and level not in LEVELS:
            raise InvalidArgument(f"'trace_level' must be OFF, TIMESTAMPS or TENSORS, got: {level}")
    if OFF in values:
        if len(values) != 1:
            raise InvalidArgument("Expect only one trace level 'OFF' is specified")
        return ()
    return tuple(level for level in LEVELS if level in values)


def _one(name: str, values: Sequence[str]) -> str:
    if len(values) != 1:
        raise InvalidArgument(f"expect only 1 value for '{name}'")
    return values[0]


def _number(name: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgument(f"Unable to parse '{name}', got: {text[:64]}") from None
    if not low <= value <= high:
        raise InvalidArgument(
            f"Unable to parse '{name}', value is out of range [ {low}, {high} ], got: {text[:64]}"
        )
    return value


def _count(text: str) -> int:
    value = _number("trace_count", text, -(2**31), INT32_MAX)
    if value < -1:
        raise InvalidArgument(f"Unable to parse 'trace_count'. Expecting value >= -1, got: {text[:64]}")
    return value
