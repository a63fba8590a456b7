"""Compressed bodies on every REST dialect: one bounded inflation, the same limits, compressed answers.

A 1 GiB gzip or deflate bomb (about 1 MiB on the wire) is refused 413 in
each dialect's own error shape, and the server's peak memory while refusing
it stays within the body limit plus 64 MiB above where it was (read from
the real server's /proc/<pid>/status: VmHWM after resetting it).
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess
from tests.conftest import MODEL_REPOSITORY

from ..http_wire import post

MiB = 1024 * 1024
#: Large enough that holding the inflated bytes twice (the old way) breaks the bound.
LIMIT = 128 * MiB
BOUND = LIMIT + 64 * MiB
WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
GRPS_ERROR_KEYS = ["status"]

SIMPLE = {
    "inputs": [
        {"name": n, "datatype": "INT32", "shape": [1, 16], "data": list(range(16))}
        for n in ("INPUT0", "INPUT1")
    ]
}
#: (path, valid body, content type, how the dialect shapes an error body).
DIALECTS = {
    "oip": ("/v2/models/simple/infer", SIMPLE, "application/json"),
    "tfserving": ("/v1/models/saved_model_half_plus_three:predict", {"instances": [1.0, 2.0]}, "application/json"),
    "grps": (
        "/grps/v1/infer/predict",
        {"model": "simple", "gtensors": {"tensors": [
            {"name": n, "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": list(range(16))} for n in ("INPUT0", "INPUT1")
        ]}},
        "application/json",
    ),
}  # fmt: skip


def _compressed(encoding: str, chunks: Iterator[bytes]) -> bytes:
    compressor = zlib.compressobj(9, wbits=WBITS[encoding])
    return b"".join([*(compressor.compress(chunk) for chunk in chunks), compressor.flush()])


def _zeros(total: int) -> Iterator[bytes]:
    block = bytes(MiB)
    for _ in range(total // MiB):
        yield block


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """1 GiB of zeros, gzip and deflate (about 1 MiB each)."""
    return {encoding: _compressed(encoding, _zeros(1024 * MiB)) for encoding in WBITS}


@pytest.fixture(scope="module")
def bounded_server() -> Iterator[ServerProcess]:
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
            "--load-model", "saved_model_half_plus_three", "--model-control-mode", "explicit")  # fmt: skip
    with ServerProcess(*args, "--max-request-bytes", str(LIMIT)) as process:
        yield process


def _error_of(dialect: str, status: int, body: bytes) -> str:
    doc = json.loads(body)
    if dialect == "grps":
        assert doc["status"]["code"] == status and doc["status"]["status"] == "FAILURE"
        return doc["status"]["msg"]
    assert list(doc) == ["error"], doc
    return doc["error"]


class PeakRss:
    """The server's peak resident memory over a block, above its level at the start."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.baseline = pid, 0, 0
        self._sampling = threading.Event()

    def _kib(self, field: str) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(field)

    def __enter__(self) -> PeakRss:
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
            self._sampler = None
        except OSError:  # no clear_refs here: sample VmRSS instead
            self._sampler = threading.Thread(target=self._sample, daemon=True)
        self.baseline = self._kib("VmRSS")
        if self._sampler is not None:
            self._sampling.set()
            self._sampler.start()
        return self

    def _sample(self) -> None:
        while self._sampling.is_set():
            self.peak = max(self.peak, self._kib("VmRSS"))
            time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        if self._sampler is None:
            self.peak = self._kib("VmHWM")
        else:
            self._sampling.clear()
            self._sampler.join()

    @property
    def above_baseline(self) -> int:
        return self.peak - self.baseline


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_bomb_is_413_within_the_limit_plus_64_mib(bounded_server, bombs, dialect, encoding):
    path, valid, content_type = DIALECTS[dialect]
    assert bounded_server.process is not None
    headers = {"Content-Encoding": encoding, "Content-Type": content_type}
    with PeakRss(bounded_server.process.pid) as memory:
        status, _, body = post(bounded_server.http_port, path, bombs[encoding], headers)
    assert status == 413, body
    assert "over the limit" in _error_of(dialect, 413, body)
    assert memory.above_baseline <= BOUND, f"peak {memory.above_baseline / MiB:.0f} MiB above the baseline"
    status, _, body = post(
        bounded_server.http_port, path, json.dumps(valid).encode(), {"Content-Type": content_type}
    )
    assert status == 200, body  # still serving


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_compressed_body_and_answer(bounded_server, dialect, encoding):
    """Each REST dialect inflates a compressed body and compresses its answer when asked."""
    path, valid, content_type = DIALECTS[dialect]
    plain = json.dumps(valid).encode()
    compressed = _compressed(encoding, iter([plain]))
    headers = {"Content-Encoding": encoding, "Accept-Encoding": encoding, "Content-Type": content_type}
    status, got, body = post(bounded_server.http_port, path, compressed, headers)
    assert status == 200, body
    assert got["content-encoding"] == encoding
    inflated = zlib.decompress(body, WBITS[encoding])
    _, _, expected = post(bounded_server.http_port, path, plain, {"Content-Type": content_type})
    assert inflated == expected


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_bad_compressed_bodies_are_400_in_the_dialects_shape(bounded_server, dialect):
    path, valid, content_type = DIALECTS[dialect]
    plain = json.dumps(valid).encode()
    for body, encoding, words in (
        (gzip.compress(plain)[:-12], "gzip", "truncated"),
        (gzip.compress(plain) + b"junk", "gzip", "trailing data"),
        (b"not deflate at all", "deflate", "cannot decompress"),
        (plain, "br", "unsupported Content-Encoding"),
    ):
        status, _, reply = post(
            bounded_server.http_port, path, body, {"Content-Encoding": encoding, "Content-Type": content_type}
        )
        assert status == 400, reply
        assert words in _error_of(dialect, 400, reply)


def test_identity_answer_without_accept_encoding(bounded_server):
    path, valid, content_type = DIALECTS["tfserving"]
    status, got, body = post(
        bounded_server.http_port, path, json.dumps(valid).encode(), {"Accept-Encoding": "gzip;q=0"}
    )
    assert status == 200 and "content-encoding" not in got
    assert json.loads(body) == {"predictions": [3.5, 4.0]}
