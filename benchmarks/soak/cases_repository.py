"""The repository API over HTTP: unloads and loads ``simple`` while the other families use it.

Dialect ``repository-http``. One action a second: mostly index polls, a
load of ``simple`` (a reload in place when it is loaded, which must not
cost a request its answer), now and then an unload (the others then get
the clean "not found", counted as ``gone``), and invalid requests. With
these weights ``simple`` is unloaded about a fifth of the time, a few
seconds at a stretch.
"""

from __future__ import annotations

import json

from soak import payloads as p
from soak.httpwire import HttpSession
from soak.outcomes import ERROR, OK, Case, Outcome, http_answer, http_refusal, judged, shorten

REPOSITORY = "repository-http"
PAUSE_SECS = 1.0
MODELS = "/v2/repository/models/"


def cases(http_url: str, grpc_url: str) -> list[Case]:
    session = HttpSession(http_url)

    def post(path: str, body: bytes = b"{}") -> tuple[int, bytes]:
        status, data, _ = session.request("POST", path, body, {"Content-Type": "application/json"})
        return status, data

    def action(verb: str) -> Outcome:
        status, data = post(f"{MODELS}{p.RELOADED}/{verb}")
        return http_answer(status, data, lambda d: judged(d == b"", d[:200]))

    def index() -> Outcome:
        status, data = post("/v2/repository/index")

        def once_each(body: bytes) -> Outcome:
            keys = [(row["name"], row.get("version", "")) for row in json.loads(body)]
            return judged(len(keys) == len(set(keys)) and any(k[0] == p.RELOADED for k in keys), keys)

        return http_answer(status, data, once_each)

    def refused(path: str, body: bytes, expected: set[int]):
        def call() -> Outcome:
            status, data = post(path, body)
            outcome = http_refusal(status, data, expected)
            if outcome.kind == OK and not data.startswith(b'{"error":'):
                return Outcome(ERROR, shorten(f"not OIP's error shape: {data[:200]!r}"))
            return outcome

        return call

    return [
        Case(REPOSITORY, "index", index, 6),
        Case(REPOSITORY, f"load {p.RELOADED}", lambda: action("load"), 4),
        Case(REPOSITORY, f"unload {p.RELOADED}", lambda: action("unload"), 1),
        Case(REPOSITORY, "load an unknown model", refused(f"{MODELS}no_such_model/load", b"{}", {404})),
        Case(
            REPOSITORY,
            "load body of the wrong type",
            refused(f"{MODELS}{p.RELOADED}/load", b'{"parameters": 3}', {400}),
        ),
    ]
