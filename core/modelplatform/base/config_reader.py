"""The config reader: Triton's config.pbtxt (a subset) into plain frozen dataclasses.

Parsed with protobuf text format against ``protos/modelplatform/protos/
model_config.proto``, which holds every field of Triton's, with its names and
numbers: an existing Triton repository parses as it is. What becomes of each
field (implemented, a performance hint, or refused by name) is
config_fields.py's; a field Triton does not have is refused, as Triton refuses it.

Protobuf stays in this module and its helper config_sequence (the only core
modules besides the generated ``protos/`` that import it): what leaves it is a
:class:`~modelplatform.base.model_config.ModelConfig` of frozen dataclasses and
plain values, including the whole configuration as Triton's JSON document.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog
from google.protobuf import json_format, text_format

from modelplatform.base.config_fields import check_fields
from modelplatform.base.config_sequence import fill_sequence_defaults, sequence_batching
from modelplatform.base.dtypes import CONFIG_TO_DATATYPE
from modelplatform.base.errors import InvalidArgument
from modelplatform.base.model_config import (
    CONFIG_FILE,
    DEFAULT_QUEUE_SIZE,
    DynamicBatching,
    EnsembleScheduling,
    EnsembleStep,
    InstanceGroup,
    ModelConfig,
    ModelWarmup,
    QueuePolicy,
    TensorSpec,
    VersionPolicy,
    WarmupInput,
)
from modelplatform.protos import model_config_pb2 as pb

log = structlog.get_logger("modelplatform.base.model_config")

#: The (u)int64 fields protobuf's JSON printer writes as strings.
_INT64_FIELDS = frozenset(
    {
        "dims",
        "shape",
        "versions",
        "max_queue_delay_microseconds",
        "priority_levels",
        "default_priority_level",
        "default_timeout_microseconds",
        "model_version",
        "max_sequence_idle_microseconds",
    }
)


#: The (u)int64 fields of the messages the proto gained to hold all of Triton's fields.
_MORE_INT64_FIELDS = frozenset({"dim", "device_id", "max_sequence_idle_microseconds"})


def _ints_as_numbers(value: Any, key: str = "") -> Any:
    """protobuf prints int64/uint64 as strings; Triton's config JSON has numbers."""
    if isinstance(value, dict):
        return {k: _ints_as_numbers(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints_as_numbers(v, key) for v in value]
    if (key in _INT64_FIELDS or key in _MORE_INT64_FIELDS) and isinstance(value, str):
        return int(value)
    return value


#: Instances one model version may ask for, all groups together (a load runs every one).
MAX_INSTANCES = 1024


def parse_text(text: str, source: str = CONFIG_FILE) -> pb.ModelConfig:
    """Parse config.pbtxt text; a field Triton's configuration does not have is refused by name."""
    proto = _parsed_text(text, source)
    _refuse_unknown_enums(proto, "", source)  # the text format takes enum numbers too (data_type: 32)
    return proto


def _parsed_text(text: str, source: str) -> pb.ModelConfig:
    proto = pb.ModelConfig()
    try:
        text_format.Parse(text, proto)  # the proto holds every Triton field: another is a mistake
    except (text_format.ParseError, ValueError) as error:  # ValueError: a number out of range
        raise InvalidArgument(f"{source}: {error}") from None
    return proto


def parse_json(data: Mapping[str, Any] | str | bytes) -> pb.ModelConfig:
    """Parse Triton's JSON model configuration (as the repository load API sends)."""
    proto = pb.ModelConfig()
    try:
        if isinstance(data, (str, bytes)):
            json_format.Parse(data, proto)
        else:
            json_format.ParseDict(data, proto)
    except json_format.ParseError as error:
        raise InvalidArgument(f"invalid model configuration JSON: {error}") from None
    _refuse_unknown_enums(proto, "")
    return proto


def _refuse_unknown_enums(message: Any, where: str, source: str = "invalid model configuration JSON") -> None:
    """Proto3 enums keep any number a client sends (``"kind": -1``); no later code can name it."""
    for field, value in message.ListFields():
        path = f"{where}{field.name}"
        if field.type == field.TYPE_ENUM:
            numbers = field.enum_type.values_by_number
            for number in value if _repeated(field) else (value,):
                if number not in numbers:
                    raise InvalidArgument(f"{source}: '{path}' has no value {number}")
        elif field.type == field.TYPE_MESSAGE:
            for item in _submessages(field, value):
                _refuse_unknown_enums(item, path + ".", source)


def _repeated(field: Any) -> bool:
    return bool(field.is_repeated)  # protobuf 6 deprecates ``label``


def _submessages(field: Any, value: Any) -> list[Any]:
    if field.message_type.GetOptions().map_entry:
        return [v for v in value.values() if hasattr(v, "ListFields")]
    return list(value) if _repeated(field) else [value]


def load_file(model_dir: Path) -> pb.ModelConfig:
    """The model's config.pbtxt, or an empty config named after the folder."""
    path = model_dir / CONFIG_FILE
    if not path.is_file():
        return pb.ModelConfig(name=model_dir.name)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:  # protobuf's text format is UTF-8
        raise InvalidArgument(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    proto = parse_text(text, str(path))
    if proto.name and proto.name != model_dir.name:
        raise InvalidArgument(f"{path}: name '{proto.name}' does not match its folder '{model_dir.name}'")
    proto.name = model_dir.name
    return proto


def read_config(model_dir: Path, override: Mapping[str, Any] | None = None, name: str = "") -> ModelConfig:
    """A model folder's configuration, validated and frozen.

    ``override`` (Triton's JSON, as a load request sends) replaces the folder's
    config.pbtxt but keeps the backend or platform the folder implies; ``name``
    replaces the folder's name (an uploaded folder has a temporary one).
    """
    proto = load_file(model_dir)
    if override is not None:
        proto = _overridden(parse_json(override), proto)
    proto.name = name or proto.name
    return from_proto(proto)


def config_json(data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
    """Check Triton's JSON model configuration now; the plain dict a load override carries."""
    return _as_dict(parse_json(data), defaults=False)


def _overridden(override: pb.ModelConfig, on_disk: pb.ModelConfig) -> pb.ModelConfig:
    """An override without backend/platform keeps what the model's folder implies."""
    if not override.backend and not override.platform:
        override.backend, override.platform = on_disk.backend, on_disk.platform
    return override


def _as_dict(proto: pb.ModelConfig, defaults: bool) -> dict[str, Any]:
    """Triton's JSON form: proto field names, int64 as numbers, defaults printed if asked."""
    data = json_format.MessageToDict(
        proto, preserving_proto_field_name=True, always_print_fields_with_no_presence=defaults
    )
    return _ints_as_numbers(data)


def from_proto(proto: pb.ModelConfig) -> ModelConfig:
    """Validate a parsed configuration and freeze it."""
    check_fields(proto, proto.name)  # a refused field fails the load by name (config_fields.py)
    _check_formats(proto)
    if proto.max_batch_size < 0:
        raise InvalidArgument(f"model '{proto.name}': max_batch_size must be >= 0")
    groups = tuple(_instance_group(group) for group in proto.instance_group)
    instances = sum(group.count for group in groups)
    fill_sequence_defaults(proto)
    if instances > MAX_INSTANCES:  # each one is loaded before the model answers: 10^6 would hang the load
        raise InvalidArgument(
            f"model '{proto.name}': instance_group asks for {instances} instances, over the limit of {MAX_INSTANCES}"
        )
    return ModelConfig(
        name=proto.name,
        platform=proto.platform,
        backend=proto.backend,
        max_batch_size=proto.max_batch_size,
        inputs=tuple(_spec(proto.name, t, "input") for t in proto.input),
        outputs=tuple(_spec(proto.name, t, "output") for t in proto.output),
        version_policy=_version_policy(proto.version_policy),
        instance_count=max(1, instances),
        dynamic_batching=_dynamic_batching(proto),
        sequence_batching=sequence_batching(proto),
        parameters={k: v.string_value for k, v in proto.parameters.items()},
        decoupled=proto.model_transaction_policy.decoupled,
        default_model_filename=proto.default_model_filename,
        instance_group=groups,
        model_warmup=tuple(_warmup(proto, i, w) for i, w in enumerate(proto.model_warmup)),
        ensemble_scheduling=_ensemble(proto),
        response_cache=_response_cache(proto),
        document=_as_dict(proto, defaults=True),
    )


def _spec(model: str, tensor: Any, kind: str) -> TensorSpec:
    type_name = pb.DataType.Name(tensor.data_type)
    if type_name not in CONFIG_TO_DATATYPE:
        raise InvalidArgument(f"model '{model}': {kind} '{tensor.name}' has no data_type")
    if any(d < -1 for d in tensor.dims):
        raise InvalidArgument(f"model '{model}': {kind} '{tensor.name}' has invalid dims")
    reshape = tuple(tensor.reshape.shape) if tensor.HasField("reshape") else None
    return TensorSpec(
        name=tensor.name,
        datatype=CONFIG_TO_DATATYPE[type_name],
        dims=tuple(tensor.dims),
        optional=getattr(tensor, "optional", False),
        reshape=reshape,
        label_filename=getattr(tensor, "label_filename", ""),
    )


def _check_formats(proto: pb.ModelConfig) -> None:
    """An image ``format`` (NHWC, NCHW) needs three non-batch dims, as Triton checks."""
    for tensor in proto.input:
        if tensor.format != pb.ModelInput.FORMAT_NONE and len(tensor.dims) != 3:
            name = pb.ModelInput.Format.Name(tensor.format)
            raise InvalidArgument(
                f"model '{proto.name}': input '{tensor.name}' has format {name}: "
                f"its dims must have 3 dimensions, got {list(tensor.dims)}"
            )


def _version_policy(policy: pb.ModelVersionPolicy) -> VersionPolicy:
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        return VersionPolicy(kind="all")
    if choice == "specific":
        return VersionPolicy(kind="specific", versions=tuple(policy.specific.versions))
    if choice == "latest":
        return VersionPolicy(kind="latest", num_versions=policy.latest.num_versions)
    return VersionPolicy()


def _instance_group(group: pb.ModelInstanceGroup) -> InstanceGroup:
    kind = pb.ModelInstanceGroup.Kind.Name(group.kind)
    return InstanceGroup(kind=kind, count=max(1, group.count), gpus=tuple(group.gpus))


def _warmup(proto: pb.ModelConfig, index: int, warmup: pb.ModelWarmup) -> ModelWarmup:
    """A ``model_warmup`` sample; what needs the model's files is checked when it runs."""
    name = warmup.name or f"#{index}"
    where = f"model '{proto.name}': warmup sample '{name}'"
    batch_size = warmup.batch_size or 1  # unset means one, as count does below
    if proto.platform == "ensemble":
        raise InvalidArgument(f"{where}: model_warmup can not be specified for an ensemble")
    if batch_size > max(1, proto.max_batch_size):
        limit = proto.max_batch_size or "1 (the model does not batch)"
        raise InvalidArgument(f"{where}: batch_size {batch_size} is over {limit}")
    inputs = {key: _warmup_input(f"{where} input '{key}'", value) for key, value in warmup.inputs.items()}
    return ModelWarmup(name, batch_size, inputs, max(1, warmup.count))


def _warmup_input(where: str, value: pb.ModelWarmup.Input) -> WarmupInput:
    type_name = pb.DataType.Name(value.data_type)
    if type_name not in CONFIG_TO_DATATYPE:
        raise InvalidArgument(f"{where}: has no data_type")
    if any(d < 0 for d in value.dims):
        raise InvalidArgument(f"{where}: dims {list(value.dims)} must all be fixed sizes (>= 0)")
    source = value.WhichOneof("input_data_type")
    if source is None:
        raise InvalidArgument(f"{where}: needs zero_data, random_data or input_data_file")
    data_file = value.input_data_file
    if source == "input_data_file" and not _inside_folder(data_file):
        raise InvalidArgument(f"{where}: input_data_file {data_file!r} must be a path inside warmup/")
    return WarmupInput(CONFIG_TO_DATATYPE[type_name], tuple(value.dims), source, data_file)


def _inside_folder(relative: str) -> bool:
    parts = relative.replace("\\", "/").split("/")
    if not relative or relative.startswith("/") or "\0" in relative:
        return False
    return ".." not in parts


def _ensemble(proto: pb.ModelConfig) -> EnsembleScheduling | None:
    """The steps as written; how they wire together is checked when the ensemble loads."""
    is_ensemble = proto.platform == "ensemble"
    if not proto.HasField("ensemble_scheduling"):
        if is_ensemble:
            raise InvalidArgument(f"model '{proto.name}': an ensemble needs ensemble_scheduling")
        return None
    if not is_ensemble:
        raise InvalidArgument(f"model '{proto.name}': ensemble_scheduling is only for platform \"ensemble\"")
    scheduling = proto.ensemble_scheduling
    steps = tuple(
        EnsembleStep(s.model_name, s.model_version, dict(s.input_map), dict(s.output_map))
        for s in scheduling.step
    )
    return EnsembleScheduling(steps, scheduling.max_inflight_requests)


def _dynamic_batching(proto: pb.ModelConfig) -> DynamicBatching | None:
    """Triton's ``dynamic_batching``, its priority levels and queue policies checked as Triton does."""
    if not proto.HasField("dynamic_batching"):
        return None
    batching = proto.dynamic_batching
    levels, default_level = batching.priority_levels, batching.default_priority_level
    where = f"model '{proto.name}': dynamic_batching"
    if levels and not 1 <= default_level <= levels:
        raise InvalidArgument(f"{where}: default_priority_level must be in range [1, {levels}]")
    if not levels and default_level:
        raise InvalidArgument(f"{where}: default_priority_level needs priority_levels")
    for level in batching.priority_queue_policy:
        if not 1 <= level <= levels:
            raise InvalidArgument(f"{where}: priority_queue_policy level {level} is not in [1, {levels}]")
    return DynamicBatching(
        preferred_batch_sizes=tuple(batching.preferred_batch_size),
        max_queue_delay_us=batching.max_queue_delay_microseconds,
        priority_levels=levels,
        default_priority_level=default_level,
        default_queue_policy=_queue_policy(batching.default_queue_policy),
        priority_queue_policy={
            level: _queue_policy(policy) for level, policy in batching.priority_queue_policy.items()
        },
    )


def _queue_policy(policy: pb.ModelQueuePolicy) -> QueuePolicy:
    return QueuePolicy(
        timeout_action=pb.ModelQueuePolicy.TimeoutAction.Name(policy.timeout_action),
        default_timeout_us=policy.default_timeout_microseconds,
        allow_timeout_override=policy.allow_timeout_override,
        max_queue_size=policy.max_queue_size or DEFAULT_QUEUE_SIZE,
    )


def _response_cache(proto: pb.ModelConfig) -> bool:
    """``response_cache.enable``; refused where Triton refuses it (its reasons, given to the client)."""
    if not proto.response_cache.enable:
        return False
    if proto.model_transaction_policy.decoupled:
        reason = "'decoupled' transaction policy"
    elif _has(proto, "sequence_batching"):
        reason = "sequence batching scheduler"
    else:
        return True
    raise InvalidArgument(f"Response Cache does not currently support model '{proto.name}' with {reason}")


def _has(proto: pb.ModelConfig, name: str) -> bool:
    """Whether a field this build's proto may not declare is set (sequence_batching)."""
    return name in proto.DESCRIPTOR.fields_by_name and proto.HasField(name)


def from_json(data: Mapping[str, Any] | str | bytes) -> ModelConfig:
    """Validate and freeze Triton's JSON form."""
    return from_proto(parse_json(data))
