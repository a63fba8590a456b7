"""grps's sequential DAG: model nodes in a row, each fed by the one before.

Declared in ``[plugins.grps.dag]`` as grps's ``inference.yml`` writes it
(``type = "sequential"``, ``name``, ``nodes = [{name, type = "model",
model = "<name>-<version>"}]``) and run by the ensemble plugin's engine:
each node is a DataPlane request, so its model batches and counts it as its
own. A node's outputs feed the next node's inputs by name when every
required input finds an output of that name, else in declared order. The
wiring is built from the models' current configurations on first use and
again whenever one of them was reloaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplatform import (
    DataPlane,
    EnsembleScheduling,
    EnsembleStep,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelConfig,
)
from modelplatform_ensemble.api import Pipeline, wiring

from .models import split_model

#: Nodes one DAG may have (the same bound as an ensemble's steps).
MAX_NODES = 256


@dataclass(frozen=True, slots=True)
class DagNode:
    name: str
    model: str
    version: str


@dataclass(frozen=True, slots=True)
class DagSpec:
    """The ``[plugins.grps.dag]`` table, checked at start-up."""

    name: str
    nodes: tuple[DagNode, ...]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> DagSpec:
        where = "[plugins.grps.dag]"
        unknown = set(values) - {"type", "name", "nodes"}
        if unknown:
            raise InvalidArgument(f"{where}: unknown option(s) {sorted(unknown)}")
        if values.get("type", "sequential") != "sequential":
            raise InvalidArgument(f'{where}: type must be "sequential" (grps\'s only DAG type)')
        nodes = values.get("nodes")
        if not isinstance(nodes, list) or not 0 < len(nodes) <= MAX_NODES:
            raise InvalidArgument(f"{where}: nodes must be a list of 1..{MAX_NODES} model nodes")
        name = values.get("name", "dag")
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"{where}: name must be a non-empty string")
        return cls(name, tuple(_node(where, index, node) for index, node in enumerate(nodes)))


def _node(where: str, index: int, node: Any) -> DagNode:
    if not isinstance(node, Mapping) or set(node) - {"name", "type", "model"}:
        raise InvalidArgument(f"{where}: node {index} must be a table of name, type and model")
    if node.get("type", "model") != "model":
        raise InvalidArgument(f'{where}: node {index}: type must be "model"')
    selector = node.get("model")
    if not isinstance(selector, str) or not selector:
        raise InvalidArgument(f"{where}: node {index}: model must name a model (name-version)")
    model, version = split_model(selector)
    return DagNode(str(node.get("name", f"node-{index}")), model, version)


class Dag:
    """The configured DAG, run through the ensemble engine."""

    def __init__(self, spec: DagSpec, dataplane: DataPlane) -> None:
        self.spec = spec
        self._repository = dataplane.repository
        self._calls = dataplane.calls
        #: The node models' configurations it was built from, and what was built.
        self._built: tuple[tuple[ModelConfig, ...], Pipeline, ModelConfig] | None = None

    def models(self) -> tuple[str, ...]:
        """Every model the DAG runs, once each, in node order."""
        return tuple(dict.fromkeys(node.model for node in self.spec.nodes))

    def first_model(self) -> tuple[str, str]:
        node = self.spec.nodes[0]
        return node.model, node.version

    async def run(self, request: InferenceRequest) -> InferenceResponse:
        pipeline, config = self._pipeline()
        response = await pipeline.run(request)
        response.model_name = self.spec.name
        return response

    def _pipeline(self) -> tuple[Pipeline, ModelConfig]:
        configs = tuple(self._repository.model_config(n.model, n.version) for n in self.spec.nodes)
        built = self._built
        if built is None or any(a is not b for a, b in zip(built[0], configs)):  # a reload
            config = self._as_ensemble(configs)
            pipeline = Pipeline(config, wiring(config), self._calls)
            built = self._built = (configs, pipeline, config)
        return built[1], built[2]

    def _as_ensemble(self, configs: Sequence[ModelConfig]) -> ModelConfig:
        """The DAG as an ensemble: the first model's inputs in, the last model's outputs out."""
        nodes = self.spec.nodes
        steps = []
        feeding = {spec.name: spec.name for spec in configs[0].inputs}
        for index, (node, config) in enumerate(zip(nodes, configs)):
            inputs = feeding if index == 0 else self._fed(index, configs[index - 1], config)
            last = index == len(nodes) - 1
            outputs = {s.name: s.name if last else f"{node.name}/{s.name}" for s in config.outputs}
            version = int(node.version) if node.version else -1
            steps.append(EnsembleStep(node.model, version, dict(inputs), outputs))
        return ModelConfig(
            name=f"grps dag '{self.spec.name}'",
            platform="ensemble",
            max_batch_size=configs[0].max_batch_size,
            inputs=configs[0].inputs,
            outputs=configs[-1].outputs,
            ensemble_scheduling=EnsembleScheduling(tuple(steps)),
        )

    def _fed(self, index: int, before: ModelConfig, config: ModelConfig) -> dict[str, str]:
        """The node's inputs from the previous node's outputs: by name, else in order."""
        previous = self.spec.nodes[index - 1].name
        produced = [s.name for s in before.outputs]
        wanted = [s for s in config.inputs if not s.optional] or list(config.inputs)
        if all(s.name in produced for s in wanted):
            return {s.name: f"{previous}/{s.name}" for s in wanted}
        if len(produced) < len(wanted):
            raise InvalidArgument(
                f"grps dag '{self.spec.name}' node {index} ('{config.name}'): needs "
                f"{len(wanted)} inputs, node {index - 1} ('{before.name}') "
                f"gives {len(produced)} outputs"
            )
        return {spec.name: f"{previous}/{name}" for spec, name in zip(wanted, produced)}
