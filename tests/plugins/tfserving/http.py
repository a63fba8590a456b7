"""Raw HTTP for the TF Serving tests: exact bytes in, exact bytes out."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    status: int
    content_type: str
    text: str

    def json(self) -> Any:
        return json.loads(self.text)  # accepts NaN/Infinity tokens

    @property
    def error(self) -> str:
        body = self.json()
        assert list(body) == ["error"], body
        return body["error"]


def call(
    url: str, method: str, path: str, body: bytes | str | None = None, headers: dict | None = None
) -> Reply:
    host, port = url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        data = body.encode() if isinstance(body, str) else body
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, response.getheader("content-type", ""), response.read().decode())
    finally:
        connection.close()


def post(url: str, path: str, doc: Any) -> Reply:
    body = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    return call(url, "POST", path, body)


def get(url: str, path: str) -> Reply:
    return call(url, "GET", path)
