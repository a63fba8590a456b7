"""Schedulers sit between the dataplane and a model's backend instances."""

from modelplatform.models.scheduling.direct import DirectScheduler, Scheduler

__all__ = ["DirectScheduler", "Scheduler"]
