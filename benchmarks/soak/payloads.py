"""Inputs for the bundled models and the answers they owe (numpy only).

Every valid request carries fresh random values, so an answer that belongs
to another request, or to no request, is caught.
"""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng()
MiB = 1024 * 1024
#: The soak server's --max-request-bytes: 4 MiB tensors pass, the hostile cases go past it.
BODY_LIMIT_BYTES = 8 * MiB
#: Element counts of identity_fp32 requests: mostly small, some of 1 and 4 MiB.
FP32_SIZES = (1, 16, 1024, 16 * 1024, 256 * 1024, 1024 * 1024)
FP32_WEIGHTS = (0.25, 0.25, 0.2, 0.15, 0.1, 0.05)
#: The largest identity_fp32 tensor sent as JSON (text is slow to write and read).
JSON_MAX_ELEMENTS = 64 * 1024
#: The model the repository family unloads and loads again while the others use it.
RELOADED = "simple"
#: What every dialect answers for it while it is unloaded (docs/model-management.md): OIP and
#: grps "... has no available versions" or, for a request naming a version, "... version 1 is not found".
GONE_OIP = f"Request for unknown model: '{RELOADED}' "
GONE_TFS = f"Servable not found for request: Latest({RELOADED})"


def simple_pair(rows: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """INT32 [rows, 16] inputs of `simple` (and text of `simple_string`), far from overflow."""
    shape = (rows, 16)
    return RNG.integers(-10_000, 10_000, shape, dtype=np.int32), RNG.integers(
        -10_000, 10_000, shape, dtype=np.int32
    )


def simple_rows() -> int:
    return int(RNG.integers(1, 9))  # max_batch_size 8


def fp32_vector(largest: int | None = None) -> np.ndarray:
    sizes = [s for s in FP32_SIZES if largest is None or s <= largest]
    weights = np.array(FP32_WEIGHTS[: len(sizes)])
    size = int(RNG.choice(sizes, p=weights / weights.sum()))
    return RNG.standard_normal(size).astype(np.float32)


def fp16_vector() -> np.ndarray:
    return RNG.standard_normal(int(RNG.integers(1, 4096))).astype(np.float16)


def byte_strings(printable: bool = False) -> np.ndarray:
    """A 1-D object array of a few byte strings (printable ASCII when JSON must carry them)."""
    count = int(RNG.integers(1, 8))
    if printable:
        items = [bytes(RNG.integers(32, 127, int(RNG.integers(0, 64)), dtype=np.uint8)) for _ in range(count)]
    else:
        items = [RNG.bytes(int(RNG.integers(0, 256))) for _ in range(count)]
    array = np.empty(count, dtype=object)
    array[:] = items
    return array


def half_plus_three(x: np.ndarray) -> np.ndarray:
    return (x * np.float32(0.5) + np.float32(3.0)).astype(np.float32)


def same_floats(got: object, expected: np.ndarray) -> bool:
    """Equal as float32, whatever form (text, float64) carried them."""
    array = np.asarray(got, dtype=np.float64).astype(np.float32)
    return array.shape == expected.shape and bool(np.array_equal(array, expected))


def same_array(got: np.ndarray | None, want: np.ndarray) -> bool:
    """Same shape and values (BYTES: the same byte strings)."""
    if got is None or got.shape != want.shape:
        return False
    if want.dtype == object:
        return [bytes(v) for v in got.flat] == list(want.flat)
    return bool(np.array_equal(got, want))
