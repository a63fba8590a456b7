"""What becomes of each field of Triton's model configuration: nothing is silently ignored.

Every field of ``model_config.proto`` (all of Triton's) is in exactly one group,
named by its path from ``ModelConfig`` (``input.reshape.shape``; a map's values
are walked under the map's name, ``parameters.string_value``); a path listed
here covers every field under it:

- **implemented** (:data:`IMPLEMENTED`): read and honoured;
- **performance hints** (:data:`HINTS`): read and left to this server's own
  choices, since ignoring them changes no answer; the table "Performance
  hints" in docs/model-repository.md lists each with the reason (a test holds
  the two lists equal), and a model that sets one logs ``config_hints_ignored``;
- **refused** (:data:`REFUSED`): a configuration that sets one fails its load
  with an error naming the field, rather than running as if it were absent.

"Sets" means what protobuf reports as present: a scalar other than its
default, a non-empty list or map, a message written out (even empty).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import structlog

from modelplatform.base.errors import InvalidArgument

log = structlog.get_logger("modelplatform.base.model_config")

IMPLEMENTED = frozenset(
    {
        "name", "platform", "backend", "version_policy", "max_batch_size",
        "input.name", "input.data_type", "input.format", "input.dims", "input.reshape",
        "input.optional",
        "output.name", "output.data_type", "output.dims", "output.reshape", "output.label_filename",
        "instance_group.kind", "instance_group.count", "instance_group.gpus",
        "default_model_filename", "parameters", "model_warmup",
        "dynamic_batching.preferred_batch_size", "dynamic_batching.max_queue_delay_microseconds",
        "dynamic_batching.priority_levels", "dynamic_batching.default_priority_level",
        "dynamic_batching.default_queue_policy", "dynamic_batching.priority_queue_policy",
        "sequence_batching.max_sequence_idle_microseconds", "sequence_batching.control_input",
        "sequence_batching.direct", "sequence_batching.oldest.max_candidate_sequences",
        "sequence_batching.oldest.preferred_batch_size",
        "sequence_batching.oldest.max_queue_delay_microseconds",
        "ensemble_scheduling.step.model_name", "ensemble_scheduling.step.model_version",
        "ensemble_scheduling.step.input_map", "ensemble_scheduling.step.output_map",
        "ensemble_scheduling.max_inflight_requests",
        "model_transaction_policy", "response_cache",
    }
)  # fmt: skip

HINTS = frozenset(
    {
        "optimization", "dynamic_batching.preserve_ordering",
        "sequence_batching.oldest.preserve_ordering", "instance_group.name",
        "instance_group.rate_limiter", "instance_group.host_policy",
    }
)  # fmt: skip

#: Refused at load: each changes what a model computes or how it is run in a way
#: this server does not do, so running without it could answer differently.
REFUSED = frozenset(
    {
        "runtime", "input.is_shape_tensor", "input.allow_ragged_batch",
        "input.is_non_linear_format_io", "output.is_shape_tensor", "output.is_non_linear_format_io",
        "batch_input", "batch_output", "sequence_batching.state", "sequence_batching.iterative_sequence",
        "ensemble_scheduling.step.model_namespace", "instance_group.secondary_devices",
        "instance_group.profile", "instance_group.passive", "cc_model_filenames", "metric_tags",
        "model_operations", "model_repository_agents", "model_metrics",
    }
)  # fmt: skip

GROUPS = {"implemented": IMPLEMENTED, "hint": HINTS, "refused": REFUSED}


def group_of(path: str) -> str | None:
    """The group whose listed path is ``path`` or one above it (None when none lists it)."""
    for listed in _ancestors(path):
        for group, paths in GROUPS.items():
            if listed in paths:
                return group
    return None


def check_fields(proto: Any, model: str) -> None:
    """Refuse a configuration that sets a refused field; log the hints it sets."""
    hints: list[str] = []
    for path in sorted(set(set_paths(proto))):
        group = group_of(path)
        if group == "refused":
            raise InvalidArgument(
                f"model '{model}': config field '{path}' is not supported by this server "
                "(see docs/model-repository.md, 'Model configuration fields')"
            )
        if group == "hint":
            hints.append(path)
    if hints:
        log.info("config_hints_ignored", model=model, fields=hints)


def set_paths(message: Any, prefix: str = "") -> Iterator[str]:
    """The path of every field set in ``message``, leaves and messages alike."""
    for field, value in message.ListFields():
        path = prefix + field.name
        yield path
        if field.type != field.TYPE_MESSAGE:
            continue
        if field.message_type.GetOptions().map_entry:
            values = [v for v in value.values() if hasattr(v, "ListFields")]
        elif field.is_repeated:
            values = list(value)
        else:
            values = [value]
        for item in values:
            yield from set_paths(item, path + ".")


def _ancestors(path: str) -> Iterator[str]:
    """``a.b.c``, ``a.b``, ``a``: the most specific listing decides."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        yield ".".join(parts[:end])
