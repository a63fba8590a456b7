"""fsspec storage options from the URL and the environment Triton and KServe set.

Keys and tokens are left to each library's default credential chain, which
already reads Triton's ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN`` and ``AWS_PROFILE``, web identity (IRSA:
``AWS_ROLE_ARN`` + ``AWS_WEB_IDENTITY_TOKEN_FILE``), container and instance
roles (botocore), or Google's application default credentials (gcsfs), or
Azure's ``AZURE_STORAGE_*`` variables and managed identity (adlfs). Here only
what the chain does not know: the endpoint, region and TLS settings KServe's
storage secrets set, and anonymous access.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .locations import Location

#: botocore client settings: an unreachable endpoint fails in seconds, not minutes.
_S3_CLIENT_CONFIG = {
    "connect_timeout": 10,
    "read_timeout": 60,
    "retries": {"max_attempts": 3, "mode": "standard"},
}
_FALSE = ("0", "false", "no", "off")


def storage_options(location: Location, env: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``fsspec.filesystem(location.protocol, ...)``."""
    options: dict[str, Any] = {"skip_instance_cache": True, "use_listings_cache": False}
    if location.scheme == "s3":
        options.update(_s3(location, env))
    elif location.scheme == "as":
        options["account_name"] = location.account
    return options


def _s3(location: Location, env: Mapping[str, str]) -> dict[str, Any]:
    client: dict[str, Any] = {}
    region = env.get("AWS_DEFAULT_REGION") or env.get("AWS_REGION")  # Triton's, then KServe's
    if region:
        client["region_name"] = region
    verify = _verify(env)
    if verify is not None:
        client["verify"] = verify
    options: dict[str, Any] = {
        "endpoint_url": s3_endpoint(location, env),
        "client_kwargs": client,
        "config_kwargs": dict(_S3_CLIENT_CONFIG),
    }
    if env.get("awsAnonymousCredential", "").lower() == "true":  # KServe's anonymous access
        options["anon"] = True
    return options


def s3_endpoint(location: Location, env: Mapping[str, str]) -> str | None:
    """The URL's server first, then ``AWS_ENDPOINT_URL``, then KServe's ``S3_ENDPOINT``.

    KServe's secrets give ``S3_ENDPOINT`` as ``host[:port]`` and the scheme in
    ``S3_USE_HTTPS`` ("0" for plain HTTP, HTTPS otherwise).
    """
    if location.endpoint_url:
        return location.endpoint_url
    if env.get("AWS_ENDPOINT_URL"):
        return env["AWS_ENDPOINT_URL"]
    host = env.get("S3_ENDPOINT", "")
    if not host:
        return None
    if "://" in host:
        return host
    scheme = "http" if env.get("S3_USE_HTTPS", "1").lower() in _FALSE else "https"
    return f"{scheme}://{host}"


def _verify(env: Mapping[str, str]) -> bool | str | None:
    """``S3_VERIFY_SSL=0`` turns verification off; ``AWS_CA_BUNDLE`` names the CAs to trust."""
    if env.get("S3_VERIFY_SSL", "").lower() in _FALSE and env.get("S3_VERIFY_SSL"):
        return False
    return env.get("AWS_CA_BUNDLE") or None
