"""The docs page: Swagger UI from the ``swagger-ui-bundle`` package, no network needed.

The page and its script are ours; Swagger UI's files are read from the
package's folder when first asked for. swagger-ui-bundle 1.1 ships Swagger UI
4.15, which renders OpenAPI 3.0 and refuses a document labelled 3.1: the page
relabels the documents it loads as 3.0.3 for the renderer only (our schemas
use no 3.1-only keyword it would misread); the documents served stay 3.1.
"""

from __future__ import annotations

import html
import mimetypes
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from pathlib import Path

import orjson

from modelplatform import HttpReply, HttpRequest, NotFound

#: Swagger UI's files the page uses (nothing else of the package's folder is served).
SWAGGER_FILES = ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js",
                 "favicon-32x32.png", "favicon-16x16.png")  # fmt: skip
PAGE_SCRIPT = "modelplatform-docs.js"
_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<title>modelplatform API</title>
<link rel="stylesheet" type="text/css" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui" data-documents="{documents}"></div>
<script src="/docs/swagger-ui-bundle.js" charset="UTF-8"></script>
<script src="/docs/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
<script src="/docs/{script}" charset="UTF-8"></script>
</body>
</html>
"""


def docs_page(documents: Mapping[str, str]) -> Callable[[HttpRequest], Awaitable[HttpReply]]:
    """A handler answering the page that lists ``documents`` (name -> URL path), first shown first."""
    urls = [{"name": name, "url": url} for name, url in documents.items()]
    page = _HTML.format(documents=html.escape(orjson.dumps(urls).decode()), script=PAGE_SCRIPT).encode()

    async def show(request: HttpRequest) -> HttpReply:
        return HttpReply(200, page, "text/html; charset=utf-8")

    return show


def swagger_folder() -> Path:
    import swagger_ui_bundle  # the package's folder, read when the page is first asked for

    return Path(swagger_ui_bundle.swagger_ui_path)


class Assets:
    """Swagger UI's files and the page's script, read once each."""

    def __init__(self) -> None:
        self._read: dict[str, bytes] = {}

    async def serve(self, request: HttpRequest) -> HttpReply:
        name = request.params["asset"]
        if name != PAGE_SCRIPT and name not in SWAGGER_FILES:
            raise NotFound(f"no docs file '{name}'")
        if name not in self._read:
            self._read[name] = self._load(name)
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind.endswith("javascript"):
            kind += "; charset=utf-8"
        return HttpReply(200, self._read[name], kind)

    @staticmethod
    def _load(name: str) -> bytes:
        if name == PAGE_SCRIPT:
            return resources.files("modelplatform_openapi").joinpath(f"static/{name}").read_bytes()
        return (swagger_folder() / name).read_bytes()
