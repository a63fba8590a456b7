"""TF Serving signatures and version labels, declared in a model's configuration.

A model declares them as ModelConfig ``parameters`` (strings holding JSON), so
the core's configuration stays Triton's::

    parameters { key: "tfserving.signatures" value { string_value: '{
      "serving_default": {"method_name": "predict", "inputs": {"x": "x"}, "outputs": {"y": "y"}}
    }' } }
    parameters { key: "tfserving.labels" value { string_value: '{"stable": 123}' } }

Each signature maps aliases (what TF Serving clients name) to the model's
tensor names. A classify or regress signature with ``"examples": "serialized"``
takes its examples as TF Serving feeds a SavedModel: serialized
``tensorflow.Example`` messages in its one string input; without it, each
example feature feeds the input of its name. ``tfserving.signature_def``
(optional) is the model's own ``signature_def`` map as protobuf JSON, which
the metadata APIs then answer as it is (the tensorflow backend sets both). Without a declaration, ``serving_default`` predicts over every
input and output under its own name. Parsed once per loaded configuration,
in a cache each server owns (:func:`signature_cache`): two servers in one
process never share one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from modelplatform import Internal, ModelConfig, ServerContext, TensorSpec, VersionInfo

SIGNATURES_KEY = "tfserving.signatures"
LABELS_KEY = "tfserving.labels"
SIGNATURE_DEF_KEY = "tfserving.signature_def"
SERIALIZED = "serialized"
DEFAULT_SIGNATURE = "serving_default"
PREDICT = "tensorflow/serving/predict"
CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"
METHODS = {"predict": PREDICT, "classify": CLASSIFY, "regress": REGRESS}
_MAX_CACHED = 512


@dataclass(frozen=True, slots=True)
class Alias:
    """One signature tensor: the client's alias and the model's tensor."""

    alias: str
    spec: TensorSpec
    full_shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Signature:
    name: str
    method_name: str
    inputs: tuple[Alias, ...]
    outputs: tuple[Alias, ...]
    #: Examples reach the one input as serialized tf.Example messages.
    serialized_examples: bool = False
    #: The outputs are every output the model declares: a predict without a filter names none.
    every_output: bool = False
    #: The inputs by alias, built once: every predict looks its inputs up here.
    inputs_by_alias: dict[str, Alias] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs_by_alias", {a.alias: a for a in self.inputs})

    def input_names(self) -> list[str]:
        return [a.alias for a in self.inputs]


@dataclass(frozen=True, slots=True)
class ModelSignatures:
    signatures: dict[str, Signature]
    labels: dict[str, str]
    #: The model's own ``signature_def`` map (protobuf JSON), when it declares one.
    signature_def: dict[str, Any] | None = None


class SignatureCache:
    """One server's parsed declarations, by model version.

    An entry holds the configuration it was parsed from: a version reloaded
    with another configuration is parsed again, and the entries of versions
    no longer served go when the cache is full.
    """

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, str], tuple[ModelConfig, ModelSignatures]] = {}

    def of(self, model: VersionInfo) -> ModelSignatures:
        """The parsed declaration of ``model``'s configuration."""
        key = (model.name, model.version)
        cached = self._parsed.get(key)
        if cached is not None and cached[0] is model.config:
            return cached[1]
        parsed = parse(model.config)
        if len(self._parsed) >= _MAX_CACHED:
            self._parsed.clear()
        self._parsed[key] = (model.config, parsed)
        return parsed

    def __contains__(self, model: VersionInfo) -> bool:
        cached = self._parsed.get((model.name, model.version))
        return cached is not None and cached[0] is model.config


def signature_cache(context: ServerContext) -> SignatureCache:
    """The server's one cache, shared by both tfserving plugins (REST and gRPC)."""
    return context.shared(SignatureCache, SignatureCache)


def parse(config: ModelConfig) -> ModelSignatures:
    declared = _load_json(config, SIGNATURES_KEY)
    signatures = (
        {name: _signature(config, name, body) for name, body in declared.items()}
        if declared
        else {DEFAULT_SIGNATURE: _default(config)}
    )
    labels = _labels(config, _load_json(config, LABELS_KEY))
    return ModelSignatures(signatures, labels, _load_json(config, SIGNATURE_DEF_KEY) or None)


def _load_json(config: ModelConfig, key: str) -> dict[str, Any]:
    text = config.parameters.get(key, "")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise _bad(config, key, f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise _bad(config, key, "must be a JSON object")
    return value


def _default(config: ModelConfig) -> Signature:
    return Signature(
        DEFAULT_SIGNATURE,
        PREDICT,
        tuple(_alias(config, s.name, s) for s in config.inputs),
        tuple(_alias(config, s.name, s) for s in config.outputs),
        every_output=True,
    )


def _signature(config: ModelConfig, name: str, body: Any) -> Signature:
    if not isinstance(body, dict):
        raise _bad(config, SIGNATURES_KEY, f"signature '{name}' must be an object")
    method: Any = body.get("method_name", "predict")  # checked against METHODS below
    method = METHODS.get(method, method)
    if method not in METHODS.values():
        raise _bad(config, SIGNATURES_KEY, f"signature '{name}' has unknown method_name {method!r}")
    inputs = _aliases(config, name, body.get("inputs"), config.input_spec, "input")
    outputs = _aliases(config, name, body.get("outputs"), config.output_spec, "output")
    serialized = body.get("examples", "") == SERIALIZED
    if serialized and (len(inputs) != 1 or inputs[0].spec.datatype != "BYTES"):
        raise _bad(config, SIGNATURES_KEY, f"signature '{name}': serialized examples need one string input")
    every_output = {a.spec.name for a in outputs} == {s.name for s in config.outputs}
    return Signature(name, method, inputs, outputs, serialized, every_output)


def _aliases(config: ModelConfig, name: str, mapping: Any, lookup: Any, kind: str) -> tuple[Alias, ...]:
    if not isinstance(mapping, dict) or not mapping:
        raise _bad(config, SIGNATURES_KEY, f"signature '{name}' needs a non-empty '{kind}s' object")
    aliases = []
    for alias, tensor in mapping.items():
        spec = lookup(tensor) if isinstance(tensor, str) else None
        if spec is None:
            raise _bad(config, SIGNATURES_KEY, f"signature '{name}': {kind} {tensor!r} is not declared")
        aliases.append(_alias(config, alias, spec))
    return tuple(aliases)


def _alias(config: ModelConfig, alias: str, spec: TensorSpec) -> Alias:
    return Alias(alias, spec, tuple(spec.full_shape(config.max_batch_size)))


def _labels(config: ModelConfig, labels: dict[str, Any]) -> dict[str, str]:
    resolved = {}
    for label, version in labels.items():
        text = str(version)
        if isinstance(version, bool) or not text.isdigit():
            raise _bad(config, LABELS_KEY, f"label '{label}' must name a version number")
        resolved[label] = text
    return resolved


def _bad(config: ModelConfig, key: str, reason: str) -> Internal:
    return Internal(f"model '{config.name}': parameter '{key}' {reason}")
