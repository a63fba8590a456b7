"""Which files each listener serves TLS with: the metrics port follows HTTP unless given its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelplatform.base.errors import InvalidArgument
from modelplatform.composition.options import resolve
from modelplatform.frontends.tls import ListenerTls, TlsFiles, tls_files

from ..e2e.tls_certs import Authority


@pytest.fixture()
def pem(tmp_path: Path) -> dict[str, str]:
    authority = Authority()
    authority.server().write(tmp_path / "s.crt", tmp_path / "s.key")
    authority.server("metrics").write(tmp_path / "m.crt", tmp_path / "m.key")
    (tmp_path / "ca.pem").write_bytes(authority.pem)
    return {name: str(tmp_path / name) for name in ("s.crt", "s.key", "m.crt", "m.key", "ca.pem")}


def http_tls(pem: dict[str, str], mutual: bool = False) -> dict[str, object]:
    values: dict[str, object] = {"http_server_cert": pem["s.crt"], "http_server_key": pem["s.key"]}
    if mutual:
        return {**values, "http_use_ssl_mutual": True, "http_root_cert": pem["ca.pem"]}
    return {**values, "http_use_ssl": True}


def test_plain_text_by_default() -> None:
    settings = resolve(env={})
    assert [tls_files(settings, name) for name in ("http", "grpc", "metrics")] == [None, None, None]


def test_metrics_follows_http(pem: dict[str, str]) -> None:
    settings = resolve(env={}, overrides=http_tls(pem, mutual=True))
    expected = TlsFiles(Path(pem["s.crt"]), Path(pem["s.key"]), Path(pem["ca.pem"]), True)
    assert tls_files(settings, "http") == tls_files(settings, "metrics") == expected
    assert tls_files(settings, "grpc") is None


def test_metrics_own_settings_win(pem: dict[str, str]) -> None:
    own = {
        "metrics_server_cert": pem["m.crt"],
        "metrics_server_key": pem["m.key"],
        "metrics_use_ssl_mutual": False,
    }
    settings = resolve(env={}, overrides={**http_tls(pem, mutual=True), **own})
    assert tls_files(settings, "metrics") == TlsFiles(Path(pem["m.crt"]), Path(pem["m.key"]), None, False)
    off = resolve(env={"MODELPLATFORM_METRICS_USE_SSL": "false"}, overrides=http_tls(pem))
    assert tls_files(off, "metrics") is None and tls_files(off, "http") is not None


def test_mutual_implies_tls_as_in_triton(pem: dict[str, str]) -> None:
    values = {"grpc_use_ssl_mutual": True, "grpc_server_cert": pem["s.crt"], "grpc_server_key": pem["s.key"],
              "grpc_root_cert": pem["ca.pem"]}  # fmt: skip
    files = tls_files(resolve(env={}, overrides=values), "grpc")
    assert files is not None and files.mutual


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"http_use_ssl": True}, "http_use_ssl needs http_server_cert"),
        ({"metrics_use_ssl": True}, "metrics_use_ssl needs metrics_server_cert (or http_server_cert)"),
        ({"metrics_server_key": "/x"}, "metrics_server_key is set but metrics TLS is off"),
    ],
)
def test_refused(values: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(env={}, overrides=values)


def test_a_broken_file_keeps_the_previous_certificate(pem: dict[str, str]) -> None:
    listener = ListenerTls("http", TlsFiles(Path(pem["s.crt"]), Path(pem["s.key"]), None, False))
    served, generation = listener.pem, listener.generation
    Path(pem["s.crt"]).write_bytes(Path(pem["m.crt"]).read_bytes())  # the metrics cert with the server key
    assert listener.changed()
    assert not listener.reload()
    assert (listener.pem, listener.generation) == (served, generation) and not listener.changed()
    Path(pem["s.key"]).write_bytes(Path(pem["m.key"]).read_bytes())
    assert listener.changed() and listener.reload()
    assert listener.generation == generation + 1 and listener.pem.cert == Path(pem["m.crt"]).read_bytes()


@pytest.mark.parametrize("mutual", [False, True])
def test_single_port_is_refused_with_tls(pem: dict[str, str], mutual: bool) -> None:
    with pytest.raises(InvalidArgument, match="single_port serves plain text only"):
        resolve(env={}, overrides={**http_tls(pem, mutual), "single_port": True})
    assert resolve(env={}, overrides={"single_port": True}).single_port
