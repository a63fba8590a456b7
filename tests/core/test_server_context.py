"""ServerContext is frozen, hides core's own objects, and shares plugin objects by type."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from modelplatform import DataPlane, ServerContext, Settings
from modelplatform.composition.server import compose
from modelplatform.testing import free_port


class Runtime:
    made = 0

    def __init__(self) -> None:
        Runtime.made += 1


class OtherRuntime:
    pass


@pytest.fixture
def context(tmp_path: Path) -> ServerContext:
    settings = Settings(
        model_repository=tmp_path,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("oip-rest", "oip-grpc"),
    )
    return compose(settings).context


def test_assignment_is_refused(context: ServerContext) -> None:
    for name, value in [("settings", None), ("dataplane", None), ("state", {}), ("models", None)]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(context, name, value)


def test_declarations_cannot_be_changed_in_place(context: ServerContext) -> None:
    assert "oip-rest" in context.dialects and context.grpc_services
    with pytest.raises(TypeError):
        context.dialects["mine"] = context.dialects["oip-rest"]  # type: ignore[index]  # writing a read-only mapping is what the test checks
    assert isinstance(context.grpc_services, tuple)


def test_core_internals_are_not_reachable(context: ServerContext) -> None:
    fields = {f.name for f in dataclasses.fields(context)}
    assert fields == {"settings", "codecs", "dialects", "grpc_services", "dataplane", "broadcast", "_shared"}
    for hidden in ("plugins", "models", "backends", "state"):
        assert not hasattr(context, hidden)
    assert isinstance(context.dataplane, DataPlane)
    assert not hasattr(context.dataplane, "models")


def test_shared_makes_one_object_per_type(context: ServerContext) -> None:
    Runtime.made = 0
    first = context.shared(Runtime, Runtime)
    assert context.shared(Runtime, Runtime) is first and Runtime.made == 1
    assert isinstance(context.shared(OtherRuntime, OtherRuntime), OtherRuntime)
    with pytest.raises(TypeError, match="made a Runtime"):
        context.shared(dict, Runtime)  # type: ignore[arg-type]  # the wrong factory is what the test checks


def test_shared_is_made_once_across_threads(context: ServerContext) -> None:
    Runtime.made = 0
    found: list[Runtime] = []
    threads = [
        threading.Thread(target=lambda: found.append(context.shared(Runtime, Runtime))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Runtime.made == 1 and all(item is found[0] for item in found)


def test_each_server_has_its_own_shared_objects(context: ServerContext, tmp_path: Path) -> None:
    settings = Settings(model_repository=tmp_path, plugins=("python",))
    other = compose(settings).context
    assert context.shared(Runtime, Runtime) is not other.shared(Runtime, Runtime)
