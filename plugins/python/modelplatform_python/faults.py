"""What a request gets when its process instance failed under it.

A child that crashed, hung past its execute timeout or grew past its memory
bound takes the calls it held down with it; they fail with
:class:`InstanceFailed`, an ``Internal`` error (HTTP 500, gRPC ``INTERNAL``),
as Triton fails the requests of a python-backend stub that is not healthy.
Unlike a user exception, such a failure is not retried request by request
(infer_runner.py): a hang would cost one timeout per request of the batch.
"""

from __future__ import annotations

from modelplatform import Internal


class InstanceFailed(Internal):
    """The instance's process failed during (or while restarting for) the call."""

    def __init__(self, model: str, instance: int, reason: str) -> None:
        super().__init__(f"model '{model}' instance {instance}: {reason}")
        self.model, self.instance, self.reason = model, instance, reason


class ChildFault(Exception):
    """Raised on the instance's thread when a child must be killed: why, in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
