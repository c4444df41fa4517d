"""Engine and key state as data: a versioned, self-describing format that never runs code.

Engine snapshots rest in Spark's state store and moved keys' states in MongoDB, where
other people can write. A pickle from there would run whatever its author put in it, so
state is written in this format instead and anything else is refused with
:class:`StateFormatError` (a ``ValueError``) before a byte of it is interpreted.

Layout of a blob (all integers little-endian; one of 64 KiB or more is then compressed,
:mod:`cep.engine.compressed`)::

    b"CEPSTATE"  u16 version  u8 len(kind)  kind (ascii)  u32 n  u64 len(header)
    n × u64 buffer length  header (JSON)  padding to 8 bytes  n buffers, each padded to 8

``kind`` says what the blob holds (``engine``, ``keys``, ...), so one kind of state is
never taken for another. Every length is checked against the blob before anything is
parsed. The header is the value as a tree that uses plain
JSON for ``None``, ``bool``, ``int`` (any size), ``float`` (exactly: ``NaN``, ``-0.0``)
and ``str``; every other value is a one-key JSON object whose key is a tag:

====  ===============================================================================
 l    list ``[items]``                    t  tuple ``[items]``
 d    dict ``[[keys], [values]]``         S  set ``[items]``
 F    frozenset ``[items]``
 b    bytes ``buffer``                    r  the n-th tagged value again (shared)
 n    numpy scalar ``[dtype, value]``     c  registered class ``[name, [fields]]``
 a    numeric numpy array ``[dtype, shape, buffer]`` (raw little-endian)
 z    integer numpy array ``[dtype, shape, base, narrow dtype, buffer]``: each item
      minus ``base`` as an unsigned integer of the narrow dtype (u1, u2 or u4)
 A    object array of str or bytes with None ``[str|bytes, shape, nulls, 3 buffers]``
      (an Arrow large_string / large_binary array); bytes without None may add a
      fifth item, the dtype of the offsets' buffer when it holds each item's length
      instead (u1, u2 or u4)
 I    object array of only int, float or bool ``[dtype, shape, buffer]``
 o    any other object array ``[shape, [items]]``, and a short one of only str or None
      (at most ``SMALL_TEXT`` items: inline JSON costs less than an Arrow array there)
====  ===============================================================================

Tagged values are numbered in the order a JSON parser completes them (children first),
and an object met twice is written once and then as ``{"r": n}``: shared objects stay
shared, as with pickle. Decoding builds only the types above and the classes registered
with :func:`register` under a stable name (never a module path), so new operator state
made of these needs no new code here. Old pickled state is refused: a restart across the
change from pickles to this format is not supported.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa

from cep.engine import compressed
from cep.engine.table import narrowest_unsigned, offsets_from_least

MAGIC = b"CEPSTATE"
VERSION = 1
_ALIGN = 8
SMALL_TEXT = 64  # object arrays of at most this many str/None items go as JSON text
SMALL_COPY = 4096  # numeric arrays of at most this many items are copied out, not viewed
# Integer arrays of more items than SMALL_COPY travel narrowed (tag ``z``), and the
# offsets of a bytes array as lengths of the narrowest width. Why: every byte of state
# costs again in Spark's state store (an executor copies a state value about six times
# on its way to RocksDB) and in MongoDB's parcels. FSD's window (seq, sub, ts, key,
# time, norm, terms) went from 113 to 81 bytes a row (an FSD engine that ran 2,160,000
# tweets snapshots to 106 MB narrowed against 148 MB raw, in the same CPU), and on the
# emulated cluster a 2 -> 4 engine change handed over 58 MB instead of 82 MB and took
# 0.73 normal batches more instead of 1.23 (medians of two interleaved rounds,
# ``bench/results/scale-ab-narrow.json``).
_NARROW_NAMES = {d.str: d for d in map(np.dtype, ("u1", "<u2", "<u4"))}  # a reader's check
_LENGTH_NAMES = {**_NARROW_NAMES, "<i8": np.dtype("<i8")}  # lengths of a bytes array
_PREFIX = struct.Struct("<HB")
_SIZES = struct.Struct("<IQ")  # number of buffers, header length
# dtypes a raw buffer may carry: bool, ints, floats, complex, datetimes, fixed-width text
_DTYPE = re.compile(r"[<|](b1|[iu][1248]|f[248]|c(8|16)|[mM]8(\[[a-zA-Z]+\])?|[US]\d{1,9})")


class StateFormatError(ValueError):
    """Bytes that are not state in this format (or are damaged): refused, never run."""


# class -> (name, field names to read, or None for a NamedTuple, read by iterating it)
_BY_TYPE: dict[type, tuple[str, tuple[str, ...] | None]] = {}
_ARITY: dict[str, int] = {}
_BY_NAME: dict[str, type] = {}


def register(name: str, cls: type) -> type:
    """Allow instances of ``cls`` (a dataclass or NamedTuple whose fields are all
    constructor arguments) in state, stored under ``name``. Returns ``cls``."""
    if dataclasses.is_dataclass(cls):
        fields = dataclasses.fields(cls)
        if not all(f.init for f in fields):
            raise TypeError(f"{cls.__name__}: every field must be an __init__ argument")
        names: tuple[str, ...] | None = tuple(f.name for f in fields)
        arity = len(fields)
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names, arity = None, len(cls._fields)
    else:
        raise TypeError(f"{cls.__name__} is neither a dataclass nor a NamedTuple")
    if _BY_NAME.get(name, cls) is not cls:
        raise ValueError(f"state type name {name!r} is already taken")
    _BY_TYPE[cls] = (name, names)
    _BY_NAME[name] = cls
    _ARITY[name] = arity
    return cls


# --------------------------------------------------------------------------- encoding


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: coding a pattern state allocates one container
    per value, which would otherwise set off collections that traverse every object of
    the engine (measured: up to half of the time). Nothing allocated here forms a cycle."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def encode(value: object, kind: str) -> bytes:
    """``value`` as a blob of ``kind``; TypeError names a value the format cannot hold."""
    writer = _Writer()
    with _gc_paused():
        header = json.dumps(writer.value(value), separators=(",", ":"),
                            check_circular=False).encode()
    kind_bytes = kind.encode("ascii")
    lengths = [len(b) for b in writer.buffers]
    head = b"".join((MAGIC, _PREFIX.pack(VERSION, len(kind_bytes)), kind_bytes,
                     _SIZES.pack(len(lengths), len(header)),
                     struct.pack(f"<{len(lengths)}Q", *lengths), header))
    parts: list[bytes | memoryview] = [head, _pad(len(head))]
    for buf in writer.buffers:
        parts += (buf, _pad(len(buf)))
    return compressed.pack(b"".join(parts))


def _pad(n: int) -> bytes:
    return b"\0" * (-n % _ALIGN)


_SCALARS = frozenset((str, int, float, bool, type(None)))


class _Writer:
    """Turns a value into the JSON tree plus buffers, numbering tagged values.

    Hot path: pattern states are many small containers, so scalars are passed through
    inline (no call) and a memoised object is only ever one dict lookup."""

    def __init__(self) -> None:
        self.buffers: list[bytes | memoryview] = []
        # id -> (number, object): holding the object keeps its id from being reused
        self.memo: dict[int, tuple[int, object]] = {}

    def tagged(self, obj: object, tag: str, payload: object) -> dict[str, object]:
        self.memo[id(obj)] = (len(self.memo), obj)
        return {tag: payload}

    def buffer(self, data: bytes | memoryview) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def value(self, x: Any) -> object:
        t = type(x)
        if t in _SCALARS:
            return x
        seen = self.memo.get(id(x))
        if seen is not None:
            return {"r": seen[0]}
        scalars, value = _SCALARS, self.value
        if t is list or t is tuple:
            items = [v if type(v) in scalars else value(v) for v in x]
            return self.tagged(x, "l" if t is list else "t", items)
        if t is dict:
            keys = [k if type(k) in scalars else value(k) for k in x]
            return self.tagged(x, "d", [keys, [v if type(v) in scalars else value(v)
                                               for v in x.values()]])
        registered = _BY_TYPE.get(t)
        if registered is not None:
            name, fields = registered
            raw = x if fields is None else [getattr(x, f) for f in fields]
            return self.tagged(x, "c", [name, [v if type(v) in scalars else value(v)
                                               for v in raw]])
        if t is np.ndarray:
            return self.array(x)
        if t is bytes:
            return self.tagged(x, "b", self.buffer(x))
        if t is set or t is frozenset:
            return self.tagged(x, "S" if t is set else "F", [value(v) for v in x])
        if isinstance(x, np.generic) and _SCALAR.fullmatch(_le(x.dtype).str):
            return self.tagged(x, "n", [_le(x.dtype).str, x.item()])
        raise TypeError(f"cannot store a {t.__module__}.{t.__qualname__} in engine state "
                        "(register it with cep.engine.codec.register)")

    def array(self, x: np.ndarray) -> object:
        shape = list(x.shape)
        if x.dtype != object:
            dtype = _stored_dtype(x.dtype)
            narrowed = (offsets_from_least(x.reshape(-1), narrower=True)
                        if x.size > SMALL_COPY else None)
            if narrowed is not None:
                base, small = narrowed
                return self.tagged(x, "z", [dtype.str, shape, base, small.dtype.str,
                                            self.buffer(_bytes_of(small))])
            if x.size <= SMALL_COPY:  # one copy beats four views for a key's few rows
                raw: bytes | memoryview = x.astype(dtype, copy=False).tobytes()
            else:
                raw = _bytes_of(np.ascontiguousarray(x, dtype=dtype).reshape(-1))
            return self.tagged(x, "a", [dtype.str, shape, self.buffer(raw)])
        flat = x.reshape(-1)
        types = set(map(type, flat))
        has_none = type(None) in types
        types.discard(type(None))
        if len(flat) <= SMALL_TEXT and types <= {str}:
            # a key's few window rows: JSON text in the header costs a fraction of an
            # Arrow array's fixed cost (measured: a 5-row head encodes 4x faster)
            return self.tagged(x, "o", [shape, flat.tolist()])
        if types == {bytes} and not has_none:
            lengths, data = _binary_buffers(flat)
            return self.tagged(x, "A", ["bytes", shape, 0, [None, self.buffer(_bytes_of(lengths)),
                                                            self.buffer(data)],
                                        lengths.dtype.str])
        if types <= {str} or types == {bytes}:
            text = "bytes" if types == {bytes} else "str"
            arrow = _arrow_column(flat, _ARROW_TYPES[text])
            if arrow is not None:
                return self.tagged(x, "A", [
                    text, shape, arrow.null_count,
                    [None if b is None else self.buffer(memoryview(b)) for b in arrow.buffers()]])
        elif not has_none and len(types) == 1 and next(iter(types)) in _PLAIN_DTYPES:
            try:
                raw = np.asarray(flat, dtype=_PLAIN_DTYPES[next(iter(types))])
            except OverflowError:  # an int beyond 64 bits: kept exactly by the generic form
                pass
            else:
                return self.tagged(x, "I", [raw.dtype.str, shape, self.buffer(_bytes_of(raw))])
        return self.tagged(x, "o", [shape, [self.value(v) for v in flat]])


_PLAIN_DTYPES: dict[type, type] = {int: np.int64, float: np.float64, bool: np.bool_}


_STORED_DTYPES: dict[np.dtype, np.dtype] = {}


def _stored_dtype(dtype: np.dtype) -> np.dtype:
    """The little-endian dtype an array of ``dtype`` is stored as, checked once per dtype
    (a regular expression per array was a tenth of encoding a small key)."""
    stored = _STORED_DTYPES.get(dtype)
    if stored is None:
        stored = _le(dtype)
        if not _DTYPE.fullmatch(stored.str):
            raise TypeError(f"cannot store a numpy array of dtype {dtype} in engine state")
        _STORED_DTYPES[dtype] = stored
    return stored


def _bytes_of(array: np.ndarray) -> memoryview:
    """The buffer of a contiguous 1-d array, as bytes (a view, no copy)."""
    return array.view(np.uint8).data if array.size else memoryview(b"")


def _le(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("<") if dtype.str[0] == ">" else dtype


def _binary_buffers(flat: np.ndarray) -> tuple[np.ndarray, bytes]:
    """The items' lengths, in the narrowest unsigned dtype that holds them, and the data
    buffer of an Arrow large_binary array without nulls, built directly: ``pa.array``'s
    fixed cost was most of encoding a key's few term vectors. The reader sums the
    lengths into the array's offsets."""
    items = flat.tolist()
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    longest = int(lengths.max()) if len(items) else 0
    narrow = narrowest_unsigned(longest) if longest < 1 << 32 else np.dtype("<i8")
    return lengths.astype(narrow), b"".join(items)


def _arrow_column(flat: np.ndarray, arrow_type: pa.DataType) -> pa.Array | None:
    """The values as one Arrow array, or None when Arrow cannot hold them exactly (a
    ``str`` with a lone surrogate is not UTF-8)."""
    try:
        return pa.array(flat, type=arrow_type)
    except (pa.ArrowException, UnicodeError):
        return None


# --------------------------------------------------------------------------- decoding


def decode(blob: bytes | memoryview, kind: str, what: str) -> Any:
    """The value of a blob of ``kind``. ``what`` names the blob in errors ("engine
    snapshot", "key state parcel"). Raises :class:`StateFormatError` for
    anything that is not such a blob, without interpreting it further."""
    view = memoryview(blob).cast("B")
    if compressed.is_packed(view):
        try:
            view = compressed.unpack(view)
        except compressed.DamagedBlob as exc:
            raise StateFormatError(f"{what} is damaged ({exc}); refusing to load it") from None
    if len(view) < len(MAGIC) or view[: len(MAGIC)] != MAGIC:
        if len(view) >= 2 and view[0] == 0x80 and 2 <= view[1] <= 5:
            raise StateFormatError(
                f"{what} is not in cep's state format (it starts like a Python pickle: "
                "written by an older cep, or by someone else); refusing to load it")
        raise StateFormatError(f"{what} is not in cep's state format (no {MAGIC.decode()} "
                               "header); refusing to load it")
    try:
        with _gc_paused():
            return _Reader(view, what).read(kind)
    except StateFormatError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
            RecursionError, struct.error, pa.ArrowException) as exc:
        raise StateFormatError(f"{what} is damaged ({type(exc).__name__}: "
                               f"{str(exc)[:200]}); refusing to load it") from None


class _Reader:
    """One decode: checks the frame and slices the buffers, then builds the tree through
    ``json``'s object hook (called children first, the order the writer numbered tagged
    values in)."""

    def __init__(self, view: memoryview, what: str) -> None:
        self.view = view
        self.what = what
        self.objects: list[object] = []
        self.buffers: list[memoryview] = []

    def fail(self, reason: str) -> StateFormatError:
        return StateFormatError(f"{self.what} {reason}; refusing to load it")

    def read(self, kind: str) -> Any:
        view, pos = self.view, len(MAGIC)
        version, kind_len = _PREFIX.unpack_from(view, pos)
        if version != VERSION:
            age = "an older" if version < VERSION else "a newer"
            raise self.fail(f"is in state format version {version}, written by {age} cep "
                            f"(this one reads version {VERSION})")
        pos += _PREFIX.size
        found = bytes(view[pos : pos + kind_len]).decode("ascii")
        if found != kind:
            raise self.fail(f"holds {found!r} state, not {kind!r}")
        pos += kind_len
        n_buffers, header_len = _SIZES.unpack_from(view, pos)
        pos += _SIZES.size
        if n_buffers * 8 > len(view) - pos:
            raise self.fail("is truncated (buffer table)")
        lengths = struct.unpack_from(f"<{n_buffers}Q", view, pos)
        pos += n_buffers * 8
        if header_len > len(view) - pos:
            raise self.fail("is truncated (header)")
        header = view[pos : pos + header_len]
        pos += header_len
        pos += -pos % _ALIGN
        for n in lengths:
            if n > len(view) - pos:
                raise self.fail("is truncated (buffers)")
            self.buffers.append(view[pos : pos + n])
            pos += n + (-n % _ALIGN)
        if pos != len(view):
            raise self.fail("has trailing bytes")
        return json.loads(bytes(header), object_hook=self.hook)

    def hook(self, obj: dict[str, Any]) -> object:
        if len(obj) != 1:
            raise self.fail("has a malformed header")
        ((tag, payload),) = obj.items()
        # the common tags inline (pattern states are made of them), the rest by table
        if tag == "r":
            if type(payload) is not int or not 0 <= payload < len(self.objects):
                raise self.fail("has a dangling reference")
            return self.objects[payload]
        if tag == "l" and type(payload) is list:
            out: object = payload
        elif tag == "t" and type(payload) is list:
            out = tuple(payload)
        elif tag == "d" and type(payload) is list and len(payload) == 2:
            out = dict(zip(*payload, strict=True))
        else:
            build = _BUILDERS.get(tag)
            if build is None:
                raise self.fail(f"has an unknown value tag {tag!r}")
            out = build(self, payload)
        self.objects.append(out)
        return out

    def buffer(self, index: object) -> memoryview:
        if type(index) is not int or not 0 <= index < len(self.buffers):
            raise self.fail("refers to a missing buffer")
        return self.buffers[index]

    def shape(self, shape: object) -> tuple[int, ...]:
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise self.fail("has a malformed array shape")
        return tuple(shape)


def _build_class(reader: _Reader, payload: object) -> object:
    name, fields = _pair(reader, payload)
    cls = _BY_NAME.get(name)  # type: ignore[arg-type]
    if cls is None or type(fields) is not list or len(fields) != _ARITY[name]:
        raise reader.fail(f"holds a value of type {name!r}, which cep state does not allow")
    return cls(*fields)


def _build_scalar(reader: _Reader, payload: object) -> object:
    dtype, value = _pair(reader, payload)
    if not _SCALAR.fullmatch(dtype) or (type(value) not in _PLAIN_DTYPES
                                        and type(value) is not str):
        raise reader.fail("has a malformed numpy scalar")
    return np.dtype(dtype).type(value)


def _build_array(reader: _Reader, payload: object) -> np.ndarray:
    dtype, shape, index = _triple(reader, payload)
    if type(dtype) is not str or not _DTYPE.fullmatch(dtype):
        raise reader.fail(f"has an array of a dtype cep state does not allow ({dtype!r})")
    return _raw(reader, np.dtype(dtype), reader.shape(shape), index)


def _build_narrowed(reader: _Reader, payload: object) -> np.ndarray:
    if type(payload) is not list or len(payload) != 5:
        raise reader.fail("has a malformed narrowed array")
    dtype, shape, base, small, index = payload
    if type(dtype) is not str or not _INTEGER.fullmatch(dtype) or type(base) is not int \
            or small not in _NARROW_NAMES:
        raise reader.fail("has a malformed narrowed array")
    wide = np.dtype(dtype)
    if not np.iinfo(wide).min <= base <= np.iinfo(wide).max:
        raise reader.fail("has a narrowed array whose base its dtype cannot hold")
    out = _view(reader, _NARROW_NAMES[small], reader.shape(shape), index).astype(wide)
    out += wide.type(base)  # as written: each item minus base fitted (damage wraps)
    return out


def _offsets(reader: _Reader, lengths: memoryview, dtype: object, n: int) -> bytes:
    """The int64 offsets of a large_binary array whose buffer holds its items' lengths
    in ``dtype`` (see ``_binary_buffers``)."""
    width = _LENGTH_NAMES.get(dtype) if type(dtype) is str else None  # type: ignore[arg-type]
    if width is None or len(lengths) != n * width.itemsize:
        raise reader.fail("has a text array whose lengths do not match it")
    offsets = np.zeros(n + 1, dtype="<i8")
    np.cumsum(np.frombuffer(lengths, dtype=width), out=offsets[1:])
    return offsets.tobytes()


def _build_plain_objects(reader: _Reader, payload: object) -> np.ndarray:
    dtype, shape, index = _triple(reader, payload)
    if dtype not in _PLAIN_NAMES:
        raise reader.fail("has a malformed object array")
    return _raw(reader, np.dtype(dtype), reader.shape(shape), index).astype(object)


def _raw(reader: _Reader, dtype: np.dtype, shape: tuple[int, ...], index: object) -> np.ndarray:
    return _view(reader, dtype, shape, index).copy()


def _view(reader: _Reader, dtype: np.dtype, shape: tuple[int, ...], index: object) -> np.ndarray:
    """The array a buffer holds, read-only over the blob (callers copy it out)."""
    data = reader.buffer(index)
    if len(data) != math.prod(shape) * dtype.itemsize or not dtype.itemsize:
        raise reader.fail("has an array whose buffer does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _build_arrow(reader: _Reader, payload: object) -> np.ndarray:
    if type(payload) is not list or len(payload) not in (4, 5):
        raise reader.fail("has a malformed text array")
    kind, shape, null_count, indices = payload[:4]
    arrow_type = _ARROW_TYPES.get(kind)
    if arrow_type is None or type(indices) is not list or len(indices) != 3 \
            or type(null_count) is not int \
            or (len(payload) == 5 and (kind != "bytes" or null_count or indices[0] is not None)):
        raise reader.fail("has a malformed text array")
    shape = reader.shape(shape)
    n = math.prod(shape)
    buffers = [None if i is None else pa.py_buffer(reader.buffer(i)) for i in indices]
    if len(payload) == 5:  # the offsets' buffer holds lengths
        buffers[1] = pa.py_buffer(_offsets(reader, reader.buffer(indices[1]), payload[4], n))
    arrow = pa.Array.from_buffers(arrow_type, n, buffers, null_count=null_count)
    arrow.validate(full=True)  # offsets within the data, valid UTF-8: before any read
    return arrow.to_numpy(zero_copy_only=False).reshape(shape)


def _build_objects(reader: _Reader, payload: object) -> np.ndarray:
    shape, items = _pair(reader, payload)
    shape = reader.shape(shape)
    if type(items) is not list or len(items) != math.prod(shape):
        raise reader.fail("has a malformed object array")
    # fromiter keeps a list item one object (np.array would make it a dimension)
    return np.fromiter(items, dtype=object, count=len(items)).reshape(shape)


def _pair(reader: _Reader, payload: object) -> list:
    if type(payload) is not list or len(payload) != 2:
        raise reader.fail("has a malformed header")
    return payload


def _triple(reader: _Reader, payload: object) -> list:
    if type(payload) is not list or len(payload) != 3:
        raise reader.fail("has a malformed header")
    return payload


def _sequence(make: type) -> Callable[[_Reader, object], object]:
    def build(reader: _Reader, payload: object) -> object:
        if type(payload) is not list:
            raise reader.fail("has a malformed header")
        return make(payload)
    return build


def _malformed(reader: _Reader, payload: object) -> object:
    raise reader.fail("has a malformed header")


_SCALAR = re.compile(r"[<|](b1|[iu][1248]|f[248]|U\d{1,9})")
_INTEGER = re.compile(r"<[iu][248]")
_PLAIN_NAMES = {np.dtype(t).str for t in _PLAIN_DTYPES.values()}
_ARROW_TYPES = {"str": pa.large_string(), "bytes": pa.large_binary()}
_BUILDERS: dict[str, Callable[[_Reader, Any], object]] = {
    "l": _malformed, "t": _malformed, "d": _malformed,  # well-formed ones: inline in hook
    "S": _sequence(set), "F": _sequence(frozenset), "c": _build_class,
    "b": lambda reader, index: bytes(reader.buffer(index)),
    "n": _build_scalar, "a": _build_array, "z": _build_narrowed, "I": _build_plain_objects,
    "A": _build_arrow, "o": _build_objects,
}
