"""One exception tree for the whole platform.

Every error carries a neutral :class:`ErrorCode`; only the protocol edges
translate it (each dialect keeps one table to HTTP status / gRPC status /
its own status shape). Constructors take data and build the message, so every
dialect says the same words::

    ModelPlatformError
    ├── InvalidArgument            INVALID_ARGUMENT
    │   ├── InvalidInput           (names model, tensor, expected, received)
    │   └── LimitExceeded          (a client-controlled size over its setting)
    │       └── PayloadTooLarge    (request body; HTTP 413)
    ├── NotFound                   NOT_FOUND
    │   └── ModelNotFound          (unknown, or no READY version)
    ├── Unavailable                UNAVAILABLE
    │   ├── ModelNotReady          (first load still running)
    │   ├── QueueFull
    │   └── RequestTimedOut        (the ``timeout`` parameter expired; Triton's answer)
    ├── Unsupported                UNSUPPORTED
    │   └── DecoupledModel         (a unary call to a decoupled model)
    ├── AlreadyExists              ALREADY_EXISTS
    ├── PermissionDenied           PERMISSION_DENIED (restricted APIs)
    ├── Cancelled                  CANCELLED
    ├── DeadlineExceeded           DEADLINE_EXCEEDED
    ├── Internal                   INTERNAL
    │   └── ModelExecutionError    (user model code raised)
    └── PluginError                INTERNAL (raised at start-up only)
"""

from __future__ import annotations

import enum


class ErrorCode(enum.Enum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    UNAVAILABLE = "UNAVAILABLE"
    UNSUPPORTED = "UNSUPPORTED"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    CANCELLED = "CANCELLED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    INTERNAL = "INTERNAL"


class ModelPlatformError(Exception):
    """Base of every error a client or operator may see."""

    code: ErrorCode = ErrorCode.INTERNAL
    #: Set once a ``request_failed`` event was written for it, so edges log the rest only.
    logged: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def naming_model(self, model: str) -> ModelPlatformError:
        """This error with the model named first (once): for errors found while decoding."""
        if not self.message.startswith("model '"):
            self.message = f"model '{model}', {self.message}"
            self.args = (self.message,)
        return self


class InvalidArgument(ModelPlatformError):
    code = ErrorCode.INVALID_ARGUMENT


class InvalidInput(InvalidArgument):
    """A request tensor does not match the model's declaration."""

    def __init__(self, model: str, tensor: str, expected: str, received: str) -> None:
        super().__init__(f"model '{model}', input '{tensor}': expected {expected}, got {received}")
        self.model, self.tensor = model, tensor


class LimitExceeded(InvalidArgument):
    """A size the client controls is over the configured limit."""

    def __init__(self, what: str, size: int, limit: int, at_least: bool = False) -> None:
        # ``at_least``: the size was refused part-way through computing it.
        amount = f"at least {size}" if at_least else str(size)
        super().__init__(f"{what} is {amount}, over the limit of {limit}")
        self.size, self.limit = size, limit


class PayloadTooLarge(LimitExceeded):
    code = ErrorCode.RESOURCE_EXHAUSTED

    def __init__(self, size: int, limit: int) -> None:
        super().__init__("request body size in bytes", size, limit)


class NotFound(ModelPlatformError):
    code = ErrorCode.NOT_FOUND


class ModelNotFound(NotFound):
    """No READY version answers: the name is unknown, or nothing of it is loaded.

    Triton's words: an unknown name ``is not found``; a known model with no
    READY version (never loaded, unloaded, failed to load) ``has no available
    versions``; a version that is not serving ``version N is not found``. A
    failed load's reason follows the words, after a colon.
    """

    def __init__(self, name: str, version: str = "", reason: str = "", *, known: bool = False) -> None:
        if version:
            what = f"'{name}' version {version} is not found"
        elif known:
            what = f"'{name}' has no available versions"
        else:
            what = f"'{name}' is not found"
        detail = f": {reason}" if reason else ""
        super().__init__(f"Request for unknown model: {what}{detail}")
        self.name, self.version = name, version


class Unavailable(ModelPlatformError):
    code = ErrorCode.UNAVAILABLE


class ModelNotReady(Unavailable):
    """Transient: the model's first load is still running, so nothing of it is READY yet.

    Only this; a model that is not loaded for any other reason is ModelNotFound.
    """

    def __init__(self, name: str, version: str = "") -> None:
        if version:  # Triton's words for a version it holds that is not READY
            message = f"Request for unknown model: '{name}' version {version} is not at ready state"
        else:
            message = f"model '{name}' has no available versions yet: its first load is running"
        super().__init__(message)
        self.name, self.version = name, version


class QueueFull(Unavailable):
    def __init__(self, name: str, size: int) -> None:
        super().__init__(f"model '{name}': request queue is full ({size} waiting)")


class RequestTimedOut(Unavailable):
    """The client's ``timeout`` parameter expired before the request ran (Triton's words)."""

    def __init__(self) -> None:
        super().__init__("Request timeout expired")


class Unsupported(ModelPlatformError):
    code = ErrorCode.UNSUPPORTED


class DecoupledModel(Unsupported):
    """A unary call reached a model with the decoupled transaction policy.

    Such a model may answer a request any number of times, so only a streaming
    call can receive its responses (Triton refuses the same way). ``endpoint``
    names the call in Triton's words; dialects name theirs with
    :meth:`at_endpoint` (``ModelInfer RPC``, ``HTTP end point``).
    """

    def __init__(self, name: str, endpoint: str = "") -> None:
        super().__init__(self._words(endpoint or f"A unary call to model '{name}'"))
        self.name = name

    def at_endpoint(self, endpoint: str) -> DecoupledModel:
        """This error naming ``endpoint`` instead (the same object: still logged once)."""
        self.message = self._words(endpoint)
        self.args = (self.message,)
        return self

    @staticmethod
    def _words(endpoint: str) -> str:
        return f"{endpoint} doesn't support models with decoupled transaction policy"


class AlreadyExists(ModelPlatformError):
    code = ErrorCode.ALREADY_EXISTS


class PermissionDenied(ModelPlatformError):
    """Refused for who the client is or what the operator allows (Triton's restricted APIs)."""

    code = ErrorCode.PERMISSION_DENIED


class Cancelled(ModelPlatformError):
    code = ErrorCode.CANCELLED


class DeadlineExceeded(ModelPlatformError):
    code = ErrorCode.DEADLINE_EXCEEDED


class Internal(ModelPlatformError):
    code = ErrorCode.INTERNAL


class ModelExecutionError(Internal):
    """User model code raised; the message keeps the type and text, not a traceback."""

    def __init__(self, model: str, error: BaseException) -> None:
        super().__init__(f"model '{model}' failed: {type(error).__name__}: {error}")
        self.model = model


class PluginError(ModelPlatformError):
    """A plugin is misdeclared or collides with another; raised at start-up only."""
