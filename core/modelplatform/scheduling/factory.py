"""Chooses a model's scheduler once, at load time."""

from __future__ import annotations

from collections.abc import Sequence

from ..backend import Backend
from ..model_config import ModelConfig
from ..stats import ModelStats
from .direct import DirectScheduler, Scheduler


def create_scheduler(
    config: ModelConfig, instances: Sequence[Backend], stats: ModelStats
) -> Scheduler:
    return DirectScheduler(instances, stats)
