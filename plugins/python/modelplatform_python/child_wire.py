"""What crosses the pipe between the server and a process instance's child.

Messages to the child: ``("infer", inputs)`` and ``("unload",)``. Every reply,
the one after load included, is ``("ok", value)`` or
``("error", type_name, message, platform_class)``. Exceptions travel as type
name and text, never pickled: a class defined in ``model.py`` cannot be
unpickled in the server process, which never imports the user's file.
A reply sent after the model changed its custom metrics is wrapped as
``("metrics", snapshot, reply)`` (:class:`MetricsOutbox`): the server shows
the child's values as its own (:func:`unwrapped`).
``platform_class`` names the public modelplatform error class the exception
is (or derives from), so a user's ``InvalidArgument`` keeps its status code.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any

import numpy as np

import modelplatform
from modelplatform import ModelPlatformError
from modelplatform.statistics import custom_metrics

#: Protocol 5 writes numpy arrays' memory straight into the message (no extra copy).
PICKLE_PROTOCOL = 5

Reply = tuple[Any, ...]
OK: Reply = ("ok", None)
#: The message that asks the child to unload its model and exit.
UNLOAD = ("unload",)
#: The first item of a reply that carries the child's custom metrics (MetricsOutbox).
METRICS = "metrics"


class MetricsOutbox:
    """The child's side of its custom metrics (``pb_utils.MetricFamily``): a reply sent after
    they changed carries the child's whole snapshot, ``("metrics", snapshot, reply)``."""

    def __init__(self) -> None:
        self._sent = 0

    def wrapped(self, reply: Reply) -> Reply:
        registry = custom_metrics()
        changes = registry.changes
        if changes == self._sent:
            return reply
        self._sent = changes
        return (METRICS, tuple(registry.snapshot()), reply)


def unwrapped(message: Reply, source: str) -> Reply:
    """The reply inside ``message``; the child's metrics it carries are shown as ``source``'s."""
    if message[0] != METRICS:
        return message
    custom_metrics().publish(source, message[1])
    return tuple(message[2])


def infer_message(inputs: dict[str, np.ndarray]) -> bytes:
    """The message that asks the child for ``infer(inputs)``, pickled once."""
    return pickle.dumps(("infer", inputs), protocol=PICKLE_PROTOCOL)


class ChildException(Exception):
    """Base of the stand-ins for exceptions that user code raised in a child."""


def error_reply(error: BaseException) -> Reply:
    """The reply that reports ``error`` to the server."""
    return ("error", type(error).__name__, str(error), _public_class(type(error)))


def rebuilt(reply: Reply) -> Exception:
    """The exception a child reported: a modelplatform error keeps its class (and status)."""
    _, type_name, message, platform = reply
    cls = getattr(modelplatform, platform) if platform in modelplatform.__all__ else None
    if isinstance(cls, type) and issubclass(cls, ModelPlatformError):
        error = cls.__new__(cls)
        ModelPlatformError.__init__(error, message)  # subclasses' own constructors take data
        return error
    return _stand_in(type_name)(message)


def _public_class(cls: type) -> str | None:
    """The first class in ``cls``'s MRO that ``modelplatform`` exports, by name."""
    return next((c.__name__ for c in cls.__mro__ if _exported(c)), None)


def _exported(cls: type) -> bool:
    name = cls.__name__
    return name in modelplatform.__all__ and getattr(modelplatform, name) is cls


@functools.lru_cache(maxsize=256)
def _stand_in(type_name: str) -> type[ChildException]:
    # ModelExecutionError and load failure reasons name the exception's type; a
    # class of the same name keeps them word for word as in the thread mode
    # (the real class may exist only in the child's model.py).
    return type(type_name, (ChildException,), {})
