"""Regions on real POSIX shared-memory objects: keys, windows, shrinking, and no copies.

The codec is driven as both oip transports drive it (REST ``parse_request``
and gRPC ``decode_request`` with its ``read_input``, then ``bind_outputs`` /
``place``), on a real mapped object: tracemalloc shows neither side
allocates the tensor again.
"""

from __future__ import annotations

import mmap
import os
import tracemalloc
import uuid

import numpy as np
import pytest

from modelplatform import (
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    RequestedOutput,
    Tensor,
)
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.rest.json_codec import parse_request
from modelplatform_oip.rpc.tensors import decode_request, encode_response
from modelplatform_shared_memory.codec import SharedMemoryCodec
from modelplatform_shared_memory.registry import SYSTEM, RegionRegistry
from modelplatform_shared_memory.system import check_key, open_region

MiB = 1024 * 1024
LIMITS = Limits(max_tensor_elements=64 * MiB, max_bytes_element=MiB)


@pytest.fixture
def shm_object():
    """A fresh shared-memory object of the size asked for; unlinked after the test."""
    made = []

    def make(size: int) -> str:
        key = f"/mp_unit_{uuid.uuid4().hex[:12]}"
        descriptor = os.open(f"/dev/shm{key}", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.ftruncate(descriptor, size)
        os.close(descriptor)
        made.append(key)
        return key

    yield make
    for key in made:
        os.unlink(f"/dev/shm{key}")


@pytest.mark.parametrize("key", ["plain", "/a/b", "/", "/.", "/..", "/modelplatform", "/modelplatform-x",
                                 "/" + "k" * 256, "/nul\x00"])  # fmt: skip
def test_keys_that_are_not_plain_posix_names_are_refused(key):
    with pytest.raises(InvalidArgument, match="region 'r'"):
        check_key("r", key)


def test_a_window_at_an_unaligned_offset(shm_object):
    key = shm_object(3 * mmap.ALLOCATIONGRANULARITY)
    with open(f"/dev/shm{key}", "r+b") as raw:
        raw.seek(5000)
        raw.write(b"hello")
    region = open_region("r", key, 5000, 100)
    assert bytes(region.view(0, 5, "input 'x'")) == b"hello"
    with pytest.raises(InvalidArgument, match="outside shared memory region 'r'"):
        region.view(96, 5, "input 'x'")


def test_an_object_that_shrank_is_refused_not_faulted(shm_object):
    key = shm_object(8192)
    region = open_region("r", key, 0, 8192)
    os.truncate(f"/dev/shm{key}", 100)
    with pytest.raises(InvalidArgument, match="shrank"):
        region.view(4096, 16, "input 'x'")


def test_a_link_is_not_followed(shm_object, tmp_path):
    target = tmp_path / "secret"
    target.write_bytes(b"x" * 64)
    link = f"mp_unit_link_{uuid.uuid4().hex[:8]}"
    os.symlink(target, f"/dev/shm/{link}")
    try:
        with pytest.raises(InvalidArgument, match="Unable to open shared memory region"):
            open_region("r", f"/{link}", 0, 16)
    finally:
        os.unlink(f"/dev/shm/{link}")


def registered(shm_object, size: int, name: str) -> tuple[RegionRegistry, mmap.mmap]:
    registry = RegionRegistry(4)
    key = shm_object(size)
    registry.add(SYSTEM, open_region(name, key, 0, size))
    descriptor = os.open(f"/dev/shm{key}", os.O_RDWR)
    client_view = mmap.mmap(descriptor, size)
    os.close(descriptor)
    return registry, client_view


def test_rest_and_grpc_read_a_16mib_input_as_a_view(shm_object):
    size = 16 * MiB
    registry, client = registered(shm_object, size, "in")
    np.frombuffer(client, np.float32)[:] = 1.5
    codec = SharedMemoryCodec(registry)
    parameters = {"shared_memory_region": "in", "shared_memory_byte_size": size}
    doc = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [size // 4], "parameters": parameters}]}
    message = pb.ModelInferRequest(model_name="m")
    item = message.inputs.add(name="INPUT0", datatype="FP32", shape=[size // 4])
    item.parameters["shared_memory_region"].string_param = "in"
    item.parameters["shared_memory_byte_size"].int64_param = size
    tracemalloc.start()
    try:
        rest = parse_request(doc, "m", "", LIMITS, read_region=codec.read_input).inputs[0].data
        rpc = decode_request(message, LIMITS, codec.read_input).inputs[0].data
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB, f"decoding traced {peak / MiB:.1f} MiB"
    assert rest[0] == 1.5 and rpc[0] == 1.5 and not rest.flags.owndata and not rpc.flags.owndata
    np.frombuffer(client, np.float32)[0] = 7.0  # the client writes: both arrays see its memory
    assert rest[0] == 7.0 and rpc[0] == 7.0
    del rest, rpc
    client.close()


def test_an_output_is_written_once_into_its_region_and_left_out_of_the_answer(shm_object):
    size = 16 * MiB
    registry, client = registered(shm_object, size, "out")
    codec = SharedMemoryCodec(registry)
    wanted = RequestedOutput("OUTPUT0", {"shared_memory_region": "out", "shared_memory_byte_size": size})
    request = InferenceRequest("m", [], outputs=[wanted])
    result = np.full(size // 4, 2.5, np.float32)
    response = InferenceResponse("m", "1", [Tensor("OUTPUT0", "FP32", result.shape, result)])
    tracemalloc.start()
    try:
        placement = codec.bind_outputs(request)
        assert placement is not None
        placed = placement.place(response)
        encoded = encode_response(placed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB, f"placing traced {peak / MiB:.1f} MiB"
    assert np.array_equal(np.frombuffer(client, np.float32), result)
    assert list(encoded.raw_output_contents) == [b""] and list(encoded.outputs[0].shape) == [size // 4]
    del placement, placed
    client.close()


def test_an_output_region_too_small_is_refused_after_inference(shm_object):
    registry, client = registered(shm_object, 4096, "small")
    codec = SharedMemoryCodec(registry)
    wanted = RequestedOutput("OUTPUT0", {"shared_memory_region": "small", "shared_memory_byte_size": 16})
    placement = codec.bind_outputs(InferenceRequest("m", [], outputs=[wanted]))
    response = InferenceResponse("m", "1", [Tensor.from_array("OUTPUT0", np.zeros(8, np.float32))])
    with pytest.raises(InvalidArgument, match=r"\(16 bytes\) should be at least 32 bytes"):
        placement.place(response)
    client.close()


def test_unregistering_keeps_the_mapping_of_a_view_in_use_then_frees_it(shm_object):
    size = 1 * MiB
    registry, client = registered(shm_object, size, "r")
    client.close()  # only the server's mapping is left in this process
    codec = SharedMemoryCodec(registry)
    view = codec.read_input(
        "x", "UINT8", [size], {"shared_memory_region": "r", "shared_memory_byte_size": size}, LIMITS
    )
    key = next(iter(registry.of_kind(SYSTEM))).key  # type: ignore[attr-defined]  # a SYSTEM region has a key
    registry.remove(SYSTEM, "r")
    assert registry.find("r") is None
    assert _mapped(key) and view[0] == 0  # still readable: the request holds the mapping
    del view
    assert not _mapped(key)


def _mapped(key: str) -> bool:
    with open("/proc/self/maps") as maps:
        return any(f"/dev/shm{key}" in line for line in maps)
