"""TLS and mutual TLS for every listener, with certificates re-read without a restart.

Each listener (``http``, ``grpc``, and a plugin's own such as ``metrics``)
has its own files (base/tls_settings.py: a plugin's listener follows the HTTP
settings unless given its own). :class:`ListenerTls` holds one listener's latest good files, read
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
import functools
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from modelplatform.base.errors import InvalidArgument
from modelplatform.base.tls_settings import TlsFiles, any_tls, listeners, tls_files

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings
    from modelplatform.dataplane.context import ServerContext

__all__ = ["ListenerTls", "ServerTls", "TlsFiles", "any_tls", "mode_of", "server_tls", "tls_files"]

log = structlog.get_logger("modelplatform.frontends.tls")

#: How often the files are looked at for a change.
POLL_SECS = 5.0
#: The largest certificate, key or root file read (a mistaken path to a big file is refused).
MAX_PEM_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Pem:
    """The bytes of one listener's files, read at one moment."""

    cert: bytes
    key: bytes
    root: bytes | None


def read_pem(files: TlsFiles, read: Callable[[Path], bytes] | None = None) -> Pem:
    """The files' bytes; a file that cannot be read or is too large raises :class:`InvalidArgument`.

    ``read``: how a file is read (start-up passes one that reads each path once for every listener).
    """
    read = read or _read
    return Pem(read(files.cert), read(files.key), None if files.root is None else read(files.root))


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

    def __init__(self, name: str, files: TlsFiles, read: Callable[[Path], bytes] | None = None) -> None:
        self.name = name
        self.files = files
        self.pem = read_pem(files, read)
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
        """Read and check every listener's files now; raises :class:`InvalidArgument` naming the bad one.

        A file several listeners share (the metrics port follows HTTP's by default) is read once.
        """
        read = functools.cache(_read)
        by_name = {}
        for name in listeners(settings):
            files = tls_files(settings, name)
            if files is None:
                continue
            try:
                by_name[name] = ListenerTls(name, files, read)
            except InvalidArgument as error:
                raise InvalidArgument(f"{name} TLS: {error.message}") from None
        return cls(by_name)

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
