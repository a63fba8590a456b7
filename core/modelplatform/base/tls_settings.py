"""Which files each listener serves TLS with, and the checks of those settings.

The core's listeners are ``http`` and ``grpc`` (Settings fields); a plugin's
own listener (the metrics port) declares its five options with
``tls_options(listener)`` and is named in ``Settings.tls_listeners``; each of
its settings not given takes the HTTP one's value. Nothing is read here: the
files are read once at start-up (frontends/tls.py, built by the composition).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modelplatform.base.errors import InvalidArgument

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings

#: The core's own listeners, by the prefix of their settings.
CORE_LISTENERS = ("http", "grpc")
_FILES = ("server_cert", "server_key", "root_cert")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """One listener's PEM files; ``root`` (the CAs client certificates must chain to) under mutual TLS."""

    cert: Path
    key: Path
    root: Path | None
    mutual: bool

    def paths(self) -> tuple[Path, ...]:
        return (self.cert, self.key) if self.root is None else (self.cert, self.key, self.root)


@dataclass(frozen=True, slots=True)
class _Choice:
    """A listener's TLS settings after a plugin listener's fall-back to HTTP."""

    on: bool
    mutual: bool
    cert: str
    key: str
    root: str


def listeners(settings: Settings) -> tuple[str, ...]:
    """Every listener that may speak TLS: the core's, then the enabled plugins' own."""
    return CORE_LISTENERS + tuple(listener for listener, _ in settings.tls_listeners)


def _own(settings: Settings, listener: str) -> Mapping[str, Any]:
    """A listener's own settings by short name (``use_ssl``, ``server_cert``...)."""
    names = ("use_ssl", "use_ssl_mutual", *_FILES)
    if listener in CORE_LISTENERS:
        return {name: getattr(settings, f"{listener}_{name}") for name in names}
    owner = dict(settings.tls_listeners)[listener]
    values = settings.options_for(owner)
    return {name: values.get(f"{listener}_{name}", "" if name in _FILES else None) for name in names}


def _choice(settings: Settings, listener: str) -> _Choice:
    own = _own(settings, listener)
    if listener not in CORE_LISTENERS:
        return _following_http(settings, own)
    mutual = bool(own["use_ssl_mutual"])
    on = mutual or bool(own["use_ssl"])  # mutual implies TLS, as in Triton
    return _Choice(on, mutual, *(own[name] for name in _FILES))


def _following_http(settings: Settings, own: Mapping[str, Any]) -> _Choice:
    """Each setting of a plugin's listener not given takes the HTTP one's value."""
    http = _choice(settings, "http")
    own_mutual, own_on = own["use_ssl_mutual"], own["use_ssl"]
    on = bool(own_mutual) or (http.on if own_on is None else own_on)
    mutual = (http.mutual if own_mutual is None else own_mutual) and on
    return _Choice(
        on,
        mutual,
        own["server_cert"] or http.cert,
        own["server_key"] or http.key,
        own["root_cert"] or http.root,
    )


def tls_files(settings: Settings, listener: str) -> TlsFiles | None:
    """The files ``listener`` serves TLS with, or None when it speaks plain text."""
    choice = _choice(settings, listener)
    if not choice.on:
        return None
    return TlsFiles(
        Path(choice.cert), Path(choice.key), Path(choice.root) if choice.mutual else None, choice.mutual
    )


def any_tls(settings: Settings) -> bool:
    """Whether any listener serves TLS (then SIGHUP re-reads the files instead of ending the process)."""
    return any(tls_files(settings, listener) is not None for listener in listeners(settings))


def check_tls(settings: Settings) -> None:
    """Refuse TLS settings that cannot work, naming the setting; the files are not parsed here."""
    if settings.single_port and any(_choice(settings, name).on for name in CORE_LISTENERS):
        # The one port would have to offer h2 by ALPN inside TLS; platforms that allow one
        # port only (Knative) end TLS at their ingress, so the two are not combined.
        raise InvalidArgument(
            "single_port serves plain text only: it cannot be combined with http_use_ssl or grpc_use_ssl"
        )
    for listener in listeners(settings):
        choice = _choice(settings, listener)
        _check_own_files_used(_own(settings, listener), listener, choice)
        if not choice.on:
            continue
        needed = {"server_cert": choice.cert, "server_key": choice.key}
        if choice.mutual:
            needed["root_cert"] = choice.root
        for name, path in needed.items():
            if not path:
                mode = "use_ssl_mutual" if name == "root_cert" else "use_ssl"
                fallback = f" (or http_{name})" if listener not in CORE_LISTENERS else ""
                raise InvalidArgument(f"{listener}_{mode} needs {listener}_{name}{fallback}: a PEM file")
            _check_readable(f"{listener}_{name}", path)


def _check_own_files_used(own: Mapping[str, Any], listener: str, choice: _Choice) -> None:
    """A file given for a listener that will not read it is a mistake, never silently plain text."""
    for name in _FILES:
        if not own[name]:
            continue
        if not choice.on:
            raise InvalidArgument(
                f"{listener}_{name} is set but {listener} TLS is off (set {listener}_use_ssl)"
            )
        if name == "root_cert" and not choice.mutual:
            raise InvalidArgument(f"{listener}_root_cert is read only with {listener}_use_ssl_mutual")


def _check_readable(setting: str, path: str) -> None:
    file = Path(path)
    if not file.is_file():
        raise InvalidArgument(f"{setting} {path}: no such file")
    if not os.access(file, os.R_OK):
        raise InvalidArgument(f"{setting} {path}: cannot be read")
