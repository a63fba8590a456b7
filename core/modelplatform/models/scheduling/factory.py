"""Chooses a model's scheduler once, at load time."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform.base.model_config import ModelConfig
from modelplatform.models.backend import Backend
from modelplatform.models.scheduling.concurrent import ConcurrentScheduler
from modelplatform.models.scheduling.direct import DirectScheduler, Scheduler
from modelplatform.models.scheduling.dynamic import DynamicBatcher
from modelplatform.models.scheduling.sequence import SequenceBatcher
from modelplatform.models.stats import ModelStats


def create_scheduler(config: ModelConfig, instances: Sequence[Backend], stats: ModelStats) -> Scheduler:
    """Stateful models (``sequence_batching``) get the sequence batcher, batching models with
    ``dynamic_batching`` the dynamic one; the rest run direct, unless their backend runs
    concurrent calls on one instance (an ensemble)."""
    if instances and type(instances[0]).concurrent:
        return ConcurrentScheduler(instances, stats)
    if config.sequence_batching is not None:
        return SequenceBatcher(config, instances, stats)
    if config.batching and config.dynamic_batching is not None:
        return DynamicBatcher(config, instances, stats)
    return DirectScheduler(instances, stats)
