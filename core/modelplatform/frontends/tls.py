"""TLS and mutual TLS for every listener, with certificates re-read without a restart.

Each listener (``http``, ``grpc``, ``metrics``) has its own files
(:func:`tls_files`; the metrics port follows the HTTP settings unless given
its own). :class:`ListenerTls` holds one listener's latest good files, read
into memory:

- asyncio servers (Sanic, the fast lane, the metrics port) are given its
  :attr:`ListenerTls.front` context once. Its SNI callback, which OpenSSL
  runs on every handshake (with or without a server name), hands the
  connection the context built from the latest good files: a reload
  reaches new connections at once, open ones keep the certificate they
  shook hands with, and a new root certificate really replaces the old one.
- the gRPC server reads :attr:`ListenerTls.pem` through its own certificate
  fetcher (grpc_server.py), which gRPC calls on each new handshake.

:class:`ServerTls` re-reads every listener's files on SIGHUP (server.py) and
whenever one of them changes (:meth:`ServerTls.watch` compares device, inode,
size and modification time every :data:`POLL_SECS`; a Kubernetes secret
volume swaps a symlink, which changes the inode). A new set of files is
used only once it makes a working context: a half-written or mismatched
pair keeps the old certificate and logs ``tls_reload_failed``.

No transport is imported here: gRPC's credentials are built in grpc_server.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from modelplatform.base.errors import InvalidArgument

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings
    from modelplatform.dataplane.context import ServerContext

log = structlog.get_logger("modelplatform.frontends.tls")

#: The listeners that may speak TLS, by the prefix of their settings.
LISTENERS = ("http", "grpc", "metrics")
#: How often the files are looked at for a change.
POLL_SECS = 5.0
#: The largest certificate, key or root file read (a mistaken path to a big file is refused).
MAX_PEM_BYTES = 1024 * 1024


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
class Pem:
    """The bytes of one listener's files, read at one moment."""

    cert: bytes
    key: bytes
    root: bytes | None


@dataclass(frozen=True, slots=True)
class _Choice:
    """A listener's TLS settings after the metrics port's fall-back to HTTP."""

    on: bool
    mutual: bool
    cert: str
    key: str
    root: str


def _choice(settings: Settings, listener: str) -> _Choice:
    if listener == "metrics":
        return _metrics_choice(settings)
    mutual = bool(getattr(settings, f"{listener}_use_ssl_mutual"))
    on = mutual or bool(getattr(settings, f"{listener}_use_ssl"))  # mutual implies TLS, as in Triton
    files = (getattr(settings, f"{listener}_{name}") for name in ("server_cert", "server_key", "root_cert"))
    return _Choice(on, mutual, *files)


def _metrics_choice(settings: Settings) -> _Choice:
    """Each metrics setting not given takes the HTTP one's value."""
    http = _choice(settings, "http")
    own_mutual, own_on = settings.metrics_use_ssl_mutual, settings.metrics_use_ssl
    on = bool(own_mutual) or (http.on if own_on is None else own_on)
    mutual = (http.mutual if own_mutual is None else own_mutual) and on
    return _Choice(
        on,
        mutual,
        settings.metrics_server_cert or http.cert,
        settings.metrics_server_key or http.key,
        settings.metrics_root_cert or http.root,
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
    return any(tls_files(settings, listener) is not None for listener in LISTENERS)


def check_settings(settings: Settings) -> None:
    """Refuse TLS settings that cannot work, naming the setting; the files are not parsed here."""
    if settings.single_port and any(_choice(settings, name).on for name in ("http", "grpc")):
        # The one port would have to offer h2 by ALPN inside TLS; platforms that allow one
        # port only (Knative) end TLS at their ingress, so the two are not combined.
        raise InvalidArgument(
            "single_port serves plain text only: it cannot be combined with http_use_ssl or grpc_use_ssl"
        )
    for listener in LISTENERS:
        choice = _choice(settings, listener)
        _check_own_files_used(settings, listener, choice)
        if not choice.on:
            continue
        needed = {"server_cert": choice.cert, "server_key": choice.key}
        if choice.mutual:
            needed["root_cert"] = choice.root
        for name, path in needed.items():
            if not path:
                mode = "use_ssl_mutual" if name == "root_cert" else "use_ssl"
                fallback = f" (or http_{name})" if listener == "metrics" else ""
                raise InvalidArgument(f"{listener}_{mode} needs {listener}_{name}{fallback}: a PEM file")
            _check_readable(f"{listener}_{name}", path)


def _check_own_files_used(settings: Settings, listener: str, choice: _Choice) -> None:
    """A file given for a listener that will not read it is a mistake, never silently plain text."""
    for name in ("server_cert", "server_key", "root_cert"):
        if not getattr(settings, f"{listener}_{name}"):
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


def read_pem(files: TlsFiles) -> Pem:
    """The files' bytes; a file that cannot be read or is too large raises :class:`InvalidArgument`."""
    return Pem(_read(files.cert), _read(files.key), None if files.root is None else _read(files.root))


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_PEM_BYTES + 1)
    except OSError as error:
        raise InvalidArgument(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > MAX_PEM_BYTES:
        raise InvalidArgument(f"{path} is larger than {MAX_PEM_BYTES} bytes: not a PEM file")
    return data


def server_context(pem: Pem, mutual: bool) -> ssl.SSLContext:
    """A server context serving ``pem``; under ``mutual``, clients must show a certificate of ``pem.root``.

    Raises :class:`InvalidArgument` when the certificate, key or root does not
    parse or the key does not match the certificate.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        with _in_memory_file(pem.cert) as cert, _in_memory_file(pem.key) as key:
            context.load_cert_chain(cert, key)  # OpenSSL reads chains and keys from files only
        if mutual:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cadata=(pem.root or b"").decode("ascii", "replace"))
    except (ssl.SSLError, ValueError) as error:
        raise InvalidArgument(f"unusable certificate, key or root certificate: {error}") from None
    return context


@contextlib.contextmanager
def _in_memory_file(data: bytes) -> Iterator[str]:
    """A path to ``data`` that never reaches a disk (memfd on Linux; a private temporary file elsewhere).

    The bytes loaded are exactly the bytes read and checked: reading the
    operator's files twice could pair a new certificate with an old key.
    """
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("modelplatform-tls", 0)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory() as folder:  # mode 0700
        path = Path(folder) / "pem"
        path.write_bytes(data)
        yield str(path)


def _fingerprint(paths: tuple[Path, ...]) -> tuple[object, ...]:
    """What tells a changed file: a replaced file or a swapped symlink has a new inode."""
    marks: list[object] = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            marks.append(None)
            continue
        marks.append((stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(marks)


class ListenerTls:
    """One listener's TLS: the latest good files, as bytes and as a server context."""

    def __init__(self, name: str, files: TlsFiles) -> None:
        self.name = name
        self.files = files
        self.pem = read_pem(files)
        self._current = server_context(self.pem, files.mutual)
        #: The context given to asyncio servers; each handshake switches to :attr:`_current`.
        self.front = server_context(self.pem, files.mutual)
        self.front.sni_callback = self._choose_context
        #: Goes up by one with each reload that took effect (the gRPC fetcher compares it).
        self.generation = 0
        self._fingerprint = _fingerprint(files.paths())

    def _choose_context(
        self, connection: ssl.SSLObject, server_name: str | None, front: ssl.SSLContext
    ) -> None:
        if connection.context is not self._current:
            connection.context = self._current

    def changed(self) -> bool:
        return _fingerprint(self.files.paths()) != self._fingerprint

    def reload(self) -> bool:
        """Re-read the files; whether the new ones took effect (else the old ones stay, logged)."""
        fingerprint = _fingerprint(self.files.paths())
        try:
            pem = read_pem(self.files)
            context = server_context(pem, self.files.mutual)
        except InvalidArgument as error:
            self._fingerprint = fingerprint  # retried when the files change again, or on SIGHUP
            log.error(
                "tls_reload_failed", listener=self.name, error=error.message, kept="previous certificate"
            )
            return False
        self.pem, self._current, self._fingerprint = pem, context, fingerprint
        self.generation += 1
        log.info("tls_reloaded", listener=self.name, cert=str(self.files.cert), generation=self.generation)
        return True


def mode_of(listener: ListenerTls | None) -> str:
    """``off``, ``on`` or ``mutual``: how a listener's start-up log line says it serves."""
    return "off" if listener is None else "mutual" if listener.files.mutual else "on"


class ServerTls:
    """Every TLS listener of one server process, and the re-reading of their files."""

    def __init__(self, listeners: dict[str, ListenerTls]) -> None:
        self.listeners = listeners

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerTls:
        """Read and check every listener's files now; raises :class:`InvalidArgument` naming the bad one."""
        listeners = {}
        for name in LISTENERS:
            files = tls_files(settings, name)
            if files is None:
                continue
            try:
                listeners[name] = ListenerTls(name, files)
            except InvalidArgument as error:
                raise InvalidArgument(f"{name} TLS: {error.message}") from None
        return cls(listeners)

    def listener(self, name: str) -> ListenerTls | None:
        return self.listeners.get(name)

    def ssl_context(self, name: str) -> ssl.SSLContext | None:
        """The context an asyncio server of listener ``name`` serves with; None for plain text."""
        listener = self.listeners.get(name)
        return None if listener is None else listener.front

    def reload(self) -> None:
        """Re-read every listener's files (SIGHUP)."""
        for listener in self.listeners.values():
            listener.reload()

    async def watch(self, every_secs: float = POLL_SECS) -> None:
        """Re-read a listener's files whenever they change; runs until cancelled."""
        while True:
            await asyncio.sleep(every_secs)
            for listener in self.listeners.values():
                if listener.changed():
                    listener.reload()


def server_tls(context: ServerContext) -> ServerTls:
    """The server's TLS listeners, kept with its shared objects (compose registers them; none: plain text)."""
    return context.shared(ServerTls, _plain_text)


def _plain_text() -> ServerTls:
    return ServerTls({})
