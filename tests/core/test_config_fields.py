"""Nothing in config.pbtxt is silently ignored (issue 29 point 6).

Walks every field of Triton's ``model_config.proto`` (the descriptor of the
generated ``model_config_pb2``) and holds each to exactly one group of
``config_fields``: implemented, a performance hint listed in
docs/model-repository.md's table, or refused; then loads a model with each
refused field set and sees the load fail naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format

from modelplatform import InvalidArgument
from modelplatform.base.config_fields import GROUPS, HINTS, REFUSED
from modelplatform.base.model_config import read_config
from modelplatform.protos import model_config_pb2 as pb

DOCS = Path(__file__).parents[2] / "docs" / "model-repository.md"


def _leaves(descriptor: Any, prefix: str = "") -> Iterator[tuple[str, list[Any]]]:
    """Every leaf field's path, with the chain of field descriptors that reaches it."""
    for field in descriptor.fields:
        yield from _walk(field, prefix + field.name, [field])


def _walk(field: Any, path: str, chain: list[Any]) -> Iterator[tuple[str, list[Any]]]:
    message = field.message_type
    if message is None:
        yield path, chain
        return
    if message.GetOptions().map_entry:
        value = message.fields_by_name["value"]
        if value.message_type is None:
            yield path, chain  # map<string, string>: a leaf
            return
        message = value.message_type
    if not message.fields:
        yield path, chain  # an empty message (version_policy.all) is set by being there
        return
    for child in message.fields:
        yield from _walk(child, f"{path}.{child.name}", [*chain, child])


LEAVES = dict(_leaves(pb.ModelConfig.DESCRIPTOR))


def _listed(path: str) -> list[tuple[str, str]]:
    """Every (group, listed path) that covers ``path``: itself or a path above it."""
    parts = path.split(".")
    above = {".".join(parts[:end]) for end in range(1, len(parts) + 1)}
    return [(group, listed) for group, paths in GROUPS.items() for listed in paths if listed in above]


def test_the_walk_sees_tritons_whole_configuration() -> None:
    assert len(LEAVES) > 120
    for path in ("input.reshape.shape", "sequence_batching.control_input.control.int32_false_true",
                 "optimization.cuda.graph_spec.graph_lower_bound.input.dim", "model_metrics.metric_control."
                 "histogram_options.buckets", "dynamic_batching.priority_queue_policy.timeout_action"):  # fmt: skip
        assert path in LEAVES, path


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_every_field_is_in_exactly_one_group(path: str) -> None:
    listed = _listed(path)
    assert len(listed) == 1, f"{path}: {listed or 'in no group'}"


def test_every_listed_path_is_a_field() -> None:
    prefixes = {".".join(p.split(".")[:end]) for p in LEAVES for end in range(1, p.count(".") + 2)}
    for group, paths in GROUPS.items():
        assert paths <= prefixes, (group, sorted(paths - prefixes))


def test_the_hints_are_the_documented_table() -> None:
    text = DOCS.read_text()
    table = text[text.index("| field | why ignoring it changes no answer |") :].split("\n\n")[0]
    documented = set(re.findall(r"^\s*\| `([a-z_.]+)` \|", table, re.MULTILINE))
    assert documented == HINTS


def _set(config: pb.ModelConfig, chain: list[Any]) -> None:
    """Set the leaf at the end of ``chain`` to something other than its default."""
    message = config
    for field in chain[:-1]:
        message = _child(message, field)
    leaf = chain[-1]
    if leaf.message_type is not None:
        entry = leaf.message_type
        if entry.GetOptions().map_entry:
            key = 1 if entry.fields_by_name["key"].type != entry.fields_by_name["key"].TYPE_STRING else "k"
            target = getattr(message, leaf.name)
            target[key] = "v"  # type: ignore[index]  # a map<string, string>
        elif leaf.is_repeated:
            getattr(message, leaf.name).add()
        else:
            getattr(message, leaf.name).SetInParent()
        return
    value = _value(leaf)
    if leaf.is_repeated:
        getattr(message, leaf.name).append(value)
    else:
        setattr(message, leaf.name, value)


def _child(message: Any, field: Any) -> Any:
    container = getattr(message, field.name)
    if field.message_type.GetOptions().map_entry:
        key_field = field.message_type.fields_by_name["key"]
        return container[1 if key_field.type != key_field.TYPE_STRING else "k"]
    if field.is_repeated:
        return container[0] if len(container) else container.add()
    return container


def _value(field: Any) -> Any:
    if field.enum_type is not None:
        values = field.enum_type.values
        return values[-1].number  # the last: not the default 0 where there is another
    if field.type == field.TYPE_BOOL:
        return True
    if field.type == field.TYPE_STRING:
        return "x"
    if field.type in (field.TYPE_FLOAT, field.TYPE_DOUBLE):
        return 0.5
    return 1


REFUSED_LEAVES = sorted(path for path in LEAVES if _listed(path)[0][0] == "refused")


@pytest.mark.parametrize("path", REFUSED_LEAVES)
def test_a_model_setting_a_refused_field_fails_its_load_naming_it(path: str, tmp_path: Path) -> None:
    config = pb.ModelConfig(backend="python")
    _set(config, LEAVES[path])
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "config.pbtxt").write_text(text_format.MessageToString(config))
    (listed,) = [p for group, p in _listed(path) if group == "refused"]
    with pytest.raises(InvalidArgument, match=f"config field '{re.escape(listed)}' is not supported"):
        read_config(tmp_path / "m")


def test_the_refused_list_is_covered_by_the_loads() -> None:
    covered = {listed for path in REFUSED_LEAVES for _, listed in _listed(path)}
    assert covered == REFUSED
