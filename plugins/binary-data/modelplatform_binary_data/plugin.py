"""Hook implementations of the ``binary-data`` plugin."""

from __future__ import annotations

from modelplatform import Codec, Settings, hookimpl

from .codec import BinaryCodec


@hookimpl
def register_codecs(settings: Settings) -> list[Codec]:
    return [BinaryCodec()]
