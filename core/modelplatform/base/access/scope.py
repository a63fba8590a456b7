"""The model check a call's handler owes when the gate could not name the model.

Some inference calls name their model only in the body (grps predict, its
gRPC ``Predict`` and ``PredictStreaming``) or through a route a model
declared (grps custom routes), so the gate cannot check a key limited to
models before the handler runs. It lets such a call in with a
:class:`ModelScope`: the first DataPlane call the handler makes checks the
model it names (:func:`check_model_access`), before anything else, and a
handler that runs several models (the grps DAG) checks each itself. The
steps an allowed model runs in turn (ensemble steps, BLS calls) are not
checked again: the key was allowed the model the client named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from modelplatform.base.access.keys import ApiKey
from modelplatform.base.errors import PermissionDenied


@dataclass(slots=True)
class ModelScope:
    """The key of a call whose model is still to be checked."""

    key: ApiKey
    #: Set once a model was checked: later DataPlane calls of the handler are its own work.
    checked: bool = False


_scope: ContextVar[ModelScope | None] = ContextVar("modelplatform_model_scope", default=None)


@contextlib.contextmanager
def model_scope(key: ApiKey | None) -> Iterator[None]:
    """Within: the handler's model is checked against ``key`` (nothing to do when None)."""
    if key is None:
        yield
        return
    token = _scope.set(ModelScope(key))
    try:
        yield
    finally:
        _scope.reset(token)


def check_model_access(model: str) -> None:
    """Raise PermissionDenied when the call's API key may not use ``model``.

    A no-op outside a scope (no keys, a key without ``models``, or a call whose
    model the gate already checked), so handlers may call it unconditionally.
    """
    scope = _scope.get()
    if scope is None:
        return
    if not scope.key.allows_model(model):
        raise PermissionDenied(f"API key '{scope.key.name}' may not use model '{model}'")
    scope.checked = True


def check_first_model(model: str) -> None:
    """The DataPlane's check: ``model`` when the call's model is not checked yet."""
    scope = _scope.get()
    if scope is not None and not scope.checked:
        check_model_access(model)
