"""Codecs: wire encodings a dialect can choose between, contributed by plugins.

A codec belongs to one dialect (``Codec.dialect``) and is looked up by name
(``Codec.name``). The dialect decides, per request, from its headers, which
codec to use (the OIP REST dialect picks ``binary`` when a request carries
``Inference-Header-Content-Length``). What a codec's methods look like is
the dialect's contract; the core only registers and freezes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from modelplatform.base.errors import PluginError


class Codec:
    """Base for codecs. Subclasses set the class attributes."""

    #: The dialect that uses this codec (e.g. ``oip-rest``).
    dialect: ClassVar[str]
    #: Name the dialect looks the codec up by (e.g. ``binary``).
    name: ClassVar[str]
    #: Server-metadata extension names this codec provides.
    extensions: ClassVar[tuple[str, ...]] = ()


class CodecRegistry:
    def __init__(self, codecs: Sequence[Codec]) -> None:
        self._codecs: dict[tuple[str, str], Codec] = {}
        for codec in codecs:
            key = (codec.dialect, codec.name)
            if key in self._codecs:
                raise PluginError(
                    f"codec '{codec.name}' for dialect '{codec.dialect}' is registered twice: "
                    f"{type(self._codecs[key]).__module__} and {type(codec).__module__}"
                )
            self._codecs[key] = codec

    def for_dialect(self, dialect: str) -> Mapping[str, Codec]:
        return {name: c for (d, name), c in self._codecs.items() if d == dialect}

    def get(self, dialect: str, name: str) -> Codec | None:
        return self._codecs.get((dialect, name))

    @property
    def extensions(self) -> tuple[str, ...]:
        return tuple(e for c in self._codecs.values() for e in c.extensions)
