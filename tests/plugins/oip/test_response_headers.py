"""OipResponse encodes headers faster than Sanic but strips the same characters."""

from __future__ import annotations

from sanic import HTTPResponse

from modelplatform_oip.rest.response import OipResponse


def test_headers_match_sanic_and_lose_cr_lf_nul():
    headers = {"Inference-Header-Content-Length": 17, "X-Odd": "a\r\nb\x00c", "X-Utf": "é"}
    ours = list(OipResponse(b"{}", headers=dict(headers), content_type="application/json").processed_headers)
    sanic = list(HTTPResponse(b"{}", headers=dict(headers), content_type="application/json").processed_headers)
    assert ours == sanic
    assert (b"X-Odd", b"abc") in ours and (b"content-type", b"application/json") in ours
