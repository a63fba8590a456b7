"""The model configuration a SavedModel implies, filled into what config.pbtxt left out.

Like Triton's auto-complete, with every signature served:

- The *primary* signature (model parameter ``TF_SIGNATURE_DEF``, else
  ``serving_default``, else the only or first one) keeps its aliases as tensor
  names, so OIP clients see ``x`` and ``y``. Every other signature's tensors
  are named ``<signature>/<alias>``: an input name tells which signature a
  request runs. With several signatures, inputs are optional in the
  configuration and the backend checks the chosen signature's set.
- ``max_batch_size``: what the configuration says; else, when every tensor's
  first dimension is dynamic, Triton's default of 4 in Triton's layout, and 0
  in TF Serving's (which puts no limit on a request's batch: the dynamic
  first dimension stays in ``dims``).
- TF Serving's parameters (docs/protocols/tfserving.md): ``tfserving.signatures``
  maps each signature's aliases to these tensor names, and
  ``tfserving.signature_def`` carries the SavedModel's own ``signature_def``
  map for the metadata APIs.

A configuration that declares its inputs and outputs keeps them: they must
be the primary signature's aliases with its datatypes, and only that
signature is served.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelplatform import InvalidArgument, ModelConfig
from modelplatform.datatypes import DATATYPE_TO_CONFIG

from .signature_defs import CLASSIFY, PREDICT, REGRESS, SavedModelSignatures, Signature, SignatureTensor

PLATFORM = "tensorflow_savedmodel"
SIGNATURE_PARAMETER = "TF_SIGNATURE_DEF"
GRAPH_TAG_PARAMETER = "TF_GRAPH_TAG"
DEFAULT_SIGNATURE = "serving_default"
#: Triton's max_batch_size for an auto-completed model whose batch dimension is dynamic.
DEFAULT_MAX_BATCH_SIZE = 4
TFSERVING_SIGNATURES = "tfserving.signatures"
TFSERVING_SIGNATURE_DEF = "tfserving.signature_def"
_METHODS = {PREDICT: "predict", CLASSIFY: "classify", REGRESS: "regress"}


@dataclass(frozen=True, slots=True)
class Route:
    """Where a configured tensor name leads: a signature and the alias in it."""

    signature: str
    alias: str


@dataclass(frozen=True, slots=True)
class Routing:
    """The served signatures and the configuration's tensor names, both ways."""

    primary: str
    inputs: dict[str, Route]
    #: Per signature: alias -> configured output name.
    outputs: dict[str, dict[str, str]]

    def input_aliases(self, signature: str) -> set[str]:
        return {r.alias for r in self.inputs.values() if r.signature == signature}


def primary_signature(config: ModelConfig, found: SavedModelSignatures) -> str:
    wanted = config.parameters.get(SIGNATURE_PARAMETER, "")
    if wanted:
        if wanted not in found.signatures:
            raise InvalidArgument(
                f"model '{config.name}': {SIGNATURE_PARAMETER} names '{wanted}', "
                f"the SavedModel has {sorted(found.signatures)}"
            )
        return wanted
    return DEFAULT_SIGNATURE if DEFAULT_SIGNATURE in found.signatures else min(found.signatures)


def complete(
    config: ModelConfig, found: SavedModelSignatures, served_as_is: bool
) -> tuple[ModelConfig, Routing]:
    """The completed configuration and its routing; ``served_as_is``: TF Serving's layout."""
    primary = primary_signature(config, found)
    declared = bool(config.inputs or config.outputs)
    served = [found.signatures[primary]] if declared else list(found.signatures.values())
    served.sort(key=lambda s: s.name != primary)  # the primary first
    routing = _routing(config.name, primary, served)
    max_batch = _max_batch_size(config, served, declared, served_as_is)
    data = config.to_json()
    data["max_batch_size"] = max_batch
    data["platform"] = data.get("platform") or PLATFORM
    data["backend"] = data.get("backend") or "tensorflow"
    if not declared:
        optional = len(served) > 1
        data["input"] = [_spec(s, t, primary, max_batch, optional) for s in served for t in s.inputs]
        data["output"] = [_spec(s, t, primary, max_batch, False) for s in served for t in s.outputs]
    parameters = data.setdefault("parameters", {})
    parameters.setdefault(TFSERVING_SIGNATURES, {"string_value": _tfserving_signatures(served, routing)})
    parameters.setdefault(TFSERVING_SIGNATURE_DEF, {"string_value": _signature_defs(found, served)})
    completed = ModelConfig.from_json(data)
    if declared:
        _check_declared(completed, found.signatures[primary])
    return completed, routing


def tensor_name(signature: str, alias: str, primary: str) -> str:
    return alias if signature == primary else f"{signature}/{alias}"


def _routing(model: str, primary: str, served: Sequence[Signature]) -> Routing:
    inputs: dict[str, Route] = {}
    outputs: dict[str, dict[str, str]] = {}
    taken: set[str] = set()
    for sig in served:
        for tensor in sig.inputs:
            name = _unique(model, tensor_name(sig.name, tensor.alias, primary), taken)
            inputs[name] = Route(sig.name, tensor.alias)
        outputs[sig.name] = {
            t.alias: _unique(model, tensor_name(sig.name, t.alias, primary), taken) for t in sig.outputs
        }
    return Routing(primary, inputs, outputs)


def _unique(model: str, name: str, taken: set[str]) -> str:
    if name in taken:  # "a/b" + "c" against "a" + "b/c": set TF_SIGNATURE_DEF or declare the tensors
        raise InvalidArgument(f"model '{model}': two signature tensors would both be named '{name}'")
    taken.add(name)
    return name


def _max_batch_size(
    config: ModelConfig, served: Sequence[Signature], declared: bool, served_as_is: bool
) -> int:
    tensors = [t for s in served for t in (*s.inputs, *s.outputs)]
    if config.max_batch_size > 0:
        undynamic = [t.alias for t in tensors if not t.dynamic_batch]
        if undynamic and not declared:
            raise InvalidArgument(
                f"model '{config.name}': max_batch_size is {config.max_batch_size} but tensors "
                f"{undynamic} have no dynamic first dimension (set max_batch_size: 0)"
            )
        return config.max_batch_size
    if declared or served_as_is or not all(t.dynamic_batch for t in tensors):
        return 0
    return DEFAULT_MAX_BATCH_SIZE


def _spec(
    sig: Signature, tensor: SignatureTensor, primary: str, max_batch: int, optional: bool
) -> dict[str, Any]:
    dims = tensor.shape[1:] if max_batch > 0 else tensor.shape
    spec: dict[str, Any] = {
        "name": tensor_name(sig.name, tensor.alias, primary),
        "data_type": DATATYPE_TO_CONFIG[tensor.datatype],
        "dims": list(dims),
    }
    if optional:
        spec["optional"] = True
    return spec


def _tfserving_signatures(served: Sequence[Signature], routing: Routing) -> str:
    document = {}
    for sig in served:
        names = {r.alias: name for name, r in routing.inputs.items() if r.signature == sig.name}
        entry: dict[str, Any] = {
            "method_name": _METHODS.get(sig.method_name, "predict"),
            "inputs": names,
            "outputs": routing.outputs[sig.name],
        }
        if sig.takes_examples:
            entry["examples"] = "serialized"
        if names and entry["outputs"]:  # TF Serving's declaration needs both
            document[sig.name] = entry
    return json.dumps(document)


def _signature_defs(found: SavedModelSignatures, served: Sequence[Signature]) -> str:
    """The served signatures' entries and TensorFlow's own (the init op), as TF Serving shows them."""
    everything = json.loads(found.signature_def_json)
    shown = {s.name for s in served} | {n for n in everything if n not in found.signatures}
    return json.dumps({name: entry for name, entry in everything.items() if name in shown})


def _check_declared(config: ModelConfig, sig: Signature) -> None:
    for kind, specs, tensors in (
        ("input", config.inputs, sig.inputs),
        ("output", config.outputs, sig.outputs),
    ):
        by_alias = {t.alias: t for t in tensors}
        for spec in specs:
            tensor = by_alias.get(spec.name)
            where = f"model '{config.name}': {kind} '{spec.name}'"
            if tensor is None:
                raise InvalidArgument(f"{where} is not in signature '{sig.name}' (it has {sorted(by_alias)})")
            if tensor.datatype != spec.datatype:
                raise InvalidArgument(
                    f"{where} is {spec.datatype} in the configuration, {tensor.datatype} in signature '{sig.name}'"
                )
