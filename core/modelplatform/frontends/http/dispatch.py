"""The steps every HTTP path takes with a request, written once: match, admit, time, call, render.

The fast lane (fastlane.py), the Sanic path (sanic_app.py) and the harness
that drives requests without a socket (``modelplatform.testing.ComposedServer``,
which the fuzzer uses) read a request each in their own way, then ask one
:class:`HttpDispatch` to

0. answer a CORS preflight (:attr:`HttpDispatch.cors`, when CORS is on),
1. match it to a declared route (:attr:`HttpDispatch.match`; a miss is
   rendered by the dialect owning the path, :meth:`HttpDispatch.miss`),
2. admit it: restricted APIs and API keys (:attr:`HttpDispatch.admit`),
3. call the route's handler within the response timeout, and
4. render what it raised in its dialect's shape (:meth:`HttpDispatch.failure`),
   steps 3 and 4 being :meth:`HttpDispatch.answer`.

``match`` and ``admit`` are bound once, so a request on the fast lane pays
the same awaits and no more allocations than when the lane spelled the steps
out; with no restrictions or keys set, ``admit`` is one plain call that
answers a constant (the lane used to write the constant inline).
Every route's handler runs inside its request scope (observing.py):
:func:`build_router` wraps them once, for every path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from modelplatform.base.observing import ScopeOpener, counted_in_call, current_scope
from modelplatform.dataplane.declarations import HttpDialect, HttpHandler, HttpReply, HttpRequest, HttpRoute
from modelplatform.frontends.gate import Verdict, access_gate
from modelplatform.frontends.http.admission import ALLOWED, HttpAccess
from modelplatform.frontends.http.cors import Cors
from modelplatform.frontends.http.encoding import body_limit, call_route, decoded_request
from modelplatform.frontends.http.failures import PathOwners, route_failure
from modelplatform.frontends.http.routing import Match, Router
from modelplatform.frontends.http.timeouts import HttpTimeouts, within_response_timeout

if TYPE_CHECKING:
    from modelplatform.dataplane.context import ServerContext

#: A refusal (or None) and the verdict to run the handler under.
Admission = tuple[HttpReply | None, Verdict]
#: What a path makes of an error before the dialect renders it (None: the dialect renders it).
FailureHook = Callable[[Exception], HttpReply | None]

_EVERYTHING_ADMITTED: Admission = (None, ALLOWED)


def _admit_everything(match: Match, headers: Mapping[str, str]) -> Admission:
    return _EVERYTHING_ADMITTED


class HttpDispatch:
    """One server's routes and the steps every HTTP path takes with a request of one of them."""

    __slots__ = ("router", "owners", "max_request_bytes", "timeouts", "access", "match", "admit", "cors")

    def __init__(
        self,
        router: Router,
        owners: PathOwners,
        max_request_bytes: int,
        timeouts: HttpTimeouts,
        access: HttpAccess | None = None,
        cors: Cors | None = None,
    ) -> None:
        self.router = router
        self.owners = owners
        self.max_request_bytes = max_request_bytes
        self.timeouts = timeouts
        #: None when nothing is restricted and no key file is set: nothing is asked per request.
        self.access = access if access is not None and access.active else None
        #: (method, path) -> the declared route's Match, or None.
        self.match = router.match
        #: (match, headers) -> (the refusal to answer or None, the verdict for ``admitted``).
        self.admit: Callable[[Match, Mapping[str, str]], Admission] = (
            self.access.admit if self.access is not None else _admit_everything
        )
        #: None when CORS is off (no ``--cors-allow-origin``): nothing is asked per request.
        self.cors = cors

    @classmethod
    def of(cls, context: ServerContext) -> HttpDispatch:
        """The server's dispatch: every dialect's routes (asked once), scoped, and its gate."""
        dialects = list(context.dialects.values())
        dataplane, limit = context.dataplane, context.settings.max_request_bytes
        router = build_router(
            dialects,
            {d.name: list(context.routes_of(d.name)) for d in dialects},
            ScopeOpener(dataplane.observation.observers),
            dataplane.inference.count_refused,
            limit,
        )
        timeouts = HttpTimeouts.of(context.settings)
        cors = Cors.of(context.settings, router.allowed_methods)
        return cls(router, PathOwners(dialects), limit, timeouts, HttpAccess(access_gate(context)), cors)

    def miss(self, method: str, path: str) -> HttpReply:
        """No route matched: 405 when another method has one, else 404, in the path owner's shape."""
        if self.router.allowed_methods(path):
            return self.owners.render(path, "Method Not Allowed", 405)
        return self.owners.render(path, "Not Found", 404)

    async def answer(
        self, match: Match, request: HttpRequest, failed: FailureHook | None = None
    ) -> HttpReply:
        """The route's reply within the response timeout; what it raises, rendered.

        ``failed`` sees an error first: a path's own errors (Sanic's body
        reads) become its reply; None leaves the error to the dialect.
        """
        try:
            return await within_response_timeout(
                call_route(match.route, request, self.max_request_bytes), self.timeouts
            )
        except Exception as error:  # noqa: BLE001 - rendered in the route's dialect's shape
            reply = None if failed is None else failed(error)
            return reply if reply is not None else self.failure(match, error, request.path)

    def failure(self, match: Match, error: Exception, path: str) -> HttpReply:
        """``error``, raised for a request of ``match``'s route, in its dialect's shape."""
        return route_failure(match.dialect, error, path, match.params)


def build_router(
    dialects: Iterable[HttpDialect],
    routes: Mapping[str, list[HttpRoute]],
    opener: ScopeOpener,
    count_refused: Callable[[str], None],
    max_request_bytes: int,
) -> Router:
    """Every dialect's ``routes``, each handler run inside a request scope (observing.py)."""
    listed = list(dialects)
    scoped: dict[str, Sequence[HttpRoute]] = {
        d.name: [
            scoped_route(r, protocol_of(d), opener, count_refused, max_request_bytes) for r in routes[d.name]
        ]
        for d in listed
    }
    return Router(listed, scoped)


def protocol_of(dialect: HttpDialect) -> str:
    """The ``protocol`` label the dialect's requests are counted under."""
    return dialect.protocol or dialect.name


def scoped_route(
    route: HttpRoute,
    protocol: str,
    opener: ScopeOpener,
    count_refused: Callable[[str], None],
    max_request_bytes: int,
) -> HttpRoute:
    """``route`` with its handler counted under ``protocol`` (one wrapper for every path),
    its body's Content-Encoding undone first.

    On an inference route, an error answer no counter saw is counted as a refusal.
    """
    handler: HttpHandler = route.handler
    model_param = route.model_param
    limit = body_limit(route, max_request_bytes)

    async def scoped(request: HttpRequest) -> HttpReply:
        scope = opener.open(protocol, _headers, request)
        token = current_scope.set(scope)
        streamed = False
        failed = True
        try:
            reply = await handler(decoded_request(request, limit))
            streamed, failed = reply.streamed, reply.status >= 400
            return reply
        except asyncio.CancelledError:
            failed = False  # the client left or the answer timed out: the dataplane counts it
            raise
        finally:
            if failed and model_param is not None and not counted_in_call():
                count_refused(request.params.get(model_param, "") if model_param else "")
            # A streamed body is produced after this returns, in this task: it keeps the scope.
            if not streamed:
                current_scope.reset(token)
                opener.close(scope)

    return replace(route, handler=scoped)


def _headers(request: HttpRequest) -> Mapping[str, str]:
    return request.headers
