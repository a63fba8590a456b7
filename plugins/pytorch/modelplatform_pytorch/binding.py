"""Which configured tensor is which argument of ``forward`` and which element of its result.

Triton's pytorch backend rules, decided once at load:

- **Inputs.** A ``forward`` taking one ``Dict[str, Tensor]`` gets every input
  in that dict under its configured name. Otherwise ``forward`` takes tensors
  (or ``List[str]`` for a string input), as many as the configuration
  declares, bound by the first rule that covers every input: the names of
  ``forward``'s arguments; the ``<name>__<index>`` convention (``INPUT__0`` is
  the first argument); the order of the configuration.
- **Outputs.** ``forward`` returns a tensor, a ``List[str]``, or a tuple of
  them. Outputs named ``<name>__<index>`` take that element; otherwise the
  configuration's order decides.

Pure (the argument list is read from ``forward.schema`` by the caller), so it
is tested without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from modelplatform import InvalidArgument, ModelConfig

#: TorchScript type kinds a positional ``forward`` argument may have.
POSITIONAL_KINDS = ("TensorType", "ListType")


@dataclass(frozen=True, slots=True)
class Argument:
    """One ``forward`` argument after ``self``: its name, type kind and type text."""

    name: str
    kind: str
    type_text: str = ""


@dataclass(frozen=True, slots=True)
class Binding:
    #: True when forward takes one Dict[str, Tensor] holding every input by name.
    dict_input: bool
    #: Configured input names in the order forward takes them (a dict input: configuration order).
    inputs: tuple[str, ...]
    #: Configured output name -> position in forward's result.
    outputs: dict[str, int]
    #: How the inputs were bound: "dict", "argument names", "name__index" or "configuration order".
    rule: str


def bind(config: ModelConfig, arguments: Sequence[Argument]) -> Binding:
    if not config.inputs or not config.outputs:
        raise InvalidArgument(
            f"model '{config.name}': the pytorch backend needs every input and output declared "
            "in config.pbtxt (a TorchScript file does not carry their names, types or shapes)"
        )
    outputs = _outputs(config)
    if len(arguments) == 1 and arguments[0].kind == "DictType":
        return Binding(True, tuple(spec.name for spec in config.inputs), outputs, "dict")
    _check_arguments(config, arguments)
    order, rule = _input_order(config, arguments)
    return Binding(False, order, outputs, rule)


def _check_arguments(config: ModelConfig, arguments: Sequence[Argument]) -> None:
    where = f"model '{config.name}'"
    for argument in arguments:
        if argument.kind == "DictType":
            raise InvalidArgument(
                f"{where}: forward argument '{argument.name}' is a dict; only a forward taking a single "
                "Dict[str, Tensor] argument, or tensors only, is supported"
            )
        if argument.kind not in POSITIONAL_KINDS:
            raise InvalidArgument(
                f"{where}: forward argument '{argument.name}' is {argument.type_text or argument.kind}; "
                "only Tensor (or List[str] for a string input) arguments are supported"
            )
    if len(arguments) != len(config.inputs):
        raise InvalidArgument(
            f"{where}: the configuration declares {len(config.inputs)} inputs, forward takes "
            f"{len(arguments)} ({', '.join(a.name for a in arguments) or 'none'})"
        )


def _input_order(config: ModelConfig, arguments: Sequence[Argument]) -> tuple[tuple[str, ...], str]:
    names = [spec.name for spec in config.inputs]
    argument_names = [a.name for a in arguments]
    if set(names) == set(argument_names):
        return tuple(argument_names), "argument names"
    indices = _indices(config, names, "input")
    if indices is not None:
        return tuple(sorted(names, key=indices.__getitem__)), "name__index"
    return tuple(names), "configuration order"


def _outputs(config: ModelConfig) -> dict[str, int]:
    names = [spec.name for spec in config.outputs]
    indices = _indices(config, names, "output")
    return indices if indices is not None else {name: i for i, name in enumerate(names)}


def _indices(config: ModelConfig, names: Sequence[str], kind: str) -> dict[str, int] | None:
    """name -> index when every name follows ``<name>__<index>``, else None (Triton's test)."""
    indices = {}
    for name in names:
        _, separator, tail = name.partition("__")
        if not separator or not tail.isdigit():
            return None
        indices[name] = int(tail)
    if sorted(indices.values()) != list(range(len(names))) and kind == "input":
        raise InvalidArgument(
            f"model '{config.name}': input indices {sorted(indices.values())} of the <name>__<index> "
            f"convention must be 0..{len(names) - 1}, each once"
        )
    if len(set(indices.values())) != len(indices):
        raise InvalidArgument(f"model '{config.name}': two {kind}s name the same <name>__<index> index")
    return indices
