"""Finding the servable a TF Serving request names: model, version or label.

TF Serving says "Servable not found" for any model or version that is not
serving, and resolves a label through the model's ``tfserving.labels``.
Model status follows ``GetModelStatus``: platform states map to TF's
(READY -> AVAILABLE, LOADING, UNLOADING, UNAVAILABLE -> END, UNKNOWN).
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import (
    InvalidArgument,
    ModelManager,
    ModelState,
    ModelVersion,
    NotFound,
)

from .errors import servable_not_found
from .signatures import Signature, signatures_of

STATES: dict[ModelState, str] = {
    ModelState.UNKNOWN: "UNKNOWN",
    ModelState.LOADING: "LOADING",
    ModelState.READY: "AVAILABLE",
    ModelState.UNLOADING: "UNLOADING",
    ModelState.UNAVAILABLE: "END",
}
#: An UNAVAILABLE version with this reason was unloaded cleanly (status OK).
UNLOADED = "unloaded"


@dataclass(frozen=True, slots=True)
class Selector:
    """What a request names: a model, and at most one of version or label."""

    name: str
    version: str = ""
    label: str = ""


@dataclass(frozen=True, slots=True)
class VersionStatus:
    version: str
    state: str
    error_code: str
    error_message: str


def known_versions(models: ModelManager, name: str) -> list[ModelVersion]:
    """Versions with a number (a failed load without one is left out)."""
    return [v for v in models.versions(name) if v.version >= 0]


def resolve_version(models: ModelManager, selector: Selector) -> str:
    """The version number a selector names ("" for latest); labels resolved."""
    if not selector.label:
        return selector.version
    versions = known_versions(models, selector.name)
    if not versions:
        raise servable_not_found(selector.name)
    labels = signatures_of(versions[-1].config).labels
    version = labels.get(selector.label)
    if version is None:
        raise InvalidArgument(f"Unrecognized servable version label: {selector.label}")
    return version


def servable(models: ModelManager, selector: Selector) -> ModelVersion:
    """The READY version to serve, or TF Serving's not-found error."""
    version = resolve_version(models, selector)
    ready = [v for v in known_versions(models, selector.name) if v.ready]
    if version:
        ready = [v for v in ready if v.version_str == version]
    if not ready:
        raise servable_not_found(selector.name, version)
    return ready[-1]


def signature(model: ModelVersion, name: str) -> Signature:
    """The signature a request names ("" is ``serving_default``)."""
    found = signatures_of(model.config).signatures.get(name or "serving_default")
    if found is None:
        raise InvalidArgument(f'Serving signature name: "{name}" not found in signature def')
    return found


def status(models: ModelManager, selector: Selector) -> list[VersionStatus]:
    """GetModelStatus: every known version (newest first) or the one asked for."""
    version = resolve_version(models, selector)
    versions = known_versions(models, selector.name)
    if not versions:
        raise NotFound(f"Could not find any versions of model {selector.name}")
    if version:
        versions = [v for v in versions if v.version_str == version]
        if not versions:
            raise NotFound(f"Could not find version {version} of model {selector.name}")
    return [_status(v) for v in reversed(versions)]


def _status(version: ModelVersion) -> VersionStatus:
    failed = version.state is ModelState.UNAVAILABLE and version.reason != UNLOADED
    return VersionStatus(
        version=version.version_str,
        state=STATES[version.state],
        error_code="UNKNOWN" if failed else "OK",
        error_message=version.reason if failed else "",
    )
