"""The CORS settings' own rules (the Fetch standard's), checked when settings resolve.

An origin is ``*`` or ``scheme://host[:port]`` as a browser sends it in
``Origin`` (no path, no trailing slash). ``*`` cannot be combined with
credentials: the Fetch standard refuses a wildcard answer to a request with
credentials, and echoing every origin instead would hand any site the
user's cookies.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from modelplatform.base.errors import InvalidArgument

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings

ANY = "*"
_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]*://[^/\s?#]+$")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
#: The most seconds a preflight answer may be kept (browsers cap it lower anyway).
MAX_AGE_SECS = 86400


def check_cors(settings: Settings) -> None:
    origins = settings.cors_allow_origin
    for origin in origins:
        if origin != ANY and not _ORIGIN.match(origin.lower()):
            raise InvalidArgument(
                f"cors_allow_origin {origin!r} must be '*' or scheme://host[:port] (no path, no trailing slash)"
            )
    if ANY in origins and settings.cors_allow_credentials:
        raise InvalidArgument(
            "cors_allow_origin '*' cannot be combined with cors_allow_credentials (Fetch standard)"
        )
    for name in ("cors_allow_methods", "cors_allow_headers", "cors_expose_headers"):
        bad = [item for item in getattr(settings, name) if not _TOKEN.match(item)]
        if bad:
            raise InvalidArgument(f"{name}: {bad[0]!r} is not an HTTP method or header name")
    if not 0 <= settings.cors_max_age_secs <= MAX_AGE_SECS:
        raise InvalidArgument(f"cors_max_age_secs must be between 0 and {MAX_AGE_SECS}")
