"""Triton's response cache (the ``local`` cache): answers kept for identical requests.

One :class:`ResponseCache` per server (``--cache-config local,size=N``),
shared by every model whose config has ``response_cache { enable: true }``
(each version reaches it through its :class:`VersionCache`). An entry is
keyed by a 128-bit BLAKE2b hash of what decides the answer: the loaded
version (each load is a new one: a reloaded model never answers from its
predecessor's entries), every input's name, datatype, shape and bytes, the
names of the requested outputs, and the request parameters other than those
that only steer the transport or the queue (:data:`IGNORED_PARAMETERS`).
Only successful answers are kept.

The cache holds at most ``size`` bytes, as counted by :func:`_entry_bytes`
(the tensors' data and the objects around them); the least recently used
entries go first, and an answer larger than the whole cache is not kept.
Entries hold copies of the outputs, and a hit answers with fresh copies, so
nobody can change what the cache holds. Lookups and inserts are plain dict
operations on the event loop: no lock.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelplatform.base.inference import InferenceRequest, InferenceResponse, Tensor
from modelplatform.models.stats import ModelStats

#: Request parameters that do not change an answer: deadlines, queueing, the encoding.
IGNORED_PARAMETERS = frozenset({"timeout", "priority", "binary_data_output", "headers"})
#: What one entry costs beyond its tensors' data: the dict slot, the key, the objects.
_ENTRY_OVERHEAD = 800
#: What one cached tensor costs beyond its data: the Tensor, the array header, its name.
_TENSOR_OVERHEAD = 300
_loads = itertools.count(1)


@dataclass(frozen=True, slots=True)
class _Entry:
    outputs: tuple[Tensor, ...]
    parameters: dict[str, Any]
    size: int


class ResponseCache:
    """The server's bounded LRU of answers, all models together."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.used = 0
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: bytes, entry: _Entry) -> None:
        """Keep ``entry``, evicting the least recently used until it fits; one larger
        than the whole cache is not kept."""
        if entry.size > self.size:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.used -= old.size
        while self._entries and self.used + entry.size > self.size:
            _, evicted = self._entries.popitem(last=False)
            self.used -= evicted.size
        self._entries[key] = entry
        self.used += entry.size


class VersionCache:
    """One loaded version's use of the server's cache, counted in its statistics."""

    def __init__(self, cache: ResponseCache, stats: ModelStats) -> None:
        self._cache = cache
        self._stats = stats
        self._load = next(_loads).to_bytes(8, "little")

    def lookup(self, request: InferenceRequest) -> tuple[bytes, InferenceResponse | None, int]:
        """The request's key, its cached answer (None: a miss) and the lookup's nanoseconds.

        A hit is counted here; a miss by :meth:`insert` (Triton's miss time is the
        lookup and the insertion) or by :meth:`missed` when nothing is kept.
        """
        started = time.perf_counter_ns()
        key = self._key(request)
        entry = self._cache.get(key)
        if entry is None:
            return key, None, time.perf_counter_ns() - started
        response = InferenceResponse(
            request.model_name,
            "",
            [Tensor(t.name, t.datatype, t.shape, t.data.copy(), dict(t.parameters)) for t in entry.outputs],
            parameters=dict(entry.parameters),
        )
        self._stats.record_cache_hit(time.perf_counter_ns() - started)
        return key, response, 0

    def insert(self, key: bytes, response: InferenceResponse, lookup_ns: int) -> None:
        """Keep a copy of a successful answer; counts the miss (its lookup and this insertion)."""
        started = time.perf_counter_ns()
        outputs = tuple(_frozen_copy(t) for t in response.outputs)
        size = _ENTRY_OVERHEAD + sum(_tensor_bytes(t) for t in outputs)
        self._cache.put(key, _Entry(outputs, dict(response.parameters), size))
        self._stats.record_cache_miss(lookup_ns + time.perf_counter_ns() - started)

    def missed(self, lookup_ns: int) -> None:
        """A miss whose request failed: nothing to keep, the lookup still counts."""
        self._stats.record_cache_miss(lookup_ns)

    def _key(self, request: InferenceRequest) -> bytes:
        digest = hashlib.blake2b(self._load, digest_size=16)
        for tensor in sorted(request.inputs, key=lambda t: t.name):
            digest.update(f"\0{tensor.name}\0{tensor.datatype}\0{tensor.shape}\0".encode())
            _hash_data(digest, tensor.data)
        wanted = sorted(o.name for o in request.outputs) if request.outputs is not None else None
        digest.update(repr((wanted, _parameters(request.parameters))).encode())
        return digest.digest()


def _parameters(parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
    return sorted((k, repr(v)) for k, v in parameters.items() if k not in IGNORED_PARAMETERS)


def _hash_data(digest: Any, data: np.ndarray) -> None:
    if data.dtype == object:  # BYTES: each element with its length, so boundaries count
        for item in data.reshape(-1):
            raw = item if isinstance(item, bytes) else str(item).encode()
            digest.update(len(raw).to_bytes(8, "little"))
            digest.update(raw)
        return
    digest.update(np.ascontiguousarray(data).reshape(-1).view(np.uint8))


def _frozen_copy(tensor: Tensor) -> Tensor:
    data = np.array(tensor.data, copy=True)
    data.flags.writeable = False
    return Tensor(tensor.name, tensor.datatype, tensor.shape, data, dict(tensor.parameters))


def _tensor_bytes(tensor: Tensor) -> int:
    data = tensor.data
    size = _TENSOR_OVERHEAD + len(tensor.name) + data.nbytes
    if data.dtype == object:
        size += sum(sys.getsizeof(item) for item in data.reshape(-1))
    return size
