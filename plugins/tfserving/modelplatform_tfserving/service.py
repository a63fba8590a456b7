"""Predict, classify and regress over the dataplane, shared by REST and gRPC.

Each edge decodes its wire form into aliases -> arrays (predict) or
examples (classify/regress); this module finds the servable and signature,
builds the InferenceRequest, and hands back arrays keyed by alias, or
per-example results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from modelplatform import (
    InferenceRequest,
    Internal,
    InvalidArgument,
    ModelNotFound,
    RequestedOutput,
    ServerContext,
    Tensor,
    VersionInfo,
)

from .errors import servable_not_found
from .examples import Example, signature_inputs
from .limits import Limits
from .servables import Selector, servable, signature
from .signatures import CLASSIFY, REGRESS, Alias, Signature, signature_cache

Classification = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class Resolved:
    model: VersionInfo
    signature: Signature


class TfService:
    """Bound to one server's dataplane; built once at start-up."""

    def __init__(self, context: ServerContext) -> None:
        self.dataplane = context.dataplane
        self.inference = context.dataplane.inference
        self.limits = Limits.from_settings(context.settings)
        #: The server's parsed signature declarations (its own: never another server's).
        self.signatures = signature_cache(context)

    def resolve(self, selector: Selector, signature_name: str) -> Resolved:
        model = servable(self.dataplane, selector, self.signatures)
        return Resolved(model, signature(model, signature_name, self.signatures))

    async def predict(
        self, target: Resolved, inputs: dict[str, np.ndarray], output_filter: list[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Run the signature; the answer maps output aliases to arrays."""
        sig = target.signature
        by_alias = sig.inputs_by_alias
        if inputs.keys() != by_alias.keys():
            _check_aliases(sig, inputs)
        tensors = [_tensor(by_alias[name], array) for name, array in inputs.items()]
        outputs = _outputs(sig, output_filter)
        named = not (sig.every_output and not output_filter)  # else the model's whole answer
        arrays = await self._run(target.model, tensors, outputs, named)
        return {a.alias: arrays[a.spec.name] for a in outputs}

    async def regress(self, target: Resolved, examples: list[Example]) -> list[float]:
        sig = _expect_method(target.signature, REGRESS, "regression")
        output = sig.outputs[0] if len(sig.outputs) == 1 else _named(sig, "outputs")
        values = await self._examples(target, examples, [output])
        result = values[output.spec.name]
        if result.ndim == 2 and result.shape[1] == 1:
            result = result[:, 0]
        if result.ndim != 1:
            raise InvalidArgument(
                "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] "
                f"but got {list(result.shape)}"
            )
        _check_batch(len(examples), result.shape[0])
        return result.astype(np.float32).tolist()

    async def classify(self, target: Resolved, examples: list[Example]) -> list[Classification]:
        sig = _expect_method(target.signature, CLASSIFY, "classification")
        scores, classes = _classify_outputs(sig)
        arrays = await self._examples(target, examples, [a for a in (scores, classes) if a])
        score = _as_matrix(arrays[scores.spec.name]) if scores else None
        label = _as_matrix(arrays[classes.spec.name]) if classes else None
        rows = (score if score is not None else label).shape[0]  # type: ignore[union-attr]  # a signature has scores or classes (signatures.py)
        _check_batch(len(examples), rows)
        return [_classes(score, label, i) for i in range(rows)]

    async def _examples(
        self, target: Resolved, examples: list[Example], outputs: list[Alias]
    ) -> dict[str, np.ndarray]:
        arrays = signature_inputs(examples, target.signature, self.limits)
        specs = {a.spec.name: a.spec for a in target.signature.inputs}
        tensors = [Tensor(n, specs[n].datatype, tuple(a.shape), a) for n, a in arrays.items()]
        return await self._run(target.model, tensors, outputs)

    async def _run(
        self, model: VersionInfo, tensors: list[Tensor], outputs: list[Alias], named: bool = True
    ) -> dict[str, np.ndarray]:
        """The model's outputs by tensor name: ``outputs`` asked for by name, or (``named``
        False, when they are all the model has) the whole answer, without the per-name checks."""
        request = InferenceRequest(
            model_name=model.name,
            model_version=model.version,
            inputs=tensors,
            outputs=[RequestedOutput(a.spec.name) for a in outputs] if named else None,
        )
        try:
            response = await self.inference.infer(request)
        except ModelNotFound:  # unloaded since it was resolved
            raise servable_not_found(model.name, model.version) from None
        arrays = {t.name: np.asarray(t.data).reshape(t.shape) for t in response.outputs}
        for alias in outputs:
            if alias.spec.name not in arrays:
                raise Internal(f"model '{model.name}' did not return output '{alias.spec.name}'")
        return arrays


def _tensor(alias: Alias, array: np.ndarray) -> Tensor:
    return Tensor(alias.spec.name, alias.spec.datatype, tuple(array.shape), array)


def _check_aliases(sig: Signature, inputs: dict[str, np.ndarray]) -> None:
    expected = set(sig.input_names())
    sent = set(inputs)
    if sent != expected:
        raise InvalidArgument(
            f"input size does not match signature: {len(sent)}!={len(expected)} "
            f"len({_set(sent)}) != len({_set(expected)}). Sent extra: {_set(sent - expected)}. "
            f"Missing but required: {_set(expected - sent)}."
        )


def _set(names: set[str]) -> str:
    return "{" + ",".join(sorted(names)) + "}"


def _outputs(sig: Signature, output_filter: list[str] | None) -> list[Alias]:
    if not output_filter:
        return list(sig.outputs)
    by_alias = {a.alias: a for a in sig.outputs}
    chosen = []
    for name in dict.fromkeys(output_filter):
        if name not in by_alias:
            raise InvalidArgument(
                f"output tensor alias not found in signature: {name} Outputs expected to be "
                f"in the set {_set(set(by_alias))}."
            )
        chosen.append(by_alias[name])
    return chosen


def _expect_method(sig: Signature, method: str, what: str) -> Signature:
    if sig.method_name != method:
        raise InvalidArgument(f"Expected {what} signature method_name to be {method}. Was: {sig.method_name}")
    return sig


def _named(sig: Signature, alias: str) -> Alias:
    for candidate in sig.outputs:
        if candidate.alias == alias:
            return candidate
    raise InvalidArgument(f"No output tensor named '{alias}' in signature '{sig.name}'")


def _classify_outputs(sig: Signature) -> tuple[Alias | None, Alias | None]:
    by_alias = {a.alias: a for a in sig.outputs}
    scores, classes = by_alias.get("scores"), by_alias.get("classes")
    if scores is None and classes is None:
        if len(sig.outputs) != 1:
            raise InvalidArgument(
                f"Expected classification signature '{sig.name}' to have a 'scores' or 'classes' output"
            )
        scores = sig.outputs[0]
    return scores, classes


def _as_matrix(array: np.ndarray) -> np.ndarray:
    """Scores or labels as [batch, classes]; a rank-1 output is one class each."""
    if array.ndim == 1:
        return array.reshape(-1, 1)
    if array.ndim != 2:
        raise InvalidArgument(
            f"Expected classification output shape [batch_size, num_classes], got {list(array.shape)}"
        )
    return array


def _classes(score: np.ndarray | None, label: np.ndarray | None, row: int) -> Classification:
    count = (score if score is not None else label).shape[1]  # type: ignore[union-attr]  # a signature has scores or classes (signatures.py)
    return [
        (
            _label(label[row, k]) if label is not None else "",
            float(np.float32(score[row, k])) if score is not None else 0.0,
        )
        for k in range(count)
    ]


def _label(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _check_batch(examples: int, results: int) -> None:
    if examples != results:
        raise InvalidArgument(f"Input batch size did not match output batch size: {examples} vs. {results}")
