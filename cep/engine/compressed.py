"""Big state blobs rest zstd-compressed: in Spark's state store and in MongoDB's parcels.

Why (measured): every byte of an engine's state is paid again on its way to where it
rests: an executor copies a state value several times before RocksDB has it, and a
parcel goes through MongoDB. zstd at level 1 costs about 2.4 ms of CPU per MB. In
process, an FSD engine that ran 2,160,000 tweets snapshots to 61 MB instead of 106 MB
(0.57 s instead of 0.31 s on one core), and half its keys travel as a parcel of 14 MB
instead of 24 MB. On the emulated cluster (4 nodes of 0.4 cores, three interleaved
rounds against the tree without it, ``bench/results/scale-ab-zstd.json``): a 2 -> 4
engine change handed over 28.6 MB instead of 52.2 MB (medians), the engines' task
seconds of its export 2.19 instead of 2.67, of its import 0.82 instead of 1.72 and of
the first batch's save 2.46 instead of 3.25; key grouping's engines spent 1.64-1.68 s a
batch saving (summed over 4) instead of 1.80-1.90 s. The change's wall time, in normal
batches, did not differ beyond the rounds' spread (0.47-0.82 against -0.23-0.54).
At ``cep run``'s default batch of 1,000,000 tweets on 4 such nodes, three interleaved
rounds against this tree with compression off (``bench/results/zstd-ab-4nodes.json``)
gave key grouping 1.03x, DLB-L 1.04x and ELB 1.02x the throughput (medians; per round
1.00-1.11x). A frame is read in place, in the buffer zstd decompresses into: decoding a
95 MB FSD-shaped blob took 0.165 s instead of 0.215 s when that buffer was copied once
more into ``bytes`` (best of 7, one core, three interleaved runs).

Layout: ``b"CEPSTATZ"``, u64 the blob's length, then one zstd frame of the blob (the
format of :mod:`cep.engine.codec`, which this wraps). A blob under :data:`MIN_BYTES`, or
one that zstd cannot shrink by a tenth, stays as it is. The reader refuses a declared
length over :data:`MAX_RATIO` times the frame's before it allocates anything, and the
writer never compresses past that ratio, so bytes from anyone cannot make a reader
allocate more than that multiple of what they sent.
"""

from __future__ import annotations

import struct

import pyarrow as pa

MAGIC = b"CEPSTATZ"
MIN_BYTES = 1 << 16  # below this the frame's own cost is most of what it could save
MAX_RATIO = 256
LEVEL = 1
_LENGTH = struct.Struct("<Q")
_CODEC = pa.Codec("zstd", compression_level=LEVEL)


class DamagedBlob(ValueError):
    """The compressed frame is not one this module wrote (the caller names the blob)."""


def pack(blob: bytes) -> bytes:
    """``blob`` compressed behind :data:`MAGIC`, or itself where that does not pay."""
    if len(blob) < MIN_BYTES:
        return blob
    frame = _CODEC.compress(blob, asbytes=True)
    if len(frame) > 0.9 * len(blob) or len(blob) > MAX_RATIO * len(frame):
        return blob
    return b"".join((MAGIC, _LENGTH.pack(len(blob)), frame))


def is_packed(view: memoryview) -> bool:
    return len(view) >= len(MAGIC) and view[: len(MAGIC)] == MAGIC


def raw_length(blob: bytes) -> int:
    """The blob's length before :func:`pack`: the size of the state it holds, whatever
    its compression gained."""
    view = memoryview(blob)
    if is_packed(view) and len(view) >= len(MAGIC) + _LENGTH.size:
        return _LENGTH.unpack_from(view, len(MAGIC))[0]
    return len(view)


def unpack(view: memoryview) -> memoryview:
    """The blob a :func:`pack` frame holds; :class:`DamagedBlob` for anything else."""
    head = len(MAGIC) + _LENGTH.size
    if len(view) <= head:
        raise DamagedBlob("its compressed frame is truncated")
    (size,) = _LENGTH.unpack_from(view, len(MAGIC))
    frame = view[head:]
    if size > MAX_RATIO * len(frame):
        raise DamagedBlob("its compressed frame declares more than it can hold")
    try:  # zstd checks the frame's own content size against ``size``; the Arrow buffer
        # is read in place (``asbytes`` would copy the whole blob once more)
        return memoryview(_CODEC.decompress(frame, decompressed_size=size)).cast("B")
    except (OSError, pa.ArrowException) as exc:
        raise DamagedBlob(f"its compressed frame does not decompress ({exc})") from None
