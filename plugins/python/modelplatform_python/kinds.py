"""Where a model's instances run: the ``python.instance_kind`` model parameter."""

from __future__ import annotations

from modelplatform import InvalidArgument, ModelConfig

#: The model configuration parameter choosing where instances run.
INSTANCE_KIND = "python.instance_kind"
THREAD, PROCESS = "thread", "process"


def instance_kind(config: ModelConfig) -> str:
    """``thread`` (the default) or ``process``; anything else fails the load."""
    value = config.parameters.get(INSTANCE_KIND, THREAD).strip().lower() or THREAD
    if value not in (THREAD, PROCESS):
        raise InvalidArgument(
            f"model '{config.name}': parameter '{INSTANCE_KIND}' must be one of "
            f"['{PROCESS}', '{THREAD}'], got '{value}'"
        )
    return value
