"""Checks that run before any backend does.

``element_count`` is for codecs: call it on a client-sent shape before
allocating anything. ``validate_request`` compares a decoded request with the
model's declaration and names the model, the tensor, what was expected and
what arrived. :class:`RequestRules` is the dataplane's form of it: the same
checks with what they need from the configuration worked out once per loaded
version, so a request that fits costs a few dict lookups; one that does not
goes through ``validate_request`` for the words. A request rebuilt from a
codec's template carries its layout (``InferenceRequest.layout``): once one
request of a layout fits, the others of that layout fit too, and are not
checked again.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform.base.errors import InvalidArgument, InvalidInput, LimitExceeded
from modelplatform.base.inference import InferenceRequest, Tensor
from modelplatform.base.model_config import ModelConfig, TensorSpec


def element_count(shape: Sequence[int], limit: int, name: str = "") -> int:
    """The element count of a client-sent shape, refused if negative or over ``limit``.

    ``name`` (the tensor's) is put in the message.
    """
    what = f"input '{name}': " if name else ""
    count = 1
    for index, dim in enumerate(shape):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
            raise InvalidArgument(f"{what}shape {list(shape)} has an invalid dimension {dim!r}")
        count *= dim
        if count > limit:
            at_least = any(d != 1 for d in shape[index + 1 :])
            raise LimitExceeded(f"{what}element count of shape {list(shape)}", count, limit, at_least)
    if count == 0:  # no elements, yet numpy cannot shape even an empty array as [0, 2**40, 2**40]
        _check_dimensions(shape, limit, what)
    return count


def _check_dimensions(shape: Sequence[int], limit: int, what: str) -> None:
    """Beside a 0, each dimension and the product of the non-zero ones stay within ``limit``."""
    product = 1
    for index, dim in enumerate(shape):
        if dim > limit:
            raise LimitExceeded(f"{what}dimension {index} of shape {_shown(shape)}", dim, limit)
        product *= dim or 1
        if product > limit:
            raise LimitExceeded(f"{what}non-zero dimensions of shape {_shown(shape)}", product, limit)


def _shown(shape: Sequence[int]) -> str:
    """A client's shape for a message, cut short: it may hold thousands of dimensions."""
    text = str(list(shape))
    return text if len(text) <= 200 else text[:200] + "...]"


#: Layouts remembered as fitting, per loaded configuration; the set starts over beyond this.
MAX_FITTING_LAYOUTS = 256


class RequestRules:
    """``validate_request`` for one configuration, prepared once (the module's docstring)."""

    __slots__ = ("config", "_inputs", "_required", "_outputs", "_max_batch", "fitting")

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._inputs = {spec.name: spec for spec in config.inputs}
        self._required = frozenset(spec.name for spec in config.inputs if not spec.optional)
        self._outputs = frozenset(spec.name for spec in config.outputs) if config.outputs else None
        self._max_batch = config.max_batch_size
        #: The layouts known to fit (read by the dataplane, to skip the call; never None).
        self.fitting: set[object] = set()

    def check(self, request: InferenceRequest) -> None:
        """Raise what ``validate_request`` raises unless the request fits the model."""
        layout = request.layout
        if layout is not None and layout in self.fitting:
            return  # a layout checked before: same names, types, shapes and counts
        if not self._fits(request):
            validate_request(request, self.config)
        if layout is not None:
            if len(self.fitting) >= MAX_FITTING_LAYOUTS:
                self.fitting.clear()
            self.fitting.add(layout)

    def _fits(self, request: InferenceRequest) -> bool:
        inputs, max_batch = self._inputs, self._max_batch
        seen: set[str] = set()
        batch = -1
        for tensor in request.inputs:
            spec = inputs.get(tensor.name)
            shape = tensor.shape
            if (
                spec is None
                or tensor.name in seen
                or tensor.datatype != spec.datatype
                or not _shape_matches(spec.dims, shape, max_batch)
                or tensor.data.size != _product(shape)
            ):
                return False
            seen.add(tensor.name)
            if max_batch > 0:
                if batch >= 0 and shape[0] != batch:
                    return False
                batch = shape[0]
        if not self._required <= seen:
            return False
        if request.outputs is not None and self._outputs is not None:
            for output in request.outputs:
                if output.name not in self._outputs:
                    return False
        return True


def validate_request(request: InferenceRequest, config: ModelConfig) -> None:
    """Raise InvalidInput/InvalidArgument unless the request fits the model."""
    seen: set[str] = set()
    batch_sizes: set[int] = set()
    for tensor in request.inputs:
        if tensor.name in seen:
            raise InvalidArgument(f"model '{config.name}': input '{tensor.name}' given twice")
        seen.add(tensor.name)
        spec = _declared(config, tensor.name)
        _check_tensor(config, spec, tensor)
        if config.batching:
            batch_sizes.add(tensor.shape[0])
    _check_required(config, seen)
    if len(batch_sizes) > 1:
        raise InvalidArgument(
            f"model '{config.name}': inputs have different batch sizes {sorted(batch_sizes)}"
        )
    _check_outputs(config, request)


def _declared(config: ModelConfig, name: str) -> TensorSpec:
    spec = config.input_spec(name)
    if spec is None:
        declared = ", ".join(s.name for s in config.inputs)
        raise InvalidInput(config.name, name, f"one of the inputs [{declared}]", "unknown input")
    return spec


def _check_tensor(config: ModelConfig, spec: TensorSpec, tensor: Tensor) -> None:
    if tensor.datatype != spec.datatype:
        raise InvalidInput(config.name, spec.name, f"datatype {spec.datatype}", tensor.datatype)
    if not _shape_matches(spec.dims, tensor.shape, config.max_batch_size):
        expected = spec.full_shape(config.max_batch_size)
        raise InvalidInput(
            config.name, spec.name, f"shape {_describe(expected, config)}", f"{list(tensor.shape)}"
        )
    if tensor.data.size != _product(tensor.shape):
        raise InvalidInput(
            config.name,
            spec.name,
            f"{_product(tensor.shape)} elements for shape {list(tensor.shape)}",
            f"{tensor.data.size} elements",
        )


def _shape_matches(dims: Sequence[int], shape: Sequence[int], max_batch: int) -> bool:
    """``shape`` against the declared dims (after a batch dimension when batching)."""
    if max_batch > 0:
        if len(shape) != len(dims) + 1 or not 1 <= shape[0] <= max_batch:
            return False
        shape = shape[1:]
    elif len(shape) != len(dims):
        return False
    for declared, given in zip(dims, shape):  # a plain loop: no generator per request
        if declared != -1 and declared != given:
            return False
    return True


def _describe(expected: list[int], config: ModelConfig) -> str:
    if config.batching:
        return f"{expected} with a batch size of 1 to {config.max_batch_size}"
    return str(expected)


def _check_required(config: ModelConfig, seen: set[str]) -> None:
    missing = [s.name for s in config.inputs if not s.optional and s.name not in seen]
    if missing:
        raise InvalidArgument(
            f"model '{config.name}': expected {len(config.inputs)} inputs, "
            f"missing required input(s) {missing}"
        )


def _check_outputs(config: ModelConfig, request: InferenceRequest) -> None:
    if request.outputs is None or not config.outputs:
        return
    for output in request.outputs:
        if config.output_spec(output.name) is None:
            declared = ", ".join(s.name for s in config.outputs)
            raise InvalidArgument(
                f"model '{config.name}': unknown output '{output.name}' (declared: [{declared}])"
            )


def _product(shape: Sequence[int]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count
