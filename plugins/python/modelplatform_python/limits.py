"""The plugin's options; mostly how long a process instance's call may take and how large it may grow.

Two bounds keep a faulty model from taking its instance down for good: an
execute timeout (a call that never returns) and a memory bound (a child
that keeps growing). Past either, the child is killed and started afresh
(child_process.py). Each bound has a server default, declared once in
:data:`OPTIONS` (``--python-execute-timeout-secs``,
``MODELPLATFORM_PYTHON_EXECUTE_TIMEOUT_SECS`` or the config file's
``[plugins.python]`` table), that a model overrides with a parameter::

    [plugins.python]
    execute_timeout_secs = 300    # 0: no timeout
    max_memory_mib = 0            # 0: no bound

    parameters { key: "python.execute_timeout_secs" value: { string_value: "30" } }
    parameters { key: "python.max_memory_mib" value: { string_value: "2048" } }

Only ``process`` instances can be bounded: a thread in the server process
cannot be stopped from outside, so a model that sets either parameter with
``thread`` instances fails its load with the reason.

One more option keeps Triton's top-level name: ``--disable-auto-complete-config``
(triton_config.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplatform import InvalidArgument, ModelConfig, Option, Settings

PLUGIN = "python"
EXECUTE_TIMEOUT = "python.execute_timeout_secs"
MAX_MEMORY = "python.max_memory_mib"
MiB = 1024 * 1024
#: Defaults: a call gets five minutes (Triton has no bound: a hung stub holds its
#: instance forever); memory is unbounded, since no one size suits every model.
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MAX_MEMORY_MIB = 0


def _check_timeout(seconds: float) -> None:
    _seconds(seconds, "execute_timeout_secs")


def _check_memory(mebibytes: float) -> None:
    _mebibytes(mebibytes, "max_memory_mib")


OPTIONS = (
    Option("execute_timeout_secs", float, DEFAULT_TIMEOUT_S, "Seconds one call of a process "
           "instance may take before its child is killed and restarted; 0: no timeout (a model's "
           "python.execute_timeout_secs wins).", _check_timeout,
           metavar="<seconds>"),
    # A float checked whole, so that 1.5 is refused by name (as a model's parameter is).
    Option("max_memory_mib", float, DEFAULT_MAX_MEMORY_MIB, "Resident memory (MiB) a process "
           "instance's child may reach before it is killed and restarted; 0: no bound (a model's "
           "python.max_memory_mib wins).", _check_memory,
           metavar="<MiB>"),
    # Triton's flag, kept by its name: a Triton user's command line works unchanged.
    Option("disable_auto_complete_config", bool, False, "Do not call a Triton python model's "
           "auto_complete_config at load: the model gets config.pbtxt as written (Triton's flag).",
           top_level=True),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class PythonOptions:
    """The plugin's options (:data:`OPTIONS`): the defaults every process-instance model gets."""

    #: Seconds one ``infer`` call may take in a child; 0 means no timeout.
    execute_timeout_secs: float = DEFAULT_TIMEOUT_S
    #: Resident memory (RSS) a child may reach, in MiB; 0 means no bound.
    max_memory_mib: int = DEFAULT_MAX_MEMORY_MIB
    #: True: a ``TritonPythonModel``'s ``auto_complete_config`` is not called (triton_config.py).
    disable_auto_complete_config: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> PythonOptions:
        return cls.from_mapping(settings.options_for(PLUGIN))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> PythonOptions:
        """From a ``[plugins.python]``-like mapping, checked again (the resolver checked the settings')."""
        unknown = sorted(
            set(values) - {"execute_timeout_secs", "max_memory_mib", "disable_auto_complete_config"}
        )
        if unknown:
            raise InvalidArgument(f"[plugins.python]: unknown option(s) {unknown}")
        timeout = values.get("execute_timeout_secs", DEFAULT_TIMEOUT_S)
        memory = values.get("max_memory_mib", DEFAULT_MAX_MEMORY_MIB)
        where = "[plugins.python]"
        no_completion = values.get("disable_auto_complete_config", False)
        if not isinstance(no_completion, bool):
            raise InvalidArgument(f"{where} disable_auto_complete_config must be true or false")
        return cls(
            _seconds(timeout, f"{where} execute_timeout_secs"),
            _mebibytes(memory, f"{where} max_memory_mib"),
            no_completion,
        )


@dataclass(frozen=True, slots=True)
class ProcessLimits:
    """One model's bounds, resolved at load; None means unbounded."""

    execute_timeout_s: float | None
    max_memory_bytes: int | None

    @property
    def max_memory_mib(self) -> int:
        return (self.max_memory_bytes or 0) // MiB


def process_limits(config: ModelConfig, defaults: PythonOptions) -> ProcessLimits:
    """The model's parameters over the server defaults; a bad value fails the load."""
    seconds, mebibytes = defaults.execute_timeout_secs, defaults.max_memory_mib
    if (timeout := config.parameters.get(EXECUTE_TIMEOUT)) is not None:
        what = f"model '{config.name}': parameter '{EXECUTE_TIMEOUT}'"
        seconds = _seconds(_number(timeout, what), what)
    if (memory := config.parameters.get(MAX_MEMORY)) is not None:
        what = f"model '{config.name}': parameter '{MAX_MEMORY}'"
        mebibytes = _mebibytes(_number(memory, what), what)
    return ProcessLimits(seconds or None, mebibytes * MiB or None)


def refuse_limits_for_threads(config: ModelConfig) -> None:
    """Thread instances cannot be stopped from outside: asking for a bound is a mistake."""
    asked = [name for name in (EXECUTE_TIMEOUT, MAX_MEMORY) if name in config.parameters]
    if asked:
        raise InvalidArgument(
            f"model '{config.name}': parameter '{asked[0]}' needs "
            "'python.instance_kind' 'process' (a thread instance cannot be stopped)"
        )


def _number(text: str, what: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise InvalidArgument(f"{what} must be a number, got '{text}'") from None


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{what} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"{what} must be 0 (no timeout) or more, got {value!r}")
    return float(value)


def _mebibytes(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{what} must be a whole number of MiB, got {value!r}")
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise InvalidArgument(f"{what} must be 0 (no bound) or a whole number of MiB, got {value!r}")
    return int(value)
