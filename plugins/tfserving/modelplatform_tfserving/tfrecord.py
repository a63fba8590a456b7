"""TFRecord files: what TF Serving's warmup file is, read (and written) without TensorFlow.

Each record is ``length`` (u64 little-endian), the masked CRC-32C of those 8
bytes (u32 LE), ``length`` bytes of data, and the masked CRC-32C of the data.
Both checksums are verified, so a truncated or damaged file fails the load
naming the record instead of feeding the model garbage. CRC-32C (Castagnoli)
is computed here in Python from a table: warmup files are small, read once
per load, and no crc32c package is a dependency of this plugin.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from modelplatform import InvalidArgument

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_POLYNOMIAL = 0x82F63B78  # Castagnoli, reflected


def _table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLYNOMIAL if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's checksum: the CRC rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def read_records(path: Path, max_records: int, max_record_bytes: int) -> list[bytes]:
    """Every record of ``path``, checksums verified; refuses more than the limits allow."""
    with path.open("rb") as stream:
        records: list[bytes] = []
        for record in _records(stream, max_record_bytes):
            if len(records) == max_records:
                raise InvalidArgument(f"{path.name} has more than {max_records} records")
            records.append(record)
        return records


def write_records(path: Path, records: Iterable[bytes]) -> None:
    """Write ``records`` as a TFRecord file (tests and tools build warmup files with it)."""
    with path.open("wb") as stream:
        for record in records:
            header = _LENGTH.pack(len(record))
            stream.write(header + _CRC.pack(masked_crc(header)))
            stream.write(record + _CRC.pack(masked_crc(record)))


def _records(stream: BinaryIO, max_record_bytes: int) -> Iterator[bytes]:
    index = 0
    while header := stream.read(_LENGTH.size):
        length = _LENGTH.unpack(_exact(header, _LENGTH.size, index, "length"))[0]
        _check(stream, header, index, "length")
        if length > max_record_bytes:
            raise InvalidArgument(f"record {index} is {length} bytes, over the limit of {max_record_bytes}")
        data = _exact(stream.read(length), length, index, "data")
        _check(stream, data, index, "data")
        yield data
        index += 1


def _exact(chunk: bytes, size: int, index: int, part: str) -> bytes:
    if len(chunk) != size:
        raise InvalidArgument(f"record {index} is truncated in its {part}")
    return chunk


def _check(stream: BinaryIO, covered: bytes, index: int, part: str) -> None:
    stored = _CRC.unpack(_exact(stream.read(_CRC.size), _CRC.size, index, f"{part} checksum"))[0]
    if stored != masked_crc(covered):
        raise InvalidArgument(f"record {index} has a wrong {part} checksum (a damaged file?)")
