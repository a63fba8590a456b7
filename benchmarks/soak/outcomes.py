"""What one request's answer means for the soak, and the helpers that decide it.

Every answer falls in one kind:

- ``ok``: a valid request answered with the right values, or an invalid one
  refused with the status the dialect owes it.
- ``gone``: a valid request on the model being reloaded answered with the
  dialect's exact "not found" while it was unloaded: expected, counted apart.
- ``wrong``: a success whose values are not the right ones.
- ``5xx``: a server failure (HTTP 5xx, gRPC INTERNAL/UNKNOWN/UNAVAILABLE/...,
  a grps status code of 500 or more).
- ``error``: any other unexpected answer (a valid request refused, an invalid
  one accepted, the wrong 4xx, a transport failure).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

OK, GONE, WRONG, SERVER_ERROR, ERROR = "ok", "gone", "wrong", "5xx", "error"
KINDS = (OK, GONE, WRONG, SERVER_ERROR, ERROR)
#: gRPC codes that mean the server failed, as an HTTP 5xx does.
GRPC_SERVER_CODES = frozenset({"INTERNAL", "UNKNOWN", "DATA_LOSS", "UNAVAILABLE", "UNIMPLEMENTED"})
DETAIL_CHARS = 240


@dataclass(frozen=True)
class Outcome:
    kind: str
    detail: str = ""


@dataclass(frozen=True)
class Case:
    """One kind of request of one dialect; ``call`` sends a fresh one and judges the answer."""

    dialect: str
    name: str
    call: Callable[[], Outcome]
    weight: int = 1


def shorten(text: object) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= DETAIL_CHARS else flat[:DETAIL_CHARS] + "..."


def judged(right: bool, what: str = "") -> Outcome:
    return Outcome(OK) if right else Outcome(WRONG, shorten(what))


def http_refusal(status: int, body: bytes, expected: Collection[int], gone: str = "") -> Outcome:
    """An invalid request: refused with one of ``expected`` (4xx) is right, or as gone while unloaded."""
    if status in expected:
        return Outcome(OK)
    if gone and status == 404 and gone.encode() in body:
        return Outcome(GONE)
    kind = SERVER_ERROR if status >= 500 else ERROR
    return Outcome(kind, shorten(f"{status} (wanted {sorted(expected)}) {body[:300]!r}"))


def http_answer(status: int, body: bytes, verify: Callable[[bytes], Outcome], gone: str = "") -> Outcome:
    """A valid request: 200 is verified; 404 naming ``gone`` (the reloaded model's refusal) is expected."""
    if status == 200:
        try:
            return verify(body)
        except (ValueError, KeyError, IndexError, TypeError) as error:
            return Outcome(WRONG, shorten(f"unreadable answer ({error!r}): {body[:200]!r}"))
    if gone and status == 404 and gone.encode() in body:
        return Outcome(GONE)
    kind = SERVER_ERROR if status >= 500 else ERROR
    return Outcome(kind, shorten(f"{status} {body[:300]!r}"))


def grpc_failure(code: str, message: str, expected: Collection[str] = (), gone: str = "") -> Outcome:
    """A gRPC call that ended with ``code``: right when expected, gone when it is the reload's NOT_FOUND."""
    if code in expected:
        return Outcome(OK)
    if gone and code == "NOT_FOUND" and gone in message:
        return Outcome(GONE)
    kind = SERVER_ERROR if code in GRPC_SERVER_CODES else ERROR
    return Outcome(kind, shorten(f"{code} {message}"))
