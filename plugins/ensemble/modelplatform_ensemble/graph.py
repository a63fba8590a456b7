"""An ensemble's wiring, checked once at load: which step needs and feeds which tensor.

Triton's rules (docs/pipelines.md): every input of a step model is mapped
(optional ones may be left out); one ensemble tensor may feed many inputs
but is produced by one step only; every ensemble input is used and every
ensemble output produced; the steps form no cycle. Each error names the
ensemble, the step (its position and model) and the tensor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplatform import EnsembleStep, InvalidArgument, ModelConfig

#: Steps one ensemble may have (a load request's configuration is client input).
MAX_STEPS = 256


@dataclass(frozen=True, slots=True)
class Wiring:
    """What the engine needs per request, computed once."""

    steps: tuple[EnsembleStep, ...]
    #: Per step: the ensemble tensors it waits for.
    needs: tuple[frozenset[str], ...]
    #: Per ensemble tensor: the steps (by index) that read it.
    readers: Mapping[str, tuple[int, ...]]


def step_name(index: int, step: EnsembleStep) -> str:
    return f"step {index} ('{step.model_name}')"


def wiring(config: ModelConfig) -> Wiring:
    """The ensemble's steps as a graph; raises InvalidArgument naming what is wrong."""
    where = f"ensemble '{config.name}'"
    steps = config.ensemble_scheduling.steps if config.ensemble_scheduling else ()
    if not steps:
        raise InvalidArgument(f"{where}: ensemble_scheduling has no step")
    if len(steps) > MAX_STEPS:
        raise InvalidArgument(f"{where}: {len(steps)} steps, over the limit of {MAX_STEPS}")
    inputs = {spec.name for spec in config.inputs}
    producers = _producers(where, steps, inputs)
    _check_sources(where, steps, inputs, producers)
    _check_outputs(where, config, producers)
    _check_acyclic(where, steps, producers)
    needs = tuple(frozenset(step.input_map.values()) - inputs for step in steps)
    readers: dict[str, list[int]] = {}
    for index, step in enumerate(steps):
        for tensor in set(step.input_map.values()):
            readers.setdefault(tensor, []).append(index)
    return Wiring(steps, needs, {k: tuple(v) for k, v in readers.items()})


def check_step_model(ensemble: str, index: int, step: EnsembleStep, model: ModelConfig) -> None:
    """The step's maps name the step model's own tensors, and every required input is fed."""
    where = f"ensemble '{ensemble}' {step_name(index, step)}"
    declared_inputs = {spec.name: spec for spec in model.inputs}
    for name in step.input_map:
        if name not in declared_inputs:
            raise InvalidArgument(f"{where}: input_map names '{name}', not an input of the model")
    for name, spec in declared_inputs.items():
        if name not in step.input_map and not spec.optional:
            raise InvalidArgument(f"{where}: model input '{name}' is not mapped in input_map")
    declared_outputs = {spec.name for spec in model.outputs}
    for name in step.output_map:
        if declared_outputs and name not in declared_outputs:
            raise InvalidArgument(f"{where}: output_map names '{name}', not an output of the model")


def _producers(where: str, steps: Sequence[EnsembleStep], inputs: set[str]) -> dict[str, int]:
    """Which step produces each ensemble tensor; a tensor produced twice is refused."""
    producers: dict[str, int] = {}
    for index, step in enumerate(steps):
        for tensor in step.output_map.values():
            if tensor in inputs:
                raise InvalidArgument(
                    f"{where} {step_name(index, step)}: output '{tensor}' is an ensemble input"
                )
            if tensor in producers:
                first = producers[tensor]
                raise InvalidArgument(
                    f"{where}: tensor '{tensor}' is produced twice, by "
                    f"{step_name(first, steps[first])} and {step_name(index, step)}"
                )
            producers[tensor] = index
    return producers


def _check_sources(
    where: str, steps: Sequence[EnsembleStep], inputs: set[str], producers: Mapping[str, int]
) -> None:
    """Every step input comes from somewhere; every ensemble input goes somewhere."""
    read: set[str] = set()
    for index, step in enumerate(steps):
        if not step.model_name:
            raise InvalidArgument(f"{where}: step {index} has no model_name")
        for model_input, tensor in step.input_map.items():
            read.add(tensor)
            if tensor not in inputs and tensor not in producers:
                raise InvalidArgument(
                    f"{where} {step_name(index, step)}: input '{model_input}' reads tensor "
                    f"'{tensor}', which is neither an ensemble input nor any step's output"
                )
    for name in sorted(inputs - read):
        raise InvalidArgument(f"{where}: ensemble input '{name}' is not mapped to any step")


def _check_outputs(where: str, config: ModelConfig, producers: Mapping[str, int]) -> None:
    for spec in config.outputs:
        if spec.name not in producers:
            raise InvalidArgument(
                f"{where}: ensemble output '{spec.name}' is not produced by any step's output_map"
            )


def _check_acyclic(where: str, steps: Sequence[EnsembleStep], producers: Mapping[str, int]) -> None:
    """Depth-first search over 'step reads a tensor another step produces'."""
    after = [{producers[t] for t in step.input_map.values() if t in producers} for step in steps]
    state = [0] * len(steps)  # 0 unseen, 1 on the current path, 2 done

    def visit(index: int, path: list[int]) -> None:
        state[index] = 1
        for before in sorted(after[index]):
            if state[before] == 1:
                cycle = path[path.index(before) :] + [before]
                names = " -> ".join(step_name(i, steps[i]) for i in cycle)
                raise InvalidArgument(f"{where}: the steps form a cycle: {names}")
            if state[before] == 0:
                visit(before, path + [before])
        state[index] = 2

    for index in range(len(steps)):
        if state[index] == 0:
            visit(index, [index])
