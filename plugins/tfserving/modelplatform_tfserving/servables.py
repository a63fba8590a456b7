"""Finding the servable a TF Serving request names: model, version or label.

TF Serving says "Servable not found" for any model or version that is not
serving (never loaded, unloaded, failed); only a first load still running
answers the platform's transient UNAVAILABLE. A label resolves through the
model's ``tfserving.labels``.
Labels are TF Serving's idea and are declared beside its signatures, so this
plugin owns the parameter and turns a label into a version number; the
dataplane then resolves that number like any other dialect's.
Model status follows ``GetModelStatus``: platform states map to TF's
(READY -> AVAILABLE, LOADING, UNLOADING, UNAVAILABLE -> END, UNKNOWN).
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import DataPlane, InvalidArgument, ModelNotFound, NotFound, VersionInfo

from .errors import servable_not_found
from .signatures import Signature, SignatureCache

STATES: dict[str, str] = {
    "UNKNOWN": "UNKNOWN",
    "LOADING": "LOADING",
    "READY": "AVAILABLE",
    "UNLOADING": "UNLOADING",
    "UNAVAILABLE": "END",
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


def known_versions(dataplane: DataPlane, name: str) -> list[VersionInfo]:
    """Versions with a number (a failed load without one is left out)."""
    return [v for v in dataplane.repository.version_status(name) if v.version]


def resolve_version(dataplane: DataPlane, selector: Selector, signatures: SignatureCache) -> str:
    """The version number a selector names ("" for latest); labels resolved."""
    if not selector.label:
        return selector.version
    versions = known_versions(dataplane, selector.name)
    if not versions:
        raise servable_not_found(selector.name)
    labels = signatures.of(versions[-1]).labels
    version = labels.get(selector.label)
    if version is None:
        raise InvalidArgument(f"Unrecognized servable version label: {selector.label}")
    return version


def servable(dataplane: DataPlane, selector: Selector, signatures: SignatureCache) -> VersionInfo:
    """The READY version to serve, or TF Serving's not-found error."""
    version = resolve_version(dataplane, selector, signatures)
    try:
        return dataplane.inference.resolve(selector.name, version)
    except ModelNotFound:
        raise servable_not_found(selector.name, version) from None


def signature(model: VersionInfo, name: str, signatures: SignatureCache) -> Signature:
    """The signature a request names ("" is ``serving_default``)."""
    found = signatures.of(model).signatures.get(name or "serving_default")
    if found is None:
        raise InvalidArgument(f'Serving signature name: "{name}" not found in signature def')
    return found


def status(dataplane: DataPlane, selector: Selector, signatures: SignatureCache) -> list[VersionStatus]:
    """GetModelStatus: every known version (newest first) or the one asked for."""
    version = resolve_version(dataplane, selector, signatures)
    versions = known_versions(dataplane, selector.name)
    if not versions:
        raise NotFound(f"Could not find any versions of model {selector.name}")
    if version:
        versions = [v for v in versions if v.version == version]
        if not versions:
            raise NotFound(f"Could not find version {version} of model {selector.name}")
    return [_status(v) for v in reversed(versions)]


def _status(version: VersionInfo) -> VersionStatus:
    failed = version.state == "UNAVAILABLE" and version.reason != UNLOADED
    return VersionStatus(
        version=version.version,
        state=STATES[version.state],
        error_code="UNKNOWN" if failed else "OK",
        error_message=version.reason if failed else "",
    )
