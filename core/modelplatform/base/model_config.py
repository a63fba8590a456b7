"""A model's configuration as plain frozen dataclasses, and the calls that read one.

What every part of the platform reads: :class:`ModelConfig` and its parts,
plain values only, including the whole configuration as Triton's JSON
document. It is resolved once at load time and read, never parsed, on the
request path; it pickles as plain data (process instances, ``--workers``).

Reading config.pbtxt takes protobuf, which stays inside
:mod:`modelplatform.base.config_reader`; the functions here load that reader the
first time a configuration is read, so the neutral modules that import this
one (models, dataplane, scheduling, the backend contract) load no protobuf.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplatform.base.dtypes import DATATYPE_TO_CONFIG

CONFIG_FILE = "config.pbtxt"
#: The folder beside the version folders holding ``model_warmup`` input files.
WARMUP_FOLDER = "warmup"
DEFAULT_QUEUE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A declared input or output. ``dims`` exclude the batch dimension."""

    name: str
    datatype: str
    dims: tuple[int, ...]
    optional: bool = False
    reshape: tuple[int, ...] | None = None
    #: An output's labels file (one label per line), in the model's folder: the
    #: classification extension's labels (dataplane/classification.py).
    label_filename: str = ""

    def full_shape(self, max_batch_size: int) -> list[int]:
        """The shape clients see: batching models gain a leading -1."""
        return ([-1] if max_batch_size > 0 else []) + list(self.dims)


#: ``timeout_action`` values: a request past its queue timeout fails, or waits behind its level.
REJECT, DELAY = "REJECT", "DELAY"


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """Triton's ``ModelQueuePolicy``: how one priority level's queue treats its requests.

    ``max_queue_size`` 0 in config.pbtxt is :data:`DEFAULT_QUEUE_SIZE` here: every queue
    is bounded. A client ``timeout`` may only shorten ``default_timeout_us``, and only
    when ``allow_timeout_override`` (Triton's ``PolicyQueue::Enqueue``).
    """

    timeout_action: str = REJECT
    default_timeout_us: int = 0
    allow_timeout_override: bool = False
    max_queue_size: int = DEFAULT_QUEUE_SIZE


@dataclass(frozen=True, slots=True)
class DynamicBatching:
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_us: int = 0
    #: Levels 1 (served first) to ``priority_levels``; 0: one level, no priorities.
    priority_levels: int = 0
    #: The level of a request without a (valid) ``priority``; 0 when there are no levels.
    default_priority_level: int = 0
    default_queue_policy: QueuePolicy = QueuePolicy()
    #: The levels whose queue policy is not the default one.
    priority_queue_policy: dict[int, QueuePolicy] = field(default_factory=dict)

    @property
    def max_queue_size(self) -> int:
        return self.default_queue_policy.max_queue_size

    def levels(self) -> tuple[int, ...]:
        """Every level, the first served first."""
        return tuple(range(1, self.priority_levels + 1)) if self.priority_levels else (0,)

    def level_of(self, priority: int) -> int:
        """Triton's ``SetPriority``: 0 or a priority past the last level means the default level."""
        if priority == 0 or priority > self.priority_levels:
            return self.default_priority_level
        return priority

    def policy_for(self, level: int) -> QueuePolicy:
        return self.priority_queue_policy.get(level, self.default_queue_policy)


#: Triton's default ``max_sequence_idle_microseconds`` (one second) when the config says 0.
DEFAULT_SEQUENCE_IDLE_US = 1_000_000


@dataclass(frozen=True, slots=True)
class SequenceControl:
    """One control the sequence batcher writes into a request: Triton's ``control_input``.

    ``kind`` is ``START``, ``END``, ``READY`` or ``CORRID``; ``input_name`` the
    tensor the model reads it from; ``datatype`` its datatype (``INT32``,
    ``FP32`` or ``BOOL`` for the flags, the ``data_type`` given for CORRID).
    ``false_true`` holds a flag's two values, false first; () for CORRID.
    """

    kind: str
    input_name: str
    datatype: str
    false_true: tuple[int | float | bool, ...] = ()


@dataclass(frozen=True, slots=True)
class SequenceBatching:
    """Triton's ``sequence_batching``: stateful models, each sequence pinned to one slot.

    ``strategy`` is ``direct`` (a sequence keeps its position in every batch)
    or ``oldest`` (the oldest ready requests of different sequences batch).
    ``candidate_sequences`` is ``oldest``'s ``max_candidate_sequences`` (0:
    ``max_batch_size``); ``preferred_batch_sizes`` is ``oldest``'s too.
    """

    strategy: str = "direct"
    max_sequence_idle_us: int = DEFAULT_SEQUENCE_IDLE_US
    controls: tuple[SequenceControl, ...] = ()
    max_queue_delay_us: int = 0
    minimum_slot_utilization: float = 0.0
    candidate_sequences: int = 0
    preferred_batch_sizes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class VersionPolicy:
    """Triton's policy: ``latest`` N (default 1), ``all``, or ``specific`` versions."""

    kind: str = "latest"
    num_versions: int = 1
    versions: tuple[int, ...] = ()

    def select(self, available: list[int]) -> list[int]:
        ordered = sorted(available)
        if self.kind == "all":
            return ordered
        if self.kind == "specific":
            return [v for v in ordered if v in self.versions]
        return ordered[-self.num_versions :] if self.num_versions > 0 else []


@dataclass(frozen=True, slots=True)
class InstanceGroup:
    """One ``instance_group`` entry: ``count`` instances (at least 1) of one ``kind``."""

    kind: str = "KIND_AUTO"
    count: int = 1
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class WarmupInput:
    """One input of a warmup sample: Triton's ``ModelWarmup.Input``.

    ``dims`` exclude the batch dimension. ``source`` is ``zero_data``,
    ``random_data`` or ``input_data_file``; ``data_file`` names a file under
    the model's ``warmup/`` folder (raw row-major bytes; BYTES elements are a
    4-byte little-endian length and the bytes).
    """

    datatype: str
    dims: tuple[int, ...]
    source: str
    data_file: str = ""


@dataclass(frozen=True, slots=True)
class ModelWarmup:
    """One ``model_warmup`` sample, run ``count`` times on every instance before READY."""

    name: str
    batch_size: int = 1
    inputs: dict[str, WarmupInput] = field(default_factory=dict)
    count: int = 1


@dataclass(frozen=True, slots=True)
class EnsembleStep:
    """One ``ensemble_scheduling.step``: a model to run and how its tensors are wired.

    ``input_map`` maps the step model's input names to ensemble tensor names,
    ``output_map`` its output names to ensemble tensor names (Triton's
    direction: key is the step model's name, value the ensemble's).
    ``model_version`` -1 means the latest READY version.
    """

    model_name: str
    model_version: int = -1
    input_map: dict[str, str] = field(default_factory=dict)
    output_map: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EnsembleScheduling:
    """Triton's ``ensemble_scheduling``; ``max_inflight_requests`` 0 means no limit per step."""

    steps: tuple[EnsembleStep, ...] = ()
    max_inflight_requests: int = 0


@dataclass(frozen=True, slots=True)
class ModelConfig:
    name: str
    platform: str = ""
    backend: str = ""
    max_batch_size: int = 0
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    version_policy: VersionPolicy = VersionPolicy()
    instance_count: int = 1
    dynamic_batching: DynamicBatching | None = None
    #: Triton's ``sequence_batching`` (a stateful model), else None.
    sequence_batching: SequenceBatching | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    decoupled: bool = False
    default_model_filename: str = ""
    instance_group: tuple[InstanceGroup, ...] = ()
    model_warmup: tuple[ModelWarmup, ...] = ()
    #: The steps of an ensemble (``platform: "ensemble"``), else None.
    ensemble_scheduling: EnsembleScheduling | None = None
    #: ``response_cache { enable: true }``: answers may come from the server's response cache.
    response_cache: bool = False
    #: The whole configuration as Triton's JSON, as read (no defaults added): what
    #: ``to_json`` answers and an RPC turns back into its proto. Read it, never change it.
    document: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def batching(self) -> bool:
        return self.max_batch_size > 0

    @property
    def composing_models(self) -> tuple[str, ...]:
        """The models an ensemble's steps call, each once, in step order; () for other models."""
        if self.ensemble_scheduling is None:
            return ()
        return tuple(dict.fromkeys(step.model_name for step in self.ensemble_scheduling.steps))

    def instance_placement(self, instance_index: int) -> tuple[str, int]:
        """Where instance ``instance_index`` runs: its group's kind and, for ``KIND_GPU``, its GPU.

        Instances are numbered group by group, as the model manager creates
        them; a group's instances take its ``gpus`` in turn (GPU 0 when it
        names none). Other kinds answer device 0.
        """
        first = 0
        for group in self.instance_group:
            if instance_index < first + group.count:
                gpus = group.gpus or (0,)
                return group.kind, gpus[(instance_index - first) % len(gpus)]
            first += group.count
        return "KIND_AUTO", 0

    def input_spec(self, name: str) -> TensorSpec | None:
        for spec in self.inputs:  # per request: a loop is cheaper than next(generator)
            if spec.name == name:
                return spec
        return None

    def output_spec(self, name: str) -> TensorSpec | None:
        return next((s for s in self.outputs if s.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """Triton's JSON form, a copy to change at will: the document plus Triton's defaults.

        A config built by hand (tests, placeholders) has no document: only its name.
        """
        data: dict[str, Any] = copy.deepcopy(self.document) if self.document else {"name": self.name}
        data.setdefault("model_transaction_policy", {"decoupled": False})
        data.setdefault("response_cache", {"enable": False})
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str | bytes) -> ModelConfig:
        """Validate and freeze Triton's JSON form (a backend completing its config uses it)."""
        return _reader().from_json(data)

    def with_backend(self, backend: str) -> ModelConfig:
        return self.from_json({**(self.document or {"name": self.name}), "backend": backend})


def spec_to_proto(spec: TensorSpec) -> dict[str, Any]:
    """A TensorSpec as Triton JSON (used when a backend fills in a config)."""
    return {
        "name": spec.name,
        "data_type": DATATYPE_TO_CONFIG[spec.datatype],
        "dims": list(spec.dims),
    }


def read_config(model_dir: Path, override: Mapping[str, Any] | None = None, name: str = "") -> ModelConfig:
    """A model folder's configuration, validated and frozen (see config_reader.read_config)."""
    return _reader().read_config(model_dir, override, name)


def config_json(data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
    """Check Triton's JSON model configuration now; the plain dict a load override carries."""
    return _reader().config_json(data)


def _reader() -> Any:
    # Imported when a configuration is first read, not when this module is: protobuf
    # stays out of every process that only serves (e.g. a process instance's child).
    from modelplatform.base import config_reader

    return config_reader
