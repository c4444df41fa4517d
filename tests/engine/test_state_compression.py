"""Big state blobs rest compressed (``cep.engine.compressed``): exact round trips, and
refusal of every damaged or forged frame before anything is allocated or interpreted.

Oracle: the value itself (a round trip gives back exactly what went in, compared by
``same`` from the codec's tests, which reads types and bits); the damage tests have no
expected value, only the rule "plain data or StateFormatError". No test compares two
outputs, so none can pass on empty ones.
"""

from __future__ import annotations

import pickle
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_state_codec import _object_array, read_as_data_or_refused, same

from cep.engine import codec, compressed
from cep.engine.codec import StateFormatError


def _window(n: int, seed: int = 0) -> dict:
    """Columns in the shape of FSD's window: they compress."""
    rng = np.random.default_rng(seed)
    return {"__seq": np.arange(n), "__key": rng.integers(0, 4096, n),
            "norm": rng.integers(1, 40, n).astype(float),
            "__terms": _object_array([bytes(rng.integers(0, 8, 24, "u1")) for _ in range(n)])}


def test_a_big_blob_rests_compressed_and_comes_back_exactly() -> None:
    value = _window(20_000)
    blob = codec.encode(value, "t")
    assert blob.startswith(compressed.MAGIC)
    assert len(blob) < 0.8 * compressed.raw_length(blob)
    back = codec.decode(blob, "t", "t")
    assert all(same(back[k], v) for k, v in value.items())


def test_small_and_incompressible_blobs_stay_as_they_are() -> None:
    small = codec.encode(_window(50), "t")
    noise = codec.encode(np.random.default_rng(1).integers(0, 2**63, 20_000, dtype=np.uint64)
                         .astype(np.float64), "t")
    for blob in (small, noise):
        assert blob.startswith(codec.MAGIC)
        codec.decode(blob, "t", "t")


def test_a_blob_written_uncompressed_reads_as_before() -> None:
    value = _window(20_000)
    blob = codec.encode(value, "t")
    raw = bytes(compressed.unpack(memoryview(blob)))
    assert raw.startswith(codec.MAGIC)
    back = codec.decode(raw, "t", "t")
    assert all(same(back[k], v) for k, v in value.items())


def _frame(size: int, body: bytes) -> bytes:
    return compressed.MAGIC + struct.pack("<Q", size) + body


def test_forged_frames_are_refused_by_name() -> None:
    raw = bytes(compressed.unpack(memoryview(codec.encode(_window(20_000), "t"))))
    body = pa.Codec("zstd", compression_level=1).compress(raw, asbytes=True)
    forged = [
        _frame(len(raw) + 1, body),  # more than the frame holds
        _frame(len(raw) - 1, body),  # less
        _frame(2**62, body),  # a length to make the reader allocate
        _frame(len(raw), body[:-9]),  # truncated
        _frame(len(raw), b"\0" * 64),  # not zstd
        compressed.MAGIC + b"\1\2",  # no length
    ]
    for blob in forged:
        with pytest.raises(StateFormatError, match="engine snapshot is damaged"):
            codec.decode(blob, "t", "engine snapshot")


def test_a_pickle_inside_a_frame_is_refused_and_nothing_runs(tmp_path) -> None:
    class Planted:
        def __reduce__(self):
            return (open, (str(tmp_path / "ran"), "w"))

    payload = pickle.dumps([Planted(), np.random.default_rng(0).bytes(100_000)])
    blob = _frame(len(payload), pa.Codec("zstd").compress(payload, asbytes=True))
    with pytest.raises(StateFormatError, match="starts like a Python pickle"):
        codec.decode(blob, "engine", "engine snapshot")
    assert not (tmp_path / "ran").exists()


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_damaged_compressed_blobs_are_refused_or_read_as_data(data) -> None:
    blob = bytearray(codec.encode(_window(3_000, seed=2), "t"))
    assert blob.startswith(compressed.MAGIC)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    read_as_data_or_refused(bytes(blob))
