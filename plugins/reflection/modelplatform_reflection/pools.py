"""Descriptors from several pools, asked in order, as one pool to the reflection servicer.

grpcio-reflection's servicer reads one descriptor pool; ours are several:
protobuf's default one (OIP, grps, health), TF Serving's private one
(``GrpcService.descriptor_pool``) and the one holding the v1 reflection file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class PoolChain:
    """The lookups grpcio-reflection makes, each answered by the first pool that knows the name."""

    def __init__(self, pools: Sequence[Any]) -> None:
        self.pools = tuple(pools)

    def _first(self, find: Callable[[Any], T]) -> T:
        for pool in self.pools:
            try:
                return find(pool)
            except KeyError:
                continue
        raise KeyError("not in any descriptor pool")

    def FindFileByName(self, name: str) -> Any:
        return self._first(lambda pool: pool.FindFileByName(name))

    def FindFileContainingSymbol(self, symbol: str) -> Any:
        return self._first(lambda pool: pool.FindFileContainingSymbol(symbol))

    def FindMessageTypeByName(self, name: str) -> Any:
        return self._first(lambda pool: pool.FindMessageTypeByName(name))

    def FindExtensionByNumber(self, message: Any, number: int) -> Any:
        return self._first(lambda pool: pool.FindExtensionByNumber(message, number))

    def FindAllExtensions(self, message: Any) -> Any:
        return self._first(lambda pool: pool.FindAllExtensions(message))
