"""Reads Triton's ``sequence_batching`` for the config reader (config_reader.py).

Checked as Triton checks it at load (its sequence batcher's control
properties, in its words): each control tensor and each control kind at
most once, a flag control with exactly one pair of false/true values, a
CORRID control with an id datatype. A control tensor may also be a declared
input: the batcher's value replaces what the client sent, as Triton's
override inputs do. What the
batcher cannot honour is refused by name: implicit ``state``,
``iterative_sequence``, a decoupled model (its responses bypass the batcher).
Only config_reader imports this module: protobuf stays on the reading side.
"""

from __future__ import annotations

from typing import Any

from modelplatform.base.dtypes import CONFIG_TO_DATATYPE
from modelplatform.base.errors import InvalidArgument
from modelplatform.base.model_config import DEFAULT_SEQUENCE_IDLE_US, SequenceBatching, SequenceControl
from modelplatform.protos import model_config_pb2 as pb

#: The datatypes a CORRID control may have (Triton's list).
CORRID_DATATYPES = frozenset({"UINT64", "INT64", "UINT32", "INT32", "BYTES"})
#: Each flag's config field and the datatype its values have.
_FLAG_VALUES = (("int32_false_true", "INT32"), ("fp32_false_true", "FP32"), ("bool_false_true", "BOOL"))


def fill_sequence_defaults(proto: pb.ModelConfig) -> None:
    """Triton's defaults, written into the config as its normalized config shows them:
    the idle timeout, and ``oldest``'s preferred batch size (``max_batch_size``)."""
    if not proto.HasField("sequence_batching"):
        return
    batching = proto.sequence_batching
    if not batching.max_sequence_idle_microseconds:
        batching.max_sequence_idle_microseconds = DEFAULT_SEQUENCE_IDLE_US
    if batching.HasField("oldest") and not batching.oldest.preferred_batch_size and proto.max_batch_size > 0:
        batching.oldest.preferred_batch_size.append(proto.max_batch_size)


def sequence_batching(proto: pb.ModelConfig) -> SequenceBatching | None:
    """The model's sequence batching, validated; None when it has none."""
    if not proto.HasField("sequence_batching"):
        return None
    batching = proto.sequence_batching
    where = f"model '{proto.name}': sequence_batching"
    _refuse_unsupported(proto, batching, where)
    controls = _controls(batching, where)
    idle_us = batching.max_sequence_idle_microseconds or DEFAULT_SEQUENCE_IDLE_US
    if batching.WhichOneof("strategy_choice") == "oldest":
        oldest = batching.oldest
        if oldest.max_candidate_sequences < 0:
            raise InvalidArgument(f"{where}: oldest.max_candidate_sequences must be >= 0")
        return SequenceBatching(
            strategy="oldest",
            max_sequence_idle_us=idle_us,
            controls=controls,
            max_queue_delay_us=oldest.max_queue_delay_microseconds,
            candidate_sequences=oldest.max_candidate_sequences,
            preferred_batch_sizes=tuple(oldest.preferred_batch_size),
        )
    direct = batching.direct  # Triton's default strategy when neither is named
    return SequenceBatching(
        strategy="direct",
        max_sequence_idle_us=idle_us,
        controls=controls,
        max_queue_delay_us=direct.max_queue_delay_microseconds,
        minimum_slot_utilization=min(1.0, max(0.0, direct.minimum_slot_utilization)),
    )


def _refuse_unsupported(proto: pb.ModelConfig, batching: pb.ModelSequenceBatching, where: str) -> None:
    if batching.state:
        raise InvalidArgument(f"{where}.state (implicit state management) is not supported")
    if batching.iterative_sequence:
        raise InvalidArgument(f"{where}.iterative_sequence is not supported")
    if proto.model_transaction_policy.decoupled:
        raise InvalidArgument(f"{where} with a decoupled model_transaction_policy is not supported")


def _controls(batching: pb.ModelSequenceBatching, where: str) -> tuple[SequenceControl, ...]:
    """Each control input once, each kind once (Triton's words in the errors)."""
    controls: list[SequenceControl] = []
    for control_input in batching.control_input:
        name = control_input.name
        if not name:
            raise InvalidArgument(f"{where}: a control tensor must have a name")
        if any(c.input_name == name for c in controls) or len(control_input.control) > 1:
            raise InvalidArgument(f"{where}: control tensor '{name}' is specified for multiple control kinds")
        if not control_input.control:
            raise InvalidArgument(f"{where}: control tensor '{name}' has no control")
        control = _control(name, control_input.control[0], where)
        if any(c.kind == control.kind for c in controls):
            raise InvalidArgument(f"{where}: specifies multiple CONTROL_SEQUENCE_{control.kind} tensors")
        controls.append(control)
    return tuple(controls)


def _control(name: str, control: pb.ModelSequenceBatching.Control, where: str) -> SequenceControl:
    kind = pb.ModelSequenceBatching.Control.Kind.Name(control.kind).removeprefix("CONTROL_SEQUENCE_")
    given = [(field, datatype) for field, datatype in _FLAG_VALUES if getattr(control, field)]
    if kind == "CORRID":
        return _corrid(name, control, where, given)
    if len(given) != 1:
        raise InvalidArgument(
            f"{where}: must specify exactly one of 'int32_false_true', 'fp32_false_true' or "
            f"'bool_false_true' for CONTROL_SEQUENCE_{kind} (control tensor '{name}')"
        )
    field, datatype = given[0]
    values: tuple[Any, ...] = tuple(getattr(control, field))
    if len(values) != 2:
        raise InvalidArgument(
            f"{where}: control '{field}' must have exactly 2 entries (false, true) for CONTROL_SEQUENCE_{kind}"
        )
    return SequenceControl(kind, name, datatype, values)


def _corrid(name: str, control: Any, where: str, given: list[Any]) -> SequenceControl:
    if given:
        raise InvalidArgument(
            f"{where}: must not specify 'int32_false_true', 'fp32_false_true' nor 'bool_false_true' "
            "for CONTROL_SEQUENCE_CORRID"
        )
    datatype = CONFIG_TO_DATATYPE.get(pb.DataType.Name(control.data_type), "")
    if datatype not in CORRID_DATATYPES:
        raise InvalidArgument(
            f"{where}: control tensor '{name}' (CONTROL_SEQUENCE_CORRID) must have data_type "
            "TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING"
        )
    return SequenceControl("CORRID", name, datatype)
