"""Read-only views of model versions: what plugins see of a version, never the live object."""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform.base.model_config import ModelConfig


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One version of a model as plugins see it: a read-only snapshot, not the live version."""

    name: str
    #: The version number as text; "" for a failure of the whole model (a bad configuration).
    version: str
    #: Triton's state names: READY, LOADING, UNLOADING, UNAVAILABLE.
    state: str
    config: ModelConfig
    #: Why it is not READY ("unloaded" after a clean unload), else "".
    reason: str = ""
    #: Whether a streaming call may get several responses: a decoupled model, or one
    #: whose backend streams (a generator model).
    streams: bool = False

    @property
    def ready(self) -> bool:
        return self.state == "READY"
