"""Repository URLs in Triton's forms, taken apart: filesystem, bucket and folder, endpoint.

- ``s3://bucket/path``: AWS S3 (endpoint and region from the environment);
- ``s3://host:port/bucket/path``: an S3-compatible server over plain HTTP;
- ``s3://http://host:port/bucket/path`` or ``s3://https://host:port/bucket/path``:
  the same with the scheme spelled out (the port may then be left out);
- ``gs://bucket/path``: Google Cloud Storage;
- ``as://account/container/path``: Azure Blob Storage (account, then container).

Repeated slashes are one, trailing slashes are dropped (as Triton does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modelplatform import InvalidArgument

#: fsspec protocol by URL scheme, and the extra that installs it.
PROTOCOLS = {"s3": ("s3", "s3fs"), "gs": ("gcs", "gcs"), "as": ("abfs", "azure")}
#: S3's bucket naming rules (lower case, digits, dots and dashes; 3 to 63 characters).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
#: An endpoint in the URL: an optional scheme, a host, a port (needed without a scheme).
_ENDPOINT = re.compile(r"^(?:(https?)://)?([0-9A-Za-z.\-]+)(?::([0-9]{1,5}))?/(.*)$")


@dataclass(frozen=True, slots=True)
class Location:
    """One remote repository: ``root`` is ``bucket/folder`` as fsspec paths name it."""

    url: str
    scheme: str
    root: str
    #: ``http(s)://host:port`` when the URL names a server (S3-compatible), else None.
    endpoint_url: str | None = None
    #: The Azure storage account (``as://`` only).
    account: str | None = None

    @property
    def protocol(self) -> str:
        return PROTOCOLS[self.scheme][0]

    @property
    def extra(self) -> str:
        """The modelplatform-storage extra that installs this filesystem."""
        return PROTOCOLS[self.scheme][1]

    @property
    def bucket(self) -> str:
        return self.root.split("/", 1)[0]


def parse(url: str) -> Location | None:
    """The location ``url`` names; None for a scheme this plugin does not serve."""
    scheme, separator, rest = url.partition("://")
    if not separator or scheme not in PROTOCOLS:
        return None
    if scheme == "s3":
        return _s3(url, rest)
    path = _clean(url, rest)
    if scheme == "as":
        account, _, path = path.partition("/")
        if not path:
            raise InvalidArgument(f"{url}: give as://<account>/<container>[/<folder>]")
        return Location(url, scheme, path, account=account)
    return Location(url, scheme, path)


def _s3(url: str, rest: str) -> Location:
    endpoint_url = None
    match = _ENDPOINT.match(rest)
    if match and (match.group(1) or match.group(3)):  # a scheme or a port: a server is named
        scheme, host, port = match.group(1) or "http", match.group(2), match.group(3)
        endpoint_url = f"{scheme}://{host}" + (f":{port}" if port else "")
        rest = match.group(4)
    root = _clean(url, rest)
    bucket = root.split("/", 1)[0]
    if not _BUCKET.match(bucket):
        raise InvalidArgument(f"{url}: '{bucket}' is not a valid bucket name")
    return Location(url, "s3", root, endpoint_url=endpoint_url)


def _clean(url: str, path: str) -> str:
    """``path`` with repeated and trailing slashes dropped; '.' and '..' refused."""
    parts = [part for part in path.split("/") if part]
    if not parts:
        raise InvalidArgument(f"{url}: no bucket named")
    if any(part in (".", "..") for part in parts):
        raise InvalidArgument(f"{url}: '.' and '..' are not allowed in the path")
    return "/".join(parts)
