"""Reading a request body's fields: each checked by type and range, named in every refusal.

``null`` is the same as leaving a field out (the SDKs and LangChain send
nulls). A field OpenAI defines that this server does not implement is
refused by name unless it carries OpenAI's default value (which changes
nothing); a field OpenAI does not define is refused as OpenAI refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from modelplatform import InvalidArgument

from .errors import FieldError, UnknownParameter, UnsupportedParameter

#: An unsupported field with no value that changes nothing: any value but null is refused.
NO_NEUTRAL_VALUE = object()


def load_object(body: bytes | bytearray) -> dict[str, Any]:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"We could not parse the JSON body of your request: {error}") from None
    if not isinstance(doc, dict):
        raise InvalidArgument("The request body must be a JSON object")
    return doc


def refuse_others(doc: Mapping[str, Any], known: frozenset[str], unsupported: Mapping[str, Any]) -> None:
    """Unknown fields and unsupported ones not at their default: the first such field, by name."""
    for name, value in doc.items():
        if name in known or value is None:
            continue
        if name not in unsupported:
            raise UnknownParameter(name)
        if value != unsupported[name]:
            raise UnsupportedParameter(name)


def text(doc: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    value = doc.get(name)
    if value is None:
        if required:
            raise FieldError(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        return None
    if not isinstance(value, str):
        raise _wrong_type(name, "a string", value)
    return value


def flag(doc: Mapping[str, Any], name: str) -> bool:
    value = doc.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _wrong_type(name, "a boolean", value)
    return value


def integer(doc: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(name, "an integer", value)
    if not low <= value <= high:
        raise FieldError(f"Invalid '{name}': {value} is not between {low} and {high}.", name, "invalid_value")
    return value


def number(doc: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong_type(name, "a number", value)
    if not low <= value <= high:
        raise FieldError(f"Invalid '{name}': {value} is not between {low} and {high}.", name, "invalid_value")
    return float(value)


def texts(doc: Mapping[str, Any], name: str, most: int, required: bool = False) -> list[str] | None:
    """A string or a non-empty list of at most ``most`` strings, as a list."""
    value = doc.get(name)
    if value is None:
        text(doc, name, required)  # raises when required
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise _wrong_type(name, "a string or a non-empty list of strings", value)
    if len(value) > most:
        raise FieldError(f"Invalid '{name}': at most {most} items, got {len(value)}.", name, "invalid_value")
    return value


def _wrong_type(name: str, expected: str, value: Any) -> FieldError:
    return FieldError(f"Invalid type for '{name}': expected {expected}, got {_json_type(value)}.", name,
                      "invalid_type")  # fmt: skip


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object"}  # fmt: skip
    return names.get(type(value), "null")
