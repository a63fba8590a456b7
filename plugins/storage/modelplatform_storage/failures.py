"""A storage library's exception as one line naming the URL (never a traceback).

Wrong credentials, a missing bucket and an unreachable endpoint each get
their own words; anything else keeps the library's message. All are
``Unavailable``: the server cannot read its own storage, which is not the
client's fault (a load through the repository API fails with this message).
"""

from __future__ import annotations

from modelplatform import ModelPlatformError, Unavailable

#: Longest library detail kept in a message (some servers answer pages of XML).
_DETAIL_CHARS = 300


def described(error: BaseException, url: str, bucket: str) -> ModelPlatformError:
    """The error an operator reads for ``error`` raised while reading ``url``."""
    if isinstance(error, ModelPlatformError):
        return error
    detail = _one_line(error)
    name = type(error).__name__
    if isinstance(error, PermissionError) or "AccessDenied" in name:
        return Unavailable(f"{url}: access denied, check the credentials ({detail})")
    if name == "NoCredentialsError":
        return Unavailable(f"{url}: no credentials found (environment, profile, web identity or role)")
    if isinstance(error, FileNotFoundError) and "bucket" in detail.lower():
        return Unavailable(f"{url}: bucket '{bucket}' does not exist")
    if isinstance(error, (ConnectionError, TimeoutError)) or "Connect" in name or "Timeout" in name:
        return Unavailable(f"{url}: cannot reach the storage endpoint ({detail})")
    return Unavailable(f"{url}: {name}: {detail}")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."
