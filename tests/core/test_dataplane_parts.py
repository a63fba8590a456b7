"""The dataplane's parts stay small, and what plugins add to them are registrations they own."""

from __future__ import annotations

from pathlib import Path

from modelplatform import DataPlane, RequestScope
from modelplatform.models import ModelManager
from modelplatform.models.backend import BackendRegistry

#: Public methods, properties and attributes a part may have (issue 27: DataPlane had 28).
MOST_PUBLIC_NAMES = 14


def _dataplane(tmp_path: Path) -> DataPlane:
    return DataPlane.of(ModelManager(tmp_path, BackendRegistry([])), "s", "v", ["x"])


def _public(part: object) -> set[str]:
    return {name for name in dir(part) if not name.startswith("_")}


def test_no_part_has_more_than_fourteen_public_names(tmp_path: Path) -> None:
    dataplane = _dataplane(tmp_path)
    parts = [dataplane, dataplane.inference, dataplane.repository, dataplane.health, dataplane.observation]
    sizes = {type(part).__name__: len(_public(part)) for part in parts + [dataplane.calls]}
    assert all(size <= MOST_PUBLIC_NAMES for size in sizes.values()), sizes
    assert _public(dataplane.calls) == {"infer", "stream", "resolve", "model_ready", "load"}


def test_a_readiness_hold_is_released_by_its_reason(tmp_path: Path) -> None:
    health = _dataplane(tmp_path).health
    health.hold_readiness("offline")
    health.hold_readiness("waiting")
    health.release_readiness("offline")
    health.release_readiness("never held")
    assert health.readiness_holds == {"waiting"}


class _Observer:
    def __init__(self) -> None:
        self.seen: list[RequestScope] = []

    def request_finished(self, scope: RequestScope, ended_ns: int) -> None:
        self.seen.append(scope)


def test_an_observer_is_removed_by_the_call_its_registration_returned(tmp_path: Path) -> None:
    observation = _dataplane(tmp_path).observation
    first, second = _Observer(), _Observer()
    remove_first = observation.add_observer(first)
    observation.add_observer(second)
    remove_first()
    remove_first()  # twice is harmless
    assert list(observation.observers) == [second]
