"""What the dataplane's parts hand out about models: frozen views, never the manager's objects.

A plugin reads a model's versions (:class:`VersionInfo`, defined in the models layer so
the backend call-back protocol can name it) and metadata
(:class:`ModelMetadata`) through these snapshots; changing one changes nothing
on the server.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform.base.model_config import ModelConfig, TensorSpec
from modelplatform.models import ModelVersion
from modelplatform.models.stats import ModelStats
from modelplatform.models.views import VersionInfo


@dataclass(frozen=True, slots=True)
class TensorMetadata:
    name: str
    datatype: str
    shape: list[int]


@dataclass(frozen=True, slots=True)
class ModelMetadata:
    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorMetadata]
    outputs: list[TensorMetadata]


def streams(model: ModelVersion) -> bool:
    """Whether a stream to ``model`` may get several responses (see ``Backend.streams``)."""
    return model.config.decoupled or any(instance.streams for instance in model.instances[:1])


def version_info(version: ModelVersion) -> VersionInfo:
    return VersionInfo(
        version.name,
        version.version_str,
        version.state.value,
        version.config,
        version.reason,
        streams(version),
    )


def model_metadata(name: str, chosen: ModelVersion, ready_versions: list[str], named: bool) -> ModelMetadata:
    """``chosen``'s metadata; its versions are ``chosen``'s alone when the request ``named`` one."""
    config = chosen.config
    return ModelMetadata(
        name=name,
        versions=[chosen.version_str] if named else ready_versions,
        platform=config.platform or config.backend,
        inputs=[_tensor_metadata(s, config) for s in config.inputs],
        outputs=[_tensor_metadata(s, config) for s in config.outputs],
    )


def stats_of(versions: list[ModelVersion]) -> list[ModelStats]:
    found = [v for v in versions if v.stats is not None]
    for version in found:
        version.stats.pending = version.in_flight  # type: ignore[union-attr]  # a gauge, read now
    return [v.stats for v in found]  # type: ignore[misc]  # found holds only versions with stats


def _tensor_metadata(spec: TensorSpec, config: ModelConfig) -> TensorMetadata:
    return TensorMetadata(spec.name, spec.datatype, spec.full_shape(config.max_batch_size))
