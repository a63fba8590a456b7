"""Triton's pytorch backend parameters, read from the model configuration.

The names and meanings are Triton's, so an existing ``config.pbtxt`` keeps
them::

    parameters { key: "INFERENCE_MODE" value: { string_value: "true" } }
    parameters { key: "DISABLE_OPTIMIZED_EXECUTION" value: { string_value: "false" } }
    parameters { key: "INTRA_OP_THREAD_COUNT" value: { string_value: "2" } }
    parameters { key: "INTER_OP_THREAD_COUNT" value: { string_value: "1" } }
    parameters { key: "ENABLE_CACHE_CLEANING" value: { string_value: "false" } }

Nothing is silently ignored: Triton's other pytorch parameters are accepted
only where their value asks for what this backend does anyway, and refused
by name otherwise. Keys that are not Triton's pytorch parameters belong to
others (a dialect may read one) and are left alone. Parsing is pure, so it is
tested without torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modelplatform import InvalidArgument

TRUE = frozenset({"true", "1", "yes", "on"})
FALSE = frozenset({"false", "0", "no", "off"})

#: Triton parameters this backend does not implement -> the value that means "as here" (None: refused).
NOT_IMPLEMENTED: dict[str, bool | None] = {
    "DISABLE_CUDNN": False,
    "ENABLE_WEIGHT_SHARING": False,
    "ENABLE_JIT_PROFILING": True,
    "ENABLE_JIT_EXECUTOR": True,
    "ENABLE_TENSOR_FUSER": True,
    "TORCH_COMPILE_OPTIONAL_PARAMETERS": None,
}
#: Triton's names of the thread counts on its Python-based torch path: the same settings.
THREAD_ALIASES = {"NUM_THREADS": "INTRA_OP_THREAD_COUNT", "NUM_INTEROP_THREADS": "INTER_OP_THREAD_COUNT"}


@dataclass(frozen=True, slots=True)
class TorchSettings:
    inference_mode: bool = True
    optimized_execution: bool = True
    #: 0: leave torch's own choice (the number of cores).
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    cache_cleaning: bool = False


def parse(model: str, parameters: Mapping[str, str]) -> TorchSettings:
    """Read and check the pytorch parameters; raises InvalidArgument naming the bad one."""
    values = _with_aliases(model, parameters)
    for key, accepted in NOT_IMPLEMENTED.items():
        if key in values:
            _refuse_unless(model, key, values[key], accepted)
    return TorchSettings(
        inference_mode=_flag(model, values, "INFERENCE_MODE", True),
        optimized_execution=not _flag(model, values, "DISABLE_OPTIMIZED_EXECUTION", False),
        intra_op_threads=_count(model, values, "INTRA_OP_THREAD_COUNT"),
        inter_op_threads=_count(model, values, "INTER_OP_THREAD_COUNT"),
        cache_cleaning=_flag(model, values, "ENABLE_CACHE_CLEANING", False),
    )


def _with_aliases(model: str, parameters: Mapping[str, str]) -> dict[str, str]:
    values = dict(parameters)
    for alias, name in THREAD_ALIASES.items():
        if alias not in values:
            continue
        if name in values and values[name].strip() != values[alias].strip():
            raise InvalidArgument(
                f"model '{model}': parameters '{alias}' and '{name}' name the same setting "
                f"with different values ('{values[alias]}', '{values[name]}')"
            )
        values[name] = values.pop(alias)
    return values


def _refuse_unless(model: str, key: str, raw: str, accepted: bool | None) -> None:
    if accepted is not None and _bool(model, key, raw) == accepted:
        return
    raise InvalidArgument(
        f"model '{model}': parameter '{key}' = '{raw}' is not supported by the pytorch backend "
        "(docs/backends/pytorch.md lists what is)"
    )


def _flag(model: str, values: Mapping[str, str], key: str, default: bool) -> bool:
    raw = values.get(key)
    return default if raw is None else _bool(model, key, raw)


def _bool(model: str, key: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise InvalidArgument(f"model '{model}': parameter '{key}' must be true or false, got '{raw}'")


def _count(model: str, values: Mapping[str, str], key: str) -> int:
    raw = values.get(key, "0").strip() or "0"
    if not raw.isdigit():
        raise InvalidArgument(f"model '{model}': parameter '{key}' must be a whole number >= 0, got '{raw}'")
    return int(raw)
