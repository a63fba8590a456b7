"""Structure-aware type confusion for JSON bodies (hypothesis strategies for the hostile-input tests).

``confused(template)`` starts from a valid body and, at one to three places
chosen among every field and element of it (the root included), puts a value
of the wrong type, a wrong nesting, an out-of-range number, removes the field
or wraps it in a list. Every field of the template is therefore tried with
every kind of wrong value, while the rest of the body stays valid enough to
reach the code that reads that field.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

Path = tuple[Any, ...]

#: One server per module, a bounded run: enough to try every field with every kind of wrong value
#: (``HOSTILE_EXAMPLES=5000`` for a longer search).
HOSTILE = settings(
    max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "300")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_EDGE_INTS = [-1, 0, 1, -(2**31) - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 2**70, -(2**70)]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(_EDGE_INTS),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e308, -1e308, 0.5, -0.0, 1e-310]),
    st.text(max_size=12),
    st.sampled_from(["", "INT32", "FP32", "BYTES", "DT_INT32", "b64", "-1", "1e99", "\x00"]),
)
#: Wrong values: scalars of every JSON type, lists and objects of them, nesting gone wrong.
wrong_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["b64", "name", "x", "data", "shape", "tensors", ""]), inner, max_size=3
        ),
    ),
    max_leaves=8,
)


def paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Every place in a JSON document, the root first."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):  # the first few elements stand for the rest
            found += paths(item, (*prefix, index))
    return found


def _parent(doc: Any, path: Path) -> Any:
    for step in path[:-1]:
        try:
            doc = doc[step]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def _mutate(doc: Any, path: Path, action: str, value: Any) -> Any:
    if not path:
        return value if action == "replace" else [doc]
    parent, last = _parent(doc, path), path[-1]
    if not isinstance(parent, (dict, list)) or (isinstance(parent, list) and not isinstance(last, int)):
        return doc
    if isinstance(parent, list) and last >= len(parent):
        return doc
    if isinstance(parent, dict) and last not in parent:
        return doc
    if action == "delete":
        del parent[last]
    elif action == "wrap":
        parent[last] = [parent[last]]
    else:
        parent[last] = value
    return doc


@st.composite
def confused(draw: st.DrawFn, template: Any) -> Any:
    """``template`` with one to three fields given wrong types, removed or wrapped."""
    doc = copy.deepcopy(template)
    places = paths(template)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(places))
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "wrap"]))
        doc = _mutate(doc, path, action, draw(wrong_values))
    return doc


def post_json(port: int, path: str, doc: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """POST ``doc`` as JSON (NaN/Infinity tokens allowed); (status, body)."""
    body = json.dumps(doc).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def triton_error(status: int, body: bytes) -> None:
    """Below 500; a 4xx is Triton's ``{"error": "<message>"}``."""
    assert status < 500, body
    if status >= 400:
        doc = json.loads(body)
        assert list(doc) == ["error"] and isinstance(doc["error"], str) and doc["error"], body
