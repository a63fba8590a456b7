import numpy as np
import pytest

from modelplatform import InvalidArgument
from modelplatform.base.dtypes import ALIGN_COPY_BYTES
from modelplatform.datatypes import (
    CONFIG_TO_DATATYPE,
    DATATYPES,
    aligned,
    decode_bytes,
    element_count,
    element_size,
    encode_bytes,
    from_buffer,
    numpy_dtype,
)


def test_every_oip_datatype_is_mapped():
    expected = {
        "BOOL",
        "UINT8",
        "UINT16",
        "UINT32",
        "UINT64",
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "FP16",
        "FP32",
        "FP64",
        "BF16",
        "BYTES",
    }
    assert DATATYPES == expected
    assert set(CONFIG_TO_DATATYPE.values()) == expected
    assert CONFIG_TO_DATATYPE["TYPE_STRING"] == "BYTES"
    assert element_size("FP16") == 2 and element_size("BF16") == 2 and element_size("BYTES") == 0
    assert numpy_dtype("INT64") == np.int64


def test_bytes_round_trip_with_nul_and_non_utf8():
    values = np.array([b"", b"a\x00b", b"\xff\xfe", b"text"], dtype=object)
    wire = encode_bytes(values)
    assert wire[:4] == b"\x00\x00\x00\x00"
    assert list(decode_bytes(wire, 4)) == list(values)


@pytest.mark.parametrize(
    ("wire", "count", "fragment"),
    [
        (b"\x05\x00\x00\x00ab", 1, "runs past the end"),
        (b"\x01\x00", 1, "ends after 0 of 1"),
        (b"\x01\x00\x00\x00ab", 1, "trailing"),
        (b"\x09\x00\x00\x00123456789", 1, "over the limit"),
    ],
)
def test_malformed_bytes_are_refused(wire, count, fragment):
    with pytest.raises(InvalidArgument, match=fragment):
        decode_bytes(wire, count, max_element_bytes=8)


def test_from_buffer_is_zero_copy_and_checks_size():
    body = bytearray(np.arange(4, dtype=np.float32).tobytes())
    array = from_buffer(memoryview(body), "FP32", 4)
    assert np.shares_memory(array, np.frombuffer(body, dtype=np.uint8))
    with pytest.raises(InvalidArgument, match="expected 12"):
        from_buffer(body, "FP32", 3)


def test_a_small_misaligned_input_is_copied_to_aligned_read_only_memory():
    values = np.arange(4, dtype=np.int32)
    body = b"xy" + values.tobytes()  # after 2 bytes of header: misaligned for INT32
    array = from_buffer(memoryview(body)[2:], "INT32", 4)
    assert array.flags.aligned and not array.flags.writeable
    assert (array == values).all() and not np.shares_memory(array, np.frombuffer(body, np.uint8))
    view = np.frombuffer(body, np.int32, 4, 2)
    assert not view.flags.aligned and aligned(view) is not view
    fitting = np.frombuffer(values.tobytes(), np.int32)
    assert aligned(fitting) is fitting  # aligned already: the view itself


def test_a_large_misaligned_input_stays_a_view():
    count = ALIGN_COPY_BYTES // 4
    body = b"xy" + np.zeros(count, np.int32).tobytes()
    view = np.frombuffer(body, np.int32, count, 2)
    assert not view.flags.aligned and aligned(view) is view  # copying costs more than it saves
    assert np.shares_memory(from_buffer(memoryview(body)[2:], "INT32", count), view)


def test_element_count_limits_before_allocation():
    assert element_count([2, 3, 4], 100) == 24
    with pytest.raises(InvalidArgument, match="over the limit"):
        element_count([2**40, 2**40, 2**40], 1000)
    with pytest.raises(InvalidArgument, match="invalid dimension"):
        element_count([3, -1], 1000)
