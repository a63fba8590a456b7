"""The contract between the oip-rest dialect and its codecs.

oip-rest always has its JSON codec. Another plugin may register a codec for
the ``oip-rest`` dialect under the name ``binary`` (the Binary Tensor Data
Extension does): the dialect hands it every request that carries an
``Inference-Header-Content-Length`` header, and every response for which
``wants_response`` is true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from modelplatform import Codec, InferenceRequest, InferenceResponse, Limits, ModelConfig

from ..regions import RegionReader

DIALECT = "oip-rest"
BINARY_CODEC = "binary"
HEADER_LENGTH = "inference-header-content-length"


@dataclass(frozen=True, slots=True)
class EncodedResponse:
    """An encoded body: one bytes object, or parts written in order (no join).

    Parts let large binary outputs go to the socket as views over the
    output arrays instead of being copied into one body.
    """

    body: bytes | list[bytes | memoryview]
    content_type: str
    headers: dict[str, str]

    @property
    def size(self) -> int:
        if isinstance(self.body, list):
            return sum(len(part) for part in self.body)
        return len(self.body)

    def joined(self) -> bytes:
        return b"".join(self.body) if isinstance(self.body, list) else self.body


class RestCodec(Codec):
    """Base class for oip-rest codecs."""

    dialect: ClassVar[str] = DIALECT

    def decode(
        self,
        body: bytes | bytearray,
        header_length: int,
        model: str,
        version: str,
        config: ModelConfig,
        limits: Limits,
        read_region: RegionReader | None = None,
    ) -> InferenceRequest:
        """Build the request; ``header_length`` is the JSON header's byte length.

        ``read_region`` resolves inputs naming a shared-memory region (pass it
        on to ``parse_request``).
        """
        raise NotImplementedError

    def wants_response(self, request: InferenceRequest) -> bool:
        """Whether this codec should encode the response to ``request``."""
        return False

    def encode(self, response: InferenceResponse, request: InferenceRequest) -> EncodedResponse:
        """Outputs written into a region (``regions.in_region``) go without data."""
        raise NotImplementedError
