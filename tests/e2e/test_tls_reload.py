"""Certificates rotated while the server runs, ``--workers`` over TLS, and refused TLS settings.

A rotation writes a new certificate (new serial number, new name) over the
served files; the next new connection on every port must be served with it,
whether the change was noticed by polling the files or by SIGHUP. A broken
file keeps the old certificate. Settings that cannot work stop ``serve``
with exit status 2 and a line naming the setting.
"""

from __future__ import annotations

import http.client
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .tls_certs import Authority, Pem

#: The server looks at the files every 5 s; a loaded machine gets plenty more.
RELOAD_WAIT_S = 40.0


class Files:
    """The server's PEM files in a folder of the test's own, rewritten by the test."""

    def __init__(self, folder: Path, authority: Authority) -> None:
        self.ca, self.cert, self.key = folder / "ca.pem", folder / "server.crt", folder / "server.key"
        self.client_cert, self.client_key = folder / "client.crt", folder / "client.key"
        self.install(authority, authority.server())

    def install(self, authority: Authority, server: Pem) -> None:
        """Trust ``authority`` and serve ``server``; a client of the same authority is kept beside."""
        authority.client().write(self.client_cert, self.client_key)
        self.ca.write_bytes(authority.pem)
        server.write(self.cert, self.key)

    def args(self, listener: str, mutual: bool) -> list[str]:
        switch = f"--{listener}-use-ssl-mutual" if mutual else f"--{listener}-use-ssl"
        root = [f"--{listener}-root-cert", str(self.ca)] if mutual else []
        return [
            switch,
            f"--{listener}-server-cert",
            str(self.cert),
            f"--{listener}-server-key",
            str(self.key),
            *root,
        ]

    def context(
        self, alpn: str | None = None, ca: bytes | None = None, client: tuple[Path, Path] | None = None
    ) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=(ca or self.ca.read_bytes()).decode())
        if client is not None:
            context.load_cert_chain(*client)
        if alpn is not None:
            context.set_alpn_protocols([alpn])
        return context


def served_serial(port: int, context: ssl.SSLContext) -> int:
    """The serial number of the certificate a new connection to ``port`` is served with."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as sock:
            der = sock.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def wait_for_log(
    server: ServerProcess, event: str, count: int, since: int, timeout: float = RELOAD_WAIT_S
) -> str:
    """The log since ``since`` once ``count`` lines match the regex ``event``."""
    pattern = re.compile(event)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tail = server.log()[since:]
        if sum(1 for line in tail.splitlines() if pattern.search(line)) >= count:
            return tail
        time.sleep(0.2)
    raise AssertionError(f"{count} x {event} not logged in {timeout}s:\n{server.log()[since:][-3000:]}")


def health(port: int, credentials: grpc.ChannelCredentials) -> int:
    with grpc.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=15).status


def credentials(ca: Path, client: tuple[Path, Path]) -> grpc.ChannelCredentials:
    cert, key = client
    return grpc.ssl_channel_credentials(ca.read_bytes(), key.read_bytes(), cert.read_bytes())


def ready_over_https(port: int, context: ssl.SSLContext) -> int:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request("GET", "/v2/health/ready")
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


@pytest.fixture()
def authority() -> Authority:
    return Authority()


@pytest.fixture()
def files(tmp_path: Path, authority: Authority) -> Files:
    return Files(tmp_path, authority)


def serve(files: Files, mutual: bool, *extra: str) -> ServerProcess:
    args = ["--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple"]
    return ServerProcess(*args, *files.args("http", mutual), *files.args("grpc", mutual), *extra)


def test_files_changed_on_disk_serve_new_connections(files: Files, authority: Authority) -> None:
    """No signal: the server notices the new files itself (as with a Kubernetes secret)."""
    with serve(files, mutual=False) as server:
        before = served_serial(server.http_port, files.context())
        kept = http.client.HTTPSConnection("127.0.0.1", server.http_port, context=files.context(), timeout=30)
        kept.request("GET", "/v2/health/live")
        assert kept.getresponse().read() == b""
        since = len(server.log())
        rotated = authority.server(common_name="rotated")
        rotated.write(files.cert, files.key)
        tail = wait_for_log(server, "tls_reloaded", 3, since)  # http, grpc, metrics (it follows HTTP)
        assert {listener for listener in re.findall(r"listener=(\w+)", tail)} >= {"http", "grpc", "metrics"}
        assert before != rotated.serial
        assert served_serial(server.http_port, files.context()) == rotated.serial
        assert served_serial(server.grpc_port, files.context("h2")) == rotated.serial
        assert served_serial(server.metrics_port, files.context()) == rotated.serial
        assert health(server.grpc_port, grpc.ssl_channel_credentials(files.ca.read_bytes())) == 1  # SERVING
        kept.request("GET", "/v2/health/ready")  # a connection made before keeps being served
        assert kept.getresponse().status == 200
        kept.close()


def test_sighup_reloads_a_new_ca_and_a_broken_file_keeps_the_old(files: Files, authority: Authority) -> None:
    with serve(files, mutual=True) as server:
        assert server.process is not None
        old_client = (files.client_cert.with_name("old.crt"), files.client_key.with_name("old.key"))
        authority.client().write(*old_client)
        old_ca, first = (
            files.ca.read_bytes(),
            served_serial(server.http_port, files.context(client=old_client)),
        )

        since = len(server.log())
        files.cert.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n")
        server.process.send_signal(signal.SIGHUP)
        tail = wait_for_log(server, "tls_reload_failed", 2, since, timeout=20)  # http and grpc at least
        assert "tls_reloaded" not in tail
        assert served_serial(server.http_port, files.context(client=old_client)) == first
        assert ready_over_https(server.http_port, files.context(client=old_client)) == 200
        old_grpc = grpc.ssl_channel_credentials(
            old_ca, old_client[1].read_bytes(), old_client[0].read_bytes()
        )
        assert health(server.grpc_port, old_grpc) == 1

        since = len(server.log())
        new_authority = Authority("rotated CA")
        rotated = new_authority.server(common_name="rotated")
        files.install(new_authority, rotated)
        server.process.send_signal(signal.SIGHUP)
        wait_for_log(server, "tls_reloaded", 3, since)
        new_client = (files.client_cert, files.client_key)
        assert served_serial(server.http_port, files.context(client=new_client)) == rotated.serial
        assert ready_over_https(server.http_port, files.context(client=new_client)) == 200
        new_grpc = credentials(files.ca, (files.client_cert, files.client_key))
        assert health(server.grpc_port, new_grpc) == 1
        # The old CA is no longer trusted: its client certificate is refused on both ports.
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            ready_over_https(server.http_port, files.context(ca=files.ca.read_bytes(), client=old_client))
        mixed = credentials(files.ca, old_client)
        with pytest.raises(grpc.RpcError):
            health(server.grpc_port, mixed)


def test_every_worker_serves_tls_and_reloads_on_sighup(files: Files, authority: Authority) -> None:
    with serve(files, False, "--workers", "2") as server:
        assert server.process is not None
        wait_for_log(server, "server_started", 2, 0, timeout=90)  # ServerProcess waits for the first only
        assert len(re.findall(r"http_started.*tls=on", server.log())) == 2
        assert len(re.findall(r"grpc_started.*tls=on", server.log())) == 2
        statuses = {ready_over_https(server.http_port, files.context()) for _ in range(16)}
        assert statuses <= {200, 503} and statuses  # every new connection, whichever worker took it, is TLS
        since = len(server.log())
        rotated = authority.server(common_name="rotated")
        rotated.write(files.cert, files.key)
        server.process.send_signal(signal.SIGHUP)  # the supervisor passes it to each worker
        # Each worker reloads its own HTTP listener; which of the others log first varies.
        wait_for_log(server, r"tls_reloaded.*listener=http\b", 2, since)
        assert {served_serial(server.http_port, files.context()) for _ in range(8)} == {rotated.serial}


REFUSED = {
    "use-ssl-without-files": (["--http-use-ssl"], "http_use_ssl needs http_server_cert"),
    "mutual-without-root": (["--grpc-use-ssl-mutual", "--grpc-server-cert", "{cert}", "--grpc-server-key", "{key}"],
                            "grpc_use_ssl_mutual needs grpc_root_cert"),
    "missing-file": (["--http-use-ssl", "--http-server-cert", "{dir}/nope.pem", "--http-server-key", "{key}"],
                     "http_server_cert {dir}/nope.pem: no such file"),
    "file-without-tls": (["--grpc-server-cert", "{cert}"], "grpc_server_cert is set but grpc TLS is off"),
    "root-without-mutual": (["--http-use-ssl", "--http-server-cert", "{cert}", "--http-server-key", "{key}",
                             "--http-root-cert", "{ca}"], "http_root_cert is read only with http_use_ssl_mutual"),
    "metrics-mutual-without-root": (["--http-use-ssl", "--http-server-cert", "{cert}", "--http-server-key", "{key}",
                                     "--metrics-use-ssl-mutual"], "metrics_use_ssl_mutual needs metrics_root_cert"),
    "not-a-certificate": (["--http-use-ssl", "--http-server-cert", "{ca}.txt", "--http-server-key", "{key}"],
                          "http TLS: unusable certificate"),
    "key-of-another-certificate": (
        ["--grpc-use-ssl", "--grpc-server-cert", "{cert}", "--grpc-server-key", "{client_key}"],
        "grpc TLS: unusable certificate",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_settings_that_cannot_work_stop_serve_with_status_2(files: Files, case: str) -> None:
    Path(f"{files.ca}.txt").write_text("hello, not PEM\n")
    names = {"cert": files.cert, "key": files.key, "ca": files.ca, "dir": files.ca.parent,
             "client_key": files.client_key}  # fmt: skip
    args, message = REFUSED[case]
    command = [sys.executable, "-m", "modelplatform", "serve", "--model-repository", str(MODEL_REPOSITORY)]
    done = subprocess.run(
        [*command, *(a.format(**names) for a in args)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message.format(**names) in done.stderr and "Traceback" not in done.stderr
