"""How ``--single-port`` sorts a connection by its first bytes (oneport.sort_connection)."""

from __future__ import annotations

import pytest

from modelplatform.frontends.oneport import HTTP2_PREFACE, Kind, sort_connection


@pytest.mark.parametrize("first", [b"", b"P", b"PRI * HTTP/2.0", HTTP2_PREFACE[:-1]])
def test_a_prefix_of_the_preface_is_not_sorted_yet(first):
    assert sort_connection(first) is None


@pytest.mark.parametrize(
    "first", [HTTP2_PREFACE, HTTP2_PREFACE + b"\x00\x00\x12\x04", bytearray(HTTP2_PREFACE)]
)
def test_the_whole_preface_is_h2c(first):
    assert sort_connection(first) is Kind.H2C


@pytest.mark.parametrize(
    "first",
    [
        b"G",
        b"GET / HTTP/1.1\r\n",
        b"POST /v2/models/simple/infer HTTP/1.1\r\n",
        b"PRX",
        b"PRI * HTTP/1.1\r\n",
        b"\x16\x03\x01",
        HTTP2_PREFACE[:-1] + b"X",
    ],
)
def test_anything_that_leaves_the_preface_is_http1_at_once(first):
    assert sort_connection(first) is Kind.HTTP1
