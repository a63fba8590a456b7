"""The one access decision: restrictions, then API keys, for one call of one category.

Transport-neutral: the HTTP front end and the gRPC interceptor hand in the
call's category, the model it names and its headers or metadata, and render
the :class:`Denial` in their own shape. One gate per server (ServerContext.shared).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from modelplatform.base.access.categories import HEALTH
from modelplatform.base.access.keys import ApiKey, KeyFile
from modelplatform.base.access.restrictions import (
    GRPC_KEY_PREFIX,
    GRPC_RESTRICTED_FLAG,
    HTTP_RESTRICTED_FLAG,
    Restrictions,
    grpc_groups,
    grpc_value,
    http_groups,
)
from modelplatform.base.access.scope import model_scope

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings
    from modelplatform.dataplane.context import ServerContext


class DenialKind(enum.Enum):
    #: A restricted API called without its header: HTTP 403, gRPC UNAVAILABLE (Triton's answers).
    RESTRICTED = "restricted"
    #: No key, or one no entry matches: HTTP 401, gRPC UNAUTHENTICATED.
    UNAUTHENTICATED = "unauthenticated"
    #: A known key outside its categories or models: HTTP 403, gRPC PERMISSION_DENIED.
    FORBIDDEN = "forbidden"


@dataclass(frozen=True, slots=True)
class Denial:
    kind: DenialKind
    message: str
    #: The key's name when one was presented and known (for the log; never the key).
    key_name: str = ""

    @property
    def http_status(self) -> int:
        """401 without a known key, else 403 (Triton answers a restricted API 403)."""
        return 401 if self.kind is DenialKind.UNAUTHENTICATED else 403


@dataclass(frozen=True, slots=True)
class Verdict:
    """A call's outcome: allowed (``denial`` None), and the name of the key it used ("" none)."""

    denial: Denial | None = None
    key_name: str = ""
    #: A key limited to models, on a call whose model the handler names later (scope.py).
    deferred: ApiKey | None = None


ALLOWED = Verdict()


class AccessGate:
    """Decides every call on every port from the server's restrictions and key file."""

    def __init__(
        self, http: Restrictions, grpc: Restrictions, keys: KeyFile | None, open_health: bool = True
    ) -> None:
        self.http_restrictions = http
        self.grpc_restrictions = grpc
        self.keys = keys
        self.open_health = open_health
        #: Whether anything is checked at all: the fast path skips the gate when not.
        self.http_active = bool(http) or keys is not None
        self.grpc_active = bool(grpc) or keys is not None

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessGate:
        http = Restrictions.parse(http_groups(settings), HTTP_RESTRICTED_FLAG)
        grpc = Restrictions.parse(grpc_groups(settings), GRPC_RESTRICTED_FLAG)
        keys = KeyFile(Path(settings.api_keys_file)) if settings.api_keys_file else None
        return cls(http, grpc, keys, settings.api_keys_open_health)

    def check_http(self, category: str, model: str | None, headers: Mapping[str, str]) -> Verdict:
        """``headers``: lower-case names. ``model``: the model the call names, "" one the
        server cannot tell before the handler runs, None: the call names no model."""
        restriction = self.http_restrictions.get(category)
        if restriction is not None and headers.get(restriction.key) != restriction.value:
            return _restricted(f"This API is restricted, expecting header '{restriction.key}'")
        return self._check_key(category, model, http_key(headers))

    def check_grpc(self, category: str, model: str | None, metadata: Mapping[str, str]) -> Verdict:
        """``metadata``: lower-case keys (gRPC sends them so)."""
        restriction = self.grpc_restrictions.get(category)
        if restriction is not None and grpc_value(metadata, restriction.key) != restriction.value:
            expected = GRPC_KEY_PREFIX + restriction.key
            return _restricted(f"This protocol is restricted, expecting header '{expected}'")
        return self._check_key(category, model, grpc_key(metadata))

    def _check_key(self, category: str, model: str | None, presented: str) -> Verdict:
        if self.keys is None or (category == HEALTH and self.open_health):
            return ALLOWED
        key = self.keys.find(presented)
        if key is None:
            what = "an unknown API key" if presented else "no API key"
            message = f"this API needs an API key; the request has {what}"
            return Verdict(Denial(DenialKind.UNAUTHENTICATED, message))
        refusal = _scope_refusal(key, category, model)
        if refusal:
            return Verdict(Denial(DenialKind.FORBIDDEN, refusal, key.name), key.name)
        if model == "" and key.models is not None:  # named in the body: checked by the handler
            return Verdict(None, key.name, deferred=key)
        return Verdict(None, key.name)


def access_gate(context: ServerContext) -> AccessGate:
    """The server's one gate (HTTP, gRPC and the metrics port share its key file)."""
    return context.shared(AccessGate, lambda: AccessGate.from_settings(context.settings))


#: A listener's own check: (status, message) of a refusal, or None; given lower-case headers.
HeaderCheck = Callable[[Mapping[str, str]], "tuple[int, str] | None"]


def header_check(context: ServerContext, category: str) -> HeaderCheck | None:
    """The check a plugin's own HTTP listener (the metrics port) runs on each request's
    headers for a call of ``category`` that names no model; None when nothing is checked."""
    gate = access_gate(context)
    if not gate.http_active:
        return None

    def check(headers: Mapping[str, str]) -> tuple[int, str] | None:
        denial = gate.check_http(category, None, headers).denial
        return None if denial is None else (denial.http_status, denial.message)

    return check


def _restricted(message: str) -> Verdict:
    return Verdict(Denial(DenialKind.RESTRICTED, message))


def _scope_refusal(key: ApiKey, category: str, model: str | None) -> str:
    if not category:
        return f"API key '{key.name}' may not call this API: it declares no API category"
    if category not in key.categories:
        return f"API key '{key.name}' may not call '{category}' APIs"
    if model and not key.allows_model(model):
        return f"API key '{key.name}' may not use model '{model}'"
    return ""


def http_key(headers: Mapping[str, str]) -> str:
    """``Authorization: Bearer <key>``, else ``x-api-key``; "" when neither."""
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key", "").strip()


def grpc_key(metadata: Mapping[str, str]) -> str:
    """``authorization: Bearer <key>`` metadata; "" when absent."""
    scheme, _, token = metadata.get("authorization", "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


#: Shared by every request without a key: entering it costs nothing.
_NO_KEY = contextlib.nullcontext()


def logged_as(key_name: str) -> contextlib.AbstractContextManager[Any]:
    """Every event logged inside names the request's API key (``api_key``), never the key."""
    return structlog.contextvars.bound_contextvars(api_key=key_name) if key_name else _NO_KEY


def admitted(verdict: Verdict) -> contextlib.AbstractContextManager[Any]:
    """Where an allowed call's handler runs: logged under its key's name, and with the
    model check it owes when the gate could not name the model (scope.py). Without a
    key it costs nothing (the fast lane enters it for every request)."""
    if verdict.deferred is None:
        return logged_as(verdict.key_name)
    return _scoped(verdict.key_name, verdict.deferred)


@contextlib.contextmanager
def _scoped(key_name: str, key: ApiKey) -> Iterator[None]:
    with logged_as(key_name), model_scope(key):
        yield
