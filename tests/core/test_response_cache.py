"""The response cache itself: keys, LRU order, its size bound measured with tracemalloc, copies."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from modelplatform import InferenceRequest, InferenceResponse, InvalidArgument, RequestedOutput, Tensor
from modelplatform.base.cache_config import cache_size
from modelplatform.base.config_reader import from_proto, parse_json, parse_text
from modelplatform.models.response_cache import ResponseCache, VersionCache
from modelplatform.models.stats import ModelStats


def _request(values, datatype: str = "FP32", outputs=None, **parameters) -> InferenceRequest:
    array = np.asarray(values, dtype=np.float32 if datatype == "FP32" else np.int32)
    return InferenceRequest(
        "m", [Tensor("IN", datatype, array.shape, array)], parameters=parameters, outputs=outputs
    )


def _response(array: np.ndarray) -> InferenceResponse:
    return InferenceResponse("m", "1", [Tensor.from_array("OUT", array)])


def _cache(size: int = 1 << 20) -> tuple[ResponseCache, VersionCache, ModelStats]:
    stats = ModelStats("m", "1")
    shared = ResponseCache(size)
    return shared, VersionCache(shared, stats), stats


def _key(version: VersionCache, request: InferenceRequest) -> bytes:
    return version.lookup(request)[0]


def test_what_decides_the_answer_is_in_the_key_and_nothing_else():
    _, version, _ = _cache()
    base = _key(version, _request([1.0, 2.0]))
    assert _key(version, _request([1.0, 2.0])) == base
    assert _key(version, _request([1.0, 2.0], timeout=5, priority=1)) == base  # queueing only
    assert _key(version, _request([1.0, 3.0])) != base  # bytes
    assert _key(version, _request([[1.0, 2.0]])) != base  # shape
    assert _key(version, _request([1, 2], "INT32")) != base  # datatype
    assert _key(version, _request([1.0, 2.0], custom="x")) != base  # a parameter the model may read
    assert _key(version, _request([1.0, 2.0], outputs=[RequestedOutput("OUT")])) != base
    _, other_load, _ = _cache()
    assert _key(other_load, _request([1.0, 2.0])) != base  # another load of the version


def test_bytes_elements_keep_their_boundaries():
    _, version, _ = _cache()
    one = InferenceRequest("m", [Tensor("IN", "BYTES", (2,), np.array([b"ab", b"c"], dtype=object))])
    two = InferenceRequest("m", [Tensor("IN", "BYTES", (2,), np.array([b"a", b"bc"], dtype=object))])
    assert _key(version, one) != _key(version, two)


def test_hit_answers_a_copy_and_counts():
    _, version, stats = _cache()
    request = _request([1.0])
    key, found, lookup_ns = version.lookup(request)
    assert found is None
    version.insert(key, _response(np.array([5.0, 6.0], dtype=np.float32)), lookup_ns)
    hit = version.lookup(request)[1]
    assert hit is not None
    hit.outputs[0].data[0] = 99.0  # the client's copy: the cache keeps its own
    again = version.lookup(request)[1]
    assert again is not None and again.outputs[0].data.tolist() == [5.0, 6.0]
    assert (stats.durations["cache_hit"].count, stats.durations["cache_miss"].count) == (2, 1)


def test_least_recently_used_goes_first():
    shared, version, _ = _cache(size=3 * 5500)
    keys = []
    for value in range(3):
        key, _, lookup_ns = version.lookup(_request([float(value)]))
        version.insert(key, _response(np.zeros(1000, dtype=np.float32)), lookup_ns)
        keys.append(key)
    assert version.lookup(_request([0.0]))[1] is not None  # 0 is now the most recent
    key, _, lookup_ns = version.lookup(_request([3.0]))
    version.insert(key, _response(np.zeros(1000, dtype=np.float32)), lookup_ns)
    assert version.lookup(_request([1.0]))[1] is None  # 1 was the least recently used
    assert version.lookup(_request([0.0]))[1] is not None
    assert len(shared) == 3 and shared.used <= shared.size


def test_an_answer_larger_than_the_cache_is_not_kept():
    shared, version, _ = _cache(size=1000)
    key, _, lookup_ns = version.lookup(_request([1.0]))
    version.insert(key, _response(np.zeros(1000, dtype=np.float32)), lookup_ns)
    assert len(shared) == 0 and shared.used == 0


@pytest.mark.parametrize(("floats", "strings"), [(1024, 8), (1024, 0), (1, 2)])
def test_memory_stays_under_the_size_under_a_flood_of_distinct_answers(floats, strings):
    size = 512 * 1024
    shared, version, _ = _cache(size)
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for value in range(3000):  # 3000 distinct answers offered to a 512 KiB cache
            request = _request([float(value)])
            key, _, lookup_ns = version.lookup(request)
            outputs = [Tensor.from_array("OUT", np.full(floats, value, np.float32))]
            if strings:
                outputs.append(
                    Tensor("S", "BYTES", (strings,), np.array([b"x" * 100] * strings, dtype=object))
                )
            version.insert(key, InferenceResponse("m", "1", outputs), lookup_ns)
            del request, outputs
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert shared.used <= size
    assert held <= size  # what the cache counts covers what it really holds
    assert held >= size * 0.5  # and it is not wildly over-counted either


@pytest.mark.parametrize(
    ("values", "size"),
    [((), 0), (("local,size=1048576",), 1048576), (("local,size=10", "local,size=20"), 20)],
)
def test_cache_config_gives_the_size(values, size):
    assert cache_size(values) == size


def test_decoupled_model_with_a_cache_is_refused():
    text = 'name: "d" backend: "python" model_transaction_policy { decoupled: true } response_cache { enable: true }'
    with pytest.raises(
        InvalidArgument, match="Response Cache does not currently support model 'd' with 'decoupled'"
    ):
        from_proto(parse_text(text))
    assert from_proto(
        parse_json({"name": "c", "backend": "python", "response_cache": {"enable": True}})
    ).response_cache


def test_sequence_model_with_a_cache_is_refused():
    text = 'name: "s" backend: "python" sequence_batching { } response_cache { enable: true }'
    proto = parse_text(text)
    if "sequence_batching" not in proto.DESCRIPTOR.fields_by_name:
        pytest.skip("this build's model_config.proto has no sequence_batching (the sequence batcher adds it)")
    with pytest.raises(InvalidArgument, match="with sequence batching scheduler"):
        from_proto(proto)
