"""Writing TF Serving's JSON answers byte for byte (protocol-notes B5, B6).

Floats: ``%g`` (six significant digits) when that reads back as the same
float32/float64, else ``max_digits10`` digits; ``.0`` appended when the text
has neither ``.`` nor ``e``; bare ``NaN``, ``Infinity``, ``-Infinity``.
Layout follows rapidjson's PrettyWriter as TF Serving drives it: rows on one
line (``[3.5, 4.0, 5.5\\n    ]``), columnar output one value per line.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence

import numpy as np
import orjson

INDENT = "    "
_TOKENS = {"nan": "NaN", "-nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_DIGITS = {np.dtype(np.float32): "%.9g", np.dtype(np.float64): "%.17g"}


#: Up to this many values, floats are written one by one in Python: numpy's calls on a
#: tiny array cost more than the values (7 µs against 1.5 for three).
SMALL_FLOATS = 32
_FLOAT32 = struct.Struct("<f")


def float_texts(flat: np.ndarray) -> list[str]:
    """Each float of a 1-D float array as TF Serving writes it."""
    if flat.dtype == np.float16:
        flat = flat.astype(np.float32)
    if flat.size <= SMALL_FLOATS:
        return _few_float_texts(flat.tolist(), flat.dtype == np.float32, _DIGITS[flat.dtype])
    values = flat.tolist()
    texts = ["%g" % v for v in values]  # noqa: UP031 - C's %g, as TF Serving prints floats
    finite = np.isfinite(flat)
    with np.errstate(all="ignore"):
        back = np.array(texts, dtype=flat.dtype)
    full = _DIGITS[flat.dtype]
    for index in np.flatnonzero(finite & (back != flat)).tolist():
        texts[index] = full % values[index]
    if not finite.all():
        for index in np.flatnonzero(~finite).tolist():
            texts[index] = _TOKENS[texts[index]]
    return [t if ("." in t or "e" in t or t[-1] == "y" or t == "NaN") else t + ".0" for t in texts]


def _few_float_texts(values: list[float], single: bool, full: str) -> list[str]:
    """:func:`float_texts` value by value: the same reading back (a float32's text rounded
    to float32 as numpy rounds it: through a double), the same tokens and ``.0``."""
    texts = []
    for value in values:
        text = "%g" % value  # noqa: UP031 - C's %g, as TF Serving prints floats
        if not math.isfinite(value):
            texts.append(_TOKENS[text])
            continue
        if _read_back(text, single) != value:
            text = full % value
        texts.append(text if ("." in text or "e" in text) else text + ".0")
    return texts


def _read_back(text: str, single: bool) -> float:
    parsed = float(text)
    if not single:
        return parsed
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(parsed))[0]
    except OverflowError:  # past float32's range: numpy reads it as an infinity
        return math.copysign(math.inf, parsed)


def leaf_texts(array: np.ndarray, as_b64: bool) -> list[str]:
    """Every element of ``array`` (row-major) as JSON text."""
    flat = array.reshape(-1)
    kind = flat.dtype.kind
    if kind == "f":
        return float_texts(flat)
    if kind == "b":
        return ["true" if v else "false" for v in flat.tolist()]
    if kind in "iu":
        return [str(v) for v in flat.tolist()]
    return [_string(item, as_b64) for item in flat.tolist()]


def _string(item: object, as_b64: bool) -> str:
    data = item.encode() if isinstance(item, str) else bytes(item)  # type: ignore[call-overload]  # a BYTES element: bytes or a buffer
    if not as_b64:
        try:
            return orjson.dumps(data.decode("utf-8")).decode()
        except UnicodeDecodeError:
            pass  # not text: carried as base64 rather than mangled (documented)
    return '{"b64": "' + base64.b64encode(data).decode() + '"}'


def single_line(leaves: Sequence[str], shape: Sequence[int]) -> str:
    """Nested arrays on one line: ``[[1, 2], [3, 4]]``."""
    if not shape:
        return leaves[0]
    if len(shape) == 1:
        return "[" + ", ".join(leaves) + "]"
    step = len(leaves) // shape[0] if shape[0] else 0
    rows = (single_line(leaves[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0]))
    return "[" + ", ".join(rows) + "]"


def multi_line(leaves: Sequence[str], shape: Sequence[int], level: int) -> str:
    """Nested arrays with one element per line, indented as rapidjson does."""
    if not shape:
        return leaves[0]
    if shape[0] == 0:
        return "[]"
    step = len(leaves) // shape[0]
    inner = "\n" + INDENT * (level + 1)
    rows = (multi_line(leaves[i * step : (i + 1) * step], shape[1:], level + 1) for i in range(shape[0]))
    return "[" + ",".join(inner + row for row in rows) + "\n" + INDENT * level + "]"


def document(key: str, value: str) -> str:
    return "{\n" + INDENT + orjson.dumps(key).decode() + ": " + value + "\n}"


def key_text(name: str) -> str:
    return orjson.dumps(name).decode()


def error_body(message: str) -> str:
    return '{ "error": ' + orjson.dumps(message).decode() + " }"
