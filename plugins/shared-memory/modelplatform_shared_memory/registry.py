"""The regions registered with one server process, system and CUDA in one namespace (as Triton).

Every operation runs on the event loop's thread, so no lock is needed.
Unregistering only forgets a region: requests already holding it keep their
mapping until they end (system.py says how the mapping is freed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import structlog

from modelplatform import AlreadyExists, InvalidArgument, NotFound

log = structlog.get_logger("modelplatform_shared_memory")

SYSTEM, CUDA = "system", "cuda"


class Region(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def byte_size(self) -> int: ...


class RegionRegistry:
    def __init__(self, max_regions: int) -> None:
        self.max_regions = max_regions
        self._regions: dict[str, tuple[str, Region]] = {}

    def check_free(self, name: str) -> None:
        """Refuse a name in use, or one region too many, before anything is opened."""
        if name in self._regions:
            raise AlreadyExists(f"shared memory region '{name}' already in manager")
        if len(self._regions) >= self.max_regions:
            raise InvalidArgument(
                f"shared memory region '{name}': {len(self._regions)} regions are "
                f"registered, the most this server allows (--max-shm-regions)"
            )

    def add(self, kind: str, region: Region) -> None:
        self.check_free(region.name)
        self._regions[region.name] = (kind, region)
        log.info("shm_region_registered", region=region.name, kind=kind, byte_size=region.byte_size)

    def find(self, name: str) -> Region | None:
        entry = self._regions.get(name)
        return entry[1] if entry is not None else None

    def of_kind(self, kind: str, name: str = "") -> Iterator[Region]:
        """Every region of ``kind``, or the one named (NotFound when it is not of that kind)."""
        if not name:
            yield from (region for k, region in self._regions.values() if k == kind)
            return
        entry = self._regions.get(name)
        if entry is None or entry[0] != kind:
            label = "cuda" if kind == CUDA else "system"
            raise NotFound(f"Unable to find {label} shared memory region: '{name}'")
        yield entry[1]

    def remove(self, kind: str, name: str = "") -> None:
        """Forget the region named (no error when unknown, as Triton), or every one of ``kind``."""
        names = [n for n, (k, _) in self._regions.items() if k == kind and (not name or n == name)]
        for each in names:
            del self._regions[each]
            log.info("shm_region_unregistered", region=each, kind=kind)
