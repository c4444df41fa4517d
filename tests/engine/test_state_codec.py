"""The data-only state format: exact round trips, and refusal of everything else.

A planted pickle whose unpickling would create a file is handed to ``Engine.restore`` and
``Engine.import_keys``: it is refused with a clear error and the file never appears (the
MongoDB path is in ``tests/migration/test_state_documents.py``). Random bytes, truncated
and damaged blobs only ever raise :class:`StateFormatError`.

Oracle: none is needed beyond the value itself (a round trip must give back exactly
what went in, compared by ``same``, which reads types and bits, not by the codec); the
damage tests have no expected value, only the rule "plain data or StateFormatError".
No test here compares two outputs, so none can pass on empty ones.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.planted import planted_pickle

from cep.engine import codec
from cep.engine.codec import StateFormatError
from cep.engine.engine import Engine
from cep.engine.patterns.nodes import Event
from cep.reference import input_watermark, run_batch
from grammar.compile import compile_text


@dataclass(frozen=True)
class Point:
    x: int
    label: str | None


codec.register("test.Point", Point)


def same(a: object, b: object) -> bool:
    """Equal with the same types all the way down (1 is not 1.0, NaN equals NaN, -0.0
    is not 0.0, int arrays are not float arrays)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                      math.copysign(1, b))
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype == object:
            return all(same(x, y) for x, y in zip(a.reshape(-1), b.reshape(-1), strict=True))
        return a.tobytes() == b.tobytes()
    if isinstance(a, list | tuple):  # Event and other NamedTuples included
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Point):
        return same(a.x, b.x) and same(a.label, b.label)
    return a == b


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0]),
    st.text(max_size=8), st.binary(max_size=8),
)
hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5),
                      st.tuples(st.integers(), st.text(max_size=3)))


def _object_array(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


object_columns = st.one_of(
    st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=8),
    st.lists(st.one_of(st.none(), st.text(max_size=6)),  # past the JSON form: Arrow's
             min_size=codec.SMALL_TEXT + 1, max_size=codec.SMALL_TEXT + 4),
    st.lists(st.one_of(st.none(), st.binary(max_size=6)), max_size=8),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8),
    st.lists(st.floats(allow_nan=True), max_size=8),
    st.lists(st.booleans(), max_size=8),
    st.lists(scalars, max_size=8),  # mixed: the generic element-wise form
).map(_object_array)
numeric_arrays = st.sampled_from(["<i8", "<i4", "<u2", "|u1", "<f8", "<f4", "|b1", "<M8[us]",
                                  "<m8[us]", "<U3"]).flatmap(
    lambda dt: st.binary(min_size=0, max_size=48).map(
        lambda raw, dt=dt: np.frombuffer(raw[: len(raw) // np.dtype(dt).itemsize
                                             * np.dtype(dt).itemsize], dtype=dt).copy()
        if dt != "<U3" else np.array(["ab", "", "xyz"][: len(raw) % 4], dtype=dt)))
leaves = st.one_of(scalars, object_columns, numeric_arrays,
                   st.builds(Event, st.integers(), st.integers(), st.text(max_size=3),
                             st.dictionaries(st.text(max_size=3), scalars, max_size=3)),
                   st.builds(Point, st.integers(), st.one_of(st.none(), st.text(max_size=3))))
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(hashables, inner, max_size=4),
    st.frozensets(hashables, max_size=3), st.sets(st.integers(), max_size=3),
), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=values)
def test_every_value_round_trips_exactly(value) -> None:
    back = codec.decode(codec.encode(value, "test"), "test", "test state")
    assert same(value, back) or (isinstance(value, set | frozenset) and back == value)


def test_object_columns_keep_int_float_nan_negative_zero_and_big_ints() -> None:
    cases = [
        [1, 2.0, None, "a", b"b", True],
        [float("nan"), -0.0, 0.0, float("inf")],
        [2**64, -(2**80), 3],
        ["x", None, "\ud800"],  # a lone surrogate is not UTF-8: stored element-wise
        [np.int32(7), np.float32(1.5), np.bool_(True), np.str_("é")],
    ]
    for items in cases:
        column = _object_array(items)
        back = codec.decode(codec.encode({"c": column}, "t"), "t", "t")["c"]
        assert same(column, back), items


def _tags(blob: bytes) -> set[str]:
    """The value tags a blob's header uses."""
    kind_len = blob[len(codec.MAGIC) + 2]
    at = len(codec.MAGIC) + 3 + kind_len
    n_buffers, header_len = struct.unpack_from("<IQ", blob, at)
    at += 12 + 8 * n_buffers
    tags: set[str] = set()
    json.loads(blob[at:at + header_len], object_hook=lambda o: tags.update(o) or o)
    return tags


def test_small_text_columns_go_as_json_and_long_ones_as_arrow_both_exactly() -> None:
    small = _object_array(["N123", None, "é", ""])
    long = _object_array([f"k{i}" if i % 7 else None for i in range(codec.SMALL_TEXT + 1)])
    for column, tag in ((small, "o"), (long, "A")):
        blob = codec.encode({"c": column}, "t")
        assert tag in _tags(blob)
        assert same(codec.decode(blob, "t", "t")["c"], column)


def test_bytes_columns_are_arrow_large_binary_buffers() -> None:
    """Bytes without None are laid out by hand: the same buffers pa.array makes."""
    column = _object_array([b"\x00\xff", b"", b"abc" * 30])
    blob = codec.encode({"c": column}, "t")
    assert "A" in _tags(blob) and same(codec.decode(blob, "t", "t")["c"], column)
    arrow = pa.array(column, type=pa.large_binary())
    lengths, data = codec._binary_buffers(column)
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype="<i8")]).astype("<i8")
    assert lengths.dtype == np.dtype("u1")  # the longest is 90 bytes
    assert [offsets.tobytes(), data] == [bytes(b) for b in arrow.buffers()[1:]]


@pytest.mark.parametrize("longest,width", [(255, "|u1"), (256, "<u2"), (70_000, "<u4")])
def test_bytes_lengths_travel_in_the_narrowest_width_that_holds_them(longest, width) -> None:
    column = _object_array([b"", b"x" * longest, b"ab"])
    lengths, _ = codec._binary_buffers(column)
    assert lengths.dtype.str == width
    assert same(codec.decode(codec.encode(column, "t"), "t", "t"), column)


_WIDE = ["<i2", "<i4", "<i8", ">i8", "<u2", "<u4", "<u8"]


@settings(max_examples=200, deadline=None)
@given(dtype=st.sampled_from(_WIDE), extra=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       span_bits=st.sampled_from([0, 1, 8, 9, 16, 17, 32, 33, 64]), at=st.integers(0, 2**20))
def test_big_integer_arrays_round_trip_exactly_narrowed_where_their_span_allows(
        dtype, extra, seed, span_bits, at) -> None:
    """Oracle: the array itself, compared by its bytes and dtype (``same``). Values are
    drawn around a base placed anywhere in the dtype's range, the extremes included,
    spanning up to ``span_bits`` bits; the tag says whether they travelled narrowed."""
    info = np.iinfo(np.dtype(dtype))
    span = min(2**span_bits - 1, info.max - info.min)
    low = info.min + (info.max - info.min - span) * at // 2**20  # exact: both extremes
    rng = np.random.default_rng(seed)
    n = codec.SMALL_COPY + extra
    offsets = [int(v) for v in rng.integers(0, span, size=n, endpoint=True, dtype=np.uint64)]
    offsets[0], offsets[-1] = 0, span  # the span is reached exactly
    array = np.array([low + v for v in offsets], dtype=dtype)
    blob = codec.encode({"c": array}, "t")
    back = codec.decode(blob, "t", "t")["c"]
    assert same(back, array.astype(np.dtype(dtype).newbyteorder("<")))
    width = next((w for w in (1, 2, 4) if span < 2 ** (8 * w)), None)
    narrows = width is not None and width < np.dtype(dtype).itemsize
    assert ("z" in _tags(blob)) == narrows, (dtype, span_bits)


def test_small_integer_arrays_and_floats_travel_raw() -> None:
    """Narrowing is for big columns: a key's few rows, floats and bytes keep the raw form."""
    for array in (np.arange(codec.SMALL_COPY), np.zeros(codec.SMALL_COPY + 1),
                  np.zeros(codec.SMALL_COPY + 1, dtype="u1")):
        assert _tags(codec.encode(array, "t")) == {"a"}


def test_a_window_of_the_fsd_shape_takes_fewer_bytes_narrowed() -> None:
    """Sequence numbers, keys and microsecond times of a window span far less than 64
    bits: the measured reason for narrowing, kept true."""
    n = 20_000
    rng = np.random.default_rng(3)
    columns = {"__seq": np.arange(2_000_000, 2_000_000 + n), "__sub": np.zeros(n, "i8"),
               "__key": rng.integers(0, 4096, n), "ts": 1_767_225_600_000_000
               + np.sort(rng.integers(0, 2_000_000_000, n)),
               "__terms": _object_array([bytes(rng.integers(0, 256, 56, "u1")) for _ in range(n)])}
    raw = 8 * 4 * n + 8 * (n + 1) + 56 * n
    blob = codec.encode(columns, "t")
    assert len(blob) < 0.8 * raw
    back = codec.decode(blob, "t", "t")
    assert all(same(back[k], v) for k, v in columns.items())


@pytest.mark.parametrize("payload", [
    ["<i8", [2], 0, "<u8", 0], ["<f8", [2], 0, "<u2", 0], ["<i8", [2], 0.5, "<u2", 0],
    ["<i2", [2], 40_000, "|u1", 0], ["<i8", [3], 0, "<u2", 0], ["<i8", [2], 0, "<u2"],
    ["<u8", [2], -1, "<u2", 0]])
def test_malformed_narrowed_arrays_are_refused(payload) -> None:
    with pytest.raises(StateFormatError):
        codec.decode(_frame(json.dumps({"z": payload}).encode(), [b"\1\0\2\0"]), "t", "t")


def test_big_endian_arrays_come_back_little_endian_with_equal_values() -> None:
    array = np.arange(-3, 3, dtype=">i8")
    back = codec.decode(codec.encode(array, "t"), "t", "t")
    assert back.dtype == np.dtype("<i8") and back.tolist() == array.tolist()


def test_shared_objects_stay_shared() -> None:
    inner = [1, 2]
    event = Event(1, 2, "S", {"a": 1})
    array = np.arange(5)
    back = codec.decode(codec.encode([inner, inner, (event, event), array, array], "t"),
                        "t", "t")
    assert back[0] is back[1] and back[2][0] is back[2][1] and back[3] is back[4]
    back[0].append(3)
    assert back[1] == [1, 2, 3]


def test_decoded_arrays_are_writeable_copies() -> None:
    """Every kind of array comes back writeable and owning its values: writing into one
    changes neither the blob (even a writable bytearray) nor a second decode of it."""
    columns = {
        "small": np.arange(4),
        "large": np.arange(codec.SMALL_COPY + 1),  # viewed, not copied, when written
        "text": _object_array(["x", None]),
        "long_text": _object_array([f"k{i}" for i in range(codec.SMALL_TEXT + 1)]),  # Arrow
        "bytes": _object_array([b"ab", b""]),
        "ints": _object_array([1, 2, 3]),
    }
    blob = bytearray(codec.encode(columns, "t"))
    written = bytes(blob)
    back = codec.decode(blob, "t", "t")
    assert list(back) == list(columns)
    for name, column in back.items():
        assert column.flags.writeable, name
        column[0] = column[1]
        assert column[0] == columns[name][1], name
    assert bytes(blob) == written
    assert same(codec.decode(blob, "t", "t"), columns)


def test_values_outside_the_format_are_refused_when_writing() -> None:
    class Unregistered:
        pass

    for value in (Unregistered(), print, np.array([1 + 2j], dtype=object),
                  np.zeros(2, dtype=[("a", "<i4")])):
        with pytest.raises(TypeError, match="cannot store"):
            codec.encode([value], "t")


# --------------------------------------------------------------------------- refusal


SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double) TIMESTAMP ts;\n"
RULES = (SCHEMA + "SELECT sum(v) AS s FROM S#groupwin(k)#length(3);\n"
         "SELECT a.v AS av FROM PATTERN [every a=S(v > 1) -> b=S(v > a.v)] PARTITION BY k;")


def _engine() -> Engine:
    module = compile_text(RULES, "codec")
    engine = Engine(module)
    n = 40
    rows = {"S": {"__seq": np.arange(n, dtype=np.int64), "__sub": np.zeros(n, np.int64),
                  "k": np.arange(n, dtype=np.int64) % 3, "ts": np.arange(n, dtype=np.int64),
                  "v": (np.arange(n) % 5).astype(np.float64)}}
    run_batch(module, engine, rows, input_watermark(module, rows))
    return engine


def test_planted_pickle_as_engine_snapshot_is_refused_and_nothing_runs(tmp_path) -> None:
    target = tmp_path / "pwned"
    blob = planted_pickle(target)
    with pytest.raises(StateFormatError, match=r"starts like a Python pickle.*older cep"):
        _engine().restore(blob)
    assert not target.exists()


def test_planted_pickle_as_key_state_is_refused_and_nothing_runs(tmp_path) -> None:
    target = tmp_path / "pwned"
    with pytest.raises(StateFormatError, match="key state parcel is not in cep's"):
        _engine().import_keys(planted_pickle(target))
    assert not target.exists()


def test_snapshot_and_key_states_round_trip_through_fresh_engines() -> None:
    engine = _engine()
    fresh = Engine(engine.module)
    fresh.restore(engine.snapshot())
    assert fresh.snapshot() == engine.snapshot()
    parcel = engine.export_keys([0, 1])
    assert engine.keys() == {2}
    other = Engine(engine.module)
    assert other.import_keys(parcel) == [0, 1]
    assert other.keys() == {0, 1}


def test_a_parcel_names_the_keys_it_has_no_state_for() -> None:
    """An engine may hand over a key it never held: the parcel still names it, so the
    importer can check that it got every key the maps send it."""
    engine = _engine()
    parcel = engine.export_keys([5, 0])
    other = Engine(engine.module)
    assert other.open_parcel(parcel).keys == [5, 0]
    assert other.import_keys(parcel) == [5, 0]
    assert other.keys() == {0}


def test_a_parcel_holding_keys_it_does_not_name_is_refused_whole() -> None:
    """Bytes from the store may be anyone's: a parcel whose state holds a key it does
    not name is refused, and nothing of it is adopted."""
    engine = _engine()
    value = codec.decode(engine.export_keys([0, 1]), "keys", "parcel")
    forged = codec.encode({**value, "keys": [0]}, "keys")
    other = Engine(engine.module)
    with pytest.raises(ValueError, match="holds the state of keys it does not name"):
        other.import_keys(forged)
    assert other.keys() == set()
    with pytest.raises(ValueError, match="key state parcel does not belong"):
        other.import_keys(codec.encode({**value, "rules": ["other"]}, "keys"))


def test_one_kind_of_state_is_not_taken_for_another() -> None:
    engine = _engine()
    key_blob = engine.export_keys([0])
    with pytest.raises(StateFormatError, match="holds 'keys' state, not 'engine'"):
        Engine(engine.module).restore(key_blob)
    other = Engine(compile_text(SCHEMA + "SELECT count(*) AS n FROM S#groupwin(k)#length(2);"))
    with pytest.raises(ValueError, match="does not belong to this rule file"):
        other.restore(engine.snapshot())


def test_other_format_versions_are_refused_by_name() -> None:
    blob = bytearray(codec.encode([1], "engine"))
    struct.pack_into("<H", blob, len(codec.MAGIC), 0)
    with pytest.raises(StateFormatError, match="version 0, written by an older cep"):
        codec.decode(bytes(blob), "engine", "engine snapshot")
    struct.pack_into("<H", blob, len(codec.MAGIC), codec.VERSION + 1)
    with pytest.raises(StateFormatError, match="written by a newer cep"):
        codec.decode(bytes(blob), "engine", "engine snapshot")


def test_an_unregistered_type_name_is_refused_when_reading() -> None:
    blob = codec.encode(Point(1, "a"), "t").replace(b'"test.Point"', b'"test.Poinz"')
    with pytest.raises(StateFormatError, match=r"'test\.Poinz', which cep state does not allow"):
        codec.decode(blob, "t", "t")


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes_are_refused(data) -> None:
    with pytest.raises(StateFormatError, match="refusing to load it"):
        codec.decode(data, "engine", "engine snapshot")


def _frame(header: bytes, buffers: list[bytes]) -> bytes:
    """A blob with a valid frame around any header and buffers (the documented layout)."""
    head = (codec.MAGIC + struct.pack("<HB", codec.VERSION, 1) + b"t"
            + struct.pack("<IQ", len(buffers), len(header))
            + struct.pack(f"<{len(buffers)}Q", *map(len, buffers)) + header)
    out = head + b"\0" * (-len(head) % 8)
    for b in buffers:
        out += b + b"\0" * (-len(b) % 8)
    return out


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 2**65), st.floats(), st.text(max_size=4),
              st.sampled_from(["<i8", "|b1", "<U2", "str", "bytes", "test.Point", "pattern.Event",
                               "|O", "<V8"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.builds(lambda tag, payload: {tag: payload},
                  st.sampled_from([*"ltdSFbrnaIAoc", "x"]), inner)),
    max_leaves=12)


def is_data(value: object) -> bool:
    """Whether a decoded value is made only of what the format may build: plain scalars,
    containers, numpy arrays and scalars, and instances of registered classes."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return True
    if isinstance(value, np.generic):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype != object or all(map(is_data, value.reshape(-1).tolist()))
    if type(value) in (list, tuple, set, frozenset) or type(value) is Event:
        return all(map(is_data, value))
    if type(value) is dict:
        return all(is_data(k) and is_data(v) for k, v in value.items())
    if type(value) in codec._BY_NAME.values():
        return all(is_data(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def read_as_data_or_refused(blob: bytes) -> None:
    """Decoding ``blob`` gives plain data or raises StateFormatError, nothing else."""
    try:
        back = codec.decode(blob, "t", "t")
    except StateFormatError:
        return
    assert is_data(back), back


def test_is_data_tells_data_from_anything_else() -> None:
    assert is_data([None, 1, 2.0, "a", b"b", (Event(1, 2, "S", {"a": [1]}),), {1: {2}},
                    frozenset(), np.int32(3), np.arange(2), _object_array(["x", None]),
                    Point(1, None)])
    for value in ([object()], {"k": print}, _object_array([object()]), Point(1, object())):
        assert not is_data(value)


@settings(max_examples=1000, deadline=None)
@given(tree=json_values, buffers=st.lists(st.binary(max_size=24), max_size=3))
def test_any_header_in_a_valid_frame_is_read_as_data_or_refused(tree, buffers) -> None:
    """Arbitrary tag trees with arbitrary buffers: decoded into plain values or refused
    with StateFormatError, never another exception (nor a crash in Arrow or numpy)."""
    read_as_data_or_refused(_frame(json.dumps(tree).encode(), buffers))


@settings(max_examples=1000, deadline=None)
@given(kind=st.sampled_from(["str", "bytes"]), n=st.integers(0, 6), nulls=st.integers(-1, 6),
       indices=st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=3, max_size=3),
       buffers=st.lists(st.binary(max_size=64), min_size=3, max_size=3),
       lengths=st.one_of(st.none(), st.sampled_from(["|u1", "<u2", "<u4", "<i8", "<f8", 3])))
def test_text_arrays_with_forged_buffers_are_refused_or_read(kind, n, nulls, indices,
                                                              buffers, lengths) -> None:
    """Offsets past the data, bad UTF-8, a short validity bitmap, lengths that sum past
    the data or are negative: Arrow checks the whole array before a value is read, so
    forged buffers never read outside the blob."""
    payload = [kind, [n], nulls, indices] + ([] if lengths is None else [lengths])
    blob = _frame(json.dumps({"A": payload}).encode(), buffers)
    try:
        back = codec.decode(blob, "t", "t")
    except StateFormatError:
        return
    assert back.dtype == object and len(back) == n
    assert all(v is None or type(v) is (str if kind == "str" else bytes) for v in back)


def _declares_its_length(blob: bytes, at: int) -> bool:
    """Whether the sizes from offset ``at`` on (buffer count, header length, buffer
    lengths) add up, with the padding, to exactly the blob's length."""
    if len(blob) < at + 12:
        return False
    n_buffers, header_len = struct.unpack_from("<IQ", blob, at)
    at += 12
    if at + 8 * n_buffers > len(blob):
        return False
    lengths = struct.unpack_from(f"<{n_buffers}Q", blob, at)
    end = at + 8 * n_buffers + header_len
    end += -end % 8
    for n in lengths:
        end += n + -n % 8
    return end == len(blob)


@settings(max_examples=300, deadline=None)
@given(tail=st.binary(max_size=64))
def test_random_bytes_after_a_valid_prefix_are_refused(tail) -> None:
    """Refused unless the random sizes happen to frame the tail exactly; even then the
    header is read as data or refused."""
    prefix = codec.MAGIC + struct.pack("<HB", codec.VERSION, 1) + b"t"
    if _declares_its_length(prefix + tail, len(prefix)):
        read_as_data_or_refused(prefix + tail)
    else:
        with pytest.raises(StateFormatError, match="refusing to load it"):
            codec.decode(prefix + tail, "t", "t")


def test_a_tail_that_frames_itself_is_read() -> None:
    """The frame arithmetic above, checked on a blob that does frame itself."""
    blob = codec.encode([1, b"xyz"], "t")
    assert _declares_its_length(blob, len(codec.MAGIC) + 3 + 1)
    assert not _declares_its_length(blob + b"\0", len(codec.MAGIC) + 3 + 1)


@settings(max_examples=300, deadline=None)
@given(value=values, cut=st.floats(0, 1, exclude_max=True))
def test_truncated_blobs_are_refused(value, cut) -> None:
    blob = codec.encode(value, "t")
    with pytest.raises(StateFormatError, match="refusing to load it"):
        codec.decode(blob[: int(len(blob) * cut)], "t", "t")


@settings(max_examples=500, deadline=None)
@given(value=values, data=st.data())
def test_damaged_blobs_are_refused_or_read_as_data(value, data) -> None:
    """A flipped byte either still decodes (a changed value in a buffer) or is refused
    with StateFormatError; no other exception, no crash."""
    blob = bytearray(codec.encode(value, "t"))
    for _ in range(data.draw(st.integers(1, 3))):
        blob[data.draw(st.integers(0, len(blob) - 1))] ^= data.draw(st.integers(1, 255))
    read_as_data_or_refused(bytes(blob))


def test_engine_snapshot_of_the_real_fsd_shape_round_trips() -> None:
    """Window rows as the FSD join keeps them: int keys, term bytes, float norms."""
    rng = np.random.default_rng(3)
    n = 1000
    terms = np.empty(n, dtype=object)
    terms[:] = [rng.integers(0, 2**32, rng.integers(0, 20), dtype=np.uint32).tobytes()
                for _ in range(n)]
    keys = np.empty(n, dtype=object)
    keys[:] = rng.integers(0, 4096, n).tolist()
    rows = {"__seq": np.arange(n, dtype=np.int64), "__key": keys, "__terms:text": terms,
            "__norm2:text": rng.random(n)}
    back = codec.decode(codec.encode([[rows]], "engine"), "engine", "engine snapshot")
    assert same([[rows]], back)
