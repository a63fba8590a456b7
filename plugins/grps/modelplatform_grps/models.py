"""grps model selection: ``name-version`` split at the last ``-``."""

from __future__ import annotations

from modelplatform import InvalidArgument


def split_model(selector: str) -> tuple[str, str]:
    """``simple-1`` -> (simple, 1); a name alone (or a non-numeric tail) keeps the whole name."""
    name, dash, version = selector.rpartition("-")
    if dash and name and version.isdigit():
        return name, version
    return selector, ""


def choose_model(payload_model: str, query_model: str, default_model: str) -> tuple[str, str]:
    """Payload ``model`` first, then ``?model=``, then the configured default."""
    selector = payload_model or query_model or default_model
    if not selector:
        raise InvalidArgument(
            "no model given: set 'model' in the message or '?model=' "
            "(no default_model is configured in [plugins.grps])"
        )
    return split_model(selector)
