"""The fallback driver where atheris does not install: hypothesis-driven random mutation of the seeds.

No coverage feedback: each example is a seed (or a splice of two) with a few
byte-level edits chosen by hypothesis (flips, inserts of interesting bytes and
tokens, deletions, duplications), and sometimes plain random bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

#: Bytes and tokens that steer decoders into their edge cases.
TOKENS = [b"\x00", b"\xff", b"-1", b"0", b"4294967295", b"1e999", b"null", b"true", b"[]", b"{}", b'""',
          b'"b64"', b"\xff\xff\xff\x7f", b"\x80", b'"BYTES"', b'"FP16"', b'"INT64"', b"[[", b"]]", b'\\u0000']  # fmt: skip
_edit = st.tuples(st.sampled_from(("flip", "insert", "delete", "dup", "token")),
                  st.integers(0, 1 << 16), st.integers(0, 255), st.sampled_from(TOKENS))  # fmt: skip
#: Examples per hypothesis run: a run is cheap to restart and checks the clock between runs.
BATCH = 500


def apply(seed: bytes, edits: list[tuple[str, int, int, bytes]]) -> bytes:
    data = bytearray(seed)
    for action, position, value, token in edits:
        at = position % (len(data) + 1)
        if action == "flip" and data:
            data[at % len(data)] ^= 1 << (value % 8)
        elif action == "insert":
            data[at:at] = bytes([value])
        elif action == "delete":
            del data[at : at + 1 + value % 8]
        elif action == "dup":
            data[at:at] = data[at : at + 1 + value % 32]
        else:
            data[at:at] = token
    return bytes(data)


def inputs(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    mutated = st.builds(apply, st.sampled_from(seeds), st.lists(_edit, min_size=1, max_size=6))
    spliced = st.builds(lambda a, b, cut: a[: cut % (len(a) + 1)] + b[cut % (len(b) + 1) :],
                        st.sampled_from(seeds), st.sampled_from(seeds), st.integers(0, 4096))  # fmt: skip
    return st.one_of(mutated, mutated, spliced, st.binary(max_size=64))


def fuzz_randomly(seeds: list[bytes], one: Callable[[bytes], None], over: Callable[[], bool]) -> None:
    """Feed ``one`` until ``over()``; ``one`` must not raise (it counts what went wrong)."""

    @settings(max_examples=BATCH, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(inputs(seeds))
    def run(data: bytes) -> None:
        if not over():
            one(data)

    while not over():
        run()
