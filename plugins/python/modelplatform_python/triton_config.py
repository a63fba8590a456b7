"""``auto_complete_config``: the ``pb_utils.ModelConfig`` a Triton python model completes at load.

Triton calls ``TritonPythonModel.auto_complete_config(config)`` once per load,
before ``initialize``, unless the server runs with
``--disable-auto-complete-config``. The model may add inputs and outputs,
set ``max_batch_size``, turn on the dynamic batcher and set the transaction
policy; what it returns is the model's configuration from then on (what
the config endpoint shows, what requests are checked against, how they
are batched). :class:`ModelConfig` keeps the python backend's documented
rules: a property the configuration already has may be restated but not
changed, and each helper refuses what it cannot take with ``ValueError``.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from modelplatform import InvalidArgument, ModelPlatformError
from modelplatform import ModelConfig as PlatformConfig

_INPUT_KEYS = ("name", "data_type", "dims", "optional")
_OUTPUT_KEYS = ("name", "data_type", "dims")


class ModelConfig:
    """``pb_utils.ModelConfig``: the configuration as Triton's JSON, with the completion helpers."""

    def __init__(self, model_config: str | bytes | dict[str, Any]) -> None:
        if isinstance(model_config, (str, bytes)):
            self._model_config: dict[str, Any] = json.loads(model_config)
        else:
            self._model_config = copy.deepcopy(dict(model_config))

    def as_dict(self) -> dict[str, Any]:
        """The configuration as it stands (read it; change it through the helpers)."""
        return self._model_config

    def set_max_batch_size(self, max_batch_size: int) -> None:
        """Set ``max_batch_size``; a larger one already configured is kept and this is refused."""
        configured = int(self._model_config.get("max_batch_size", 0))
        if configured > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {configured}, but in auto-complete-config "
                f"function for model '{self._name}' specified max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        """Use the dynamic batcher, unless another scheduler is configured (refused then)."""
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{other}', but auto-complete-config "
                    f"function for model '{self._name}' tries to set scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input: dict[str, Any]) -> None:
        """Declare an input (``name``, ``data_type``, ``dims``, optionally ``optional``)."""
        self._add("input", input, _INPUT_KEYS)

    def add_output(self, output: dict[str, Any]) -> None:
        """Declare an output (``name``, ``data_type``, ``dims``)."""
        self._add("output", output, _OUTPUT_KEYS)

    def set_model_transaction_policy(self, transaction_policy_dict: dict[str, Any]) -> None:
        """Set ``model_transaction_policy`` (only ``decoupled``); a configured value may not change."""
        unknown = [key for key in transaction_policy_dict if key != "decoupled"]
        if unknown:
            raise ValueError(
                f"model transaction property in auto-complete-config function for model "
                f"'{self._name}' contains property other than 'decoupled'."
            )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" not in transaction_policy_dict:
            return
        wanted = transaction_policy_dict["decoupled"]
        if "decoupled" in policy and policy["decoupled"] != wanted:
            raise ValueError(
                f"trying to change decoupled property in auto-complete-config for model "
                f"'{self._name}', which is already set to '{policy['decoupled']}'."
            )
        policy["decoupled"] = wanted

    @property
    def _name(self) -> str:
        return str(self._model_config.get("name", ""))

    def _add(self, kind: str, tensor: dict[str, Any], allowed: tuple[str, ...]) -> None:
        self._check_properties(kind, tensor, allowed)
        declared = self._model_config.setdefault(kind, [])
        for current in declared:
            if current.get("name") == tensor["name"]:
                self._merge(kind, current, tensor)
                return
        declared.append(dict(tensor))

    def _check_properties(self, kind: str, tensor: dict[str, Any], allowed: tuple[str, ...]) -> None:
        where = f"in auto-complete-config function for model '{self._name}'"
        extra = [key for key in tensor if key not in allowed]
        if extra:
            listed = ", ".join(f"'{key}'" for key in allowed)
            raise ValueError(
                f"{kind} '{tensor.get('name', '')}' {where} contains property other than {listed}."
            )
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                named = f"{kind} '{tensor['name']}'" if "name" in tensor else kind
                raise ValueError(f"{named} {where} is missing '{key}' property.")

    def _merge(self, kind: str, current: dict[str, Any], tensor: dict[str, Any]) -> None:
        """The same tensor again: it may fill what the configuration left open, never change it."""
        name, configured_type = tensor["name"], current.get("data_type", "TYPE_INVALID")
        if configured_type not in ("TYPE_INVALID", tensor["data_type"]):
            raise ValueError(
                f"unable to load model '{self._name}', configuration expects datatype "
                f"{configured_type} for {kind} '{name}', model provides {tensor['data_type']}"
            )
        if current.get("dims") and list(current["dims"]) != list(tensor["dims"]):
            raise ValueError(
                f"model '{self._name}', tensor '{name}': the model expects dims {list(tensor['dims'])} "
                f"but the model configuration specifies dims {list(current['dims'])}"
            )
        if "optional" in current and "optional" in tensor and current["optional"] != tensor["optional"]:
            raise ValueError(
                f"model '{self._name}', tensor '{name}': the model expects optional {tensor['optional']} "
                f"but the model configuration specifies optional {current['optional']}"
            )
        current.update(tensor)


async def auto_completed(model_class: Any, config: PlatformConfig) -> PlatformConfig:
    """``config`` as the model's ``auto_complete_config`` completes it (unchanged without one).

    The model's code runs on a worker thread. Whatever it raises, or a return
    that is not a ``pb_utils.ModelConfig``, or a completed configuration that
    does not hold, fails the load with the reason.
    """
    method = getattr(model_class, "auto_complete_config", None)
    if method is None:
        return config
    # The configuration as read, without the defaults to_json() adds for clients: an unset
    # transaction policy must stay settable (Triton hands the model its config so).
    given = ModelConfig(config.document or {"name": config.name})
    try:
        returned = await asyncio.to_thread(method, given)
    except Exception as error:  # noqa: BLE001 - the user's code: the load fails with its reason
        raise InvalidArgument(
            f"model '{config.name}': auto_complete_config raised {type(error).__name__}: {error}"
        ) from None
    if not isinstance(returned, ModelConfig):
        raise InvalidArgument(
            f"auto_complete_config function in model '{config.name}' must return a valid pb.ModelConfig object."
        )
    return _frozen(config, returned.as_dict())


def _frozen(config: PlatformConfig, completed: dict[str, Any]) -> PlatformConfig:
    document = {**copy.deepcopy(completed), "name": config.name}  # the folder names the model
    batching = document.get("dynamic_batching")
    max_batch = int(document.get("max_batch_size", 0) or 0)
    if isinstance(batching, dict) and not batching.get("preferred_batch_size") and max_batch > 0:
        batching["preferred_batch_size"] = [max_batch]  # Triton's normalisation of the result
    try:
        return PlatformConfig.from_json(document)
    except ModelPlatformError as error:
        raise InvalidArgument(
            f"model '{config.name}': the configuration auto_complete_config returned is invalid: {error}"
        ) from None
