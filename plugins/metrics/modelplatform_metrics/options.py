"""The metrics settings as the plugin reads them: Triton's flags and ``--metrics-config``."""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import InvalidArgument, Settings
from modelplatform.statistics import DEFAULT_LATENCY_BUCKETS_US, checked_buckets

#: ``--metrics-config`` keys understood, with what they switch.
KNOWN_KEYS = {
    "counter_latencies": "the cumulative *_duration_us counters (default true, as Triton)",
    "histogram_latencies": "the latency histograms (Triton's key; default true here, false in Triton)",
    "histogram_buckets_us": "the latency histograms' bucket bounds, microseconds, comma-separated",
}
#: The longest ``histogram_buckets_us`` value read (a bound on what an operator may type).
MAX_BUCKETS_TEXT = 1024


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    allowed: bool
    address: str
    port: int
    interval_s: float
    counter_latencies: bool = True
    histogram_latencies: bool = True
    latency_buckets_us: tuple[int, ...] = DEFAULT_LATENCY_BUCKETS_US
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
            histogram_latencies=_flag(config, "histogram_latencies", True),
            latency_buckets_us=_buckets(config.get("histogram_buckets_us")),
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


def _buckets(text: str | None) -> tuple[int, ...]:
    if text is None:
        return DEFAULT_LATENCY_BUCKETS_US
    problem = f"metrics_config: histogram_buckets_us must be increasing whole microseconds, not {text[:80]!r}"
    parts = text.split(",") if len(text) <= MAX_BUCKETS_TEXT else []
    if not parts or not all(p.strip().isdigit() for p in parts):
        raise InvalidArgument(problem)
    try:
        return checked_buckets(int(p) for p in parts)
    except ValueError as error:
        raise InvalidArgument(f"{problem}: {error}") from None


def _flag(config: dict[str, str], key: str, default: bool) -> bool:
    if key not in config:
        return default
    value = config[key].lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidArgument(f"metrics_config: {key} must be true or false, not {config[key]!r}")
    return value in ("true", "1")
