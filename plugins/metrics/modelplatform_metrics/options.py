"""The metrics settings as the plugin reads them: Triton's flags and ``--metrics-config``."""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import InvalidArgument, Settings

#: ``--metrics-config`` keys understood, with what they switch.
KNOWN_KEYS = {
    "counter_latencies": "the cumulative *_duration_us counters (default true, as Triton)",
}


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    allowed: bool
    address: str
    port: int
    interval_s: float
    counter_latencies: bool = True
    #: Several workers bind the same metrics port (SO_REUSEPORT), as they do the HTTP port.
    shared_port: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> MetricsOptions:
        config = _parse(settings.metrics_config)
        return cls(
            allowed=settings.allow_metrics,
            address=settings.metrics_address or settings.host,
            port=settings.metrics_port,
            interval_s=settings.metrics_interval_ms / 1000,
            counter_latencies=_flag(config, "counter_latencies", True),
            shared_port=settings.workers > 1,
        )


def _parse(pairs: tuple[str, ...]) -> dict[str, str]:
    config = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        key = key.strip()
        if key not in KNOWN_KEYS:
            known = ", ".join(sorted(KNOWN_KEYS))
            raise InvalidArgument(f"metrics_config: unknown key {key!r} (known: {known})")
        config[key] = value.strip()
    return config


def _flag(config: dict[str, str], key: str, default: bool) -> bool:
    if key not in config:
        return default
    value = config[key].lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidArgument(f"metrics_config: {key} must be true or false, not {config[key]!r}")
    return value in ("true", "1")
