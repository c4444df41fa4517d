"""A key's state as a head and append-only segments gives back exactly the state."""

from __future__ import annotations

import numpy as np
import pytest

from cep.engine import codec
from cep.engine.engine import Engine
from cep.engine.table import SEQ, SUB, take
from cep.lang.compile import compile_text
from cep.reference import batch_bounds, run_batch
from cep.spark.key_layout import (
    Layout,
    pack,
    plan,
    read_head,
    rebuild,
    split_state,
    unpack,
)

RULES = """
CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;
@Name('avg5') SELECT k, avg(v) AS a FROM S#groupwin(k)#length(20);
@Name('uniq') SELECT k, count(*) AS n FROM S#groupwin(k)#unique(kind);
@Name('recent') SELECT k, sum(v) AS s FROM S#groupwin(k)#time(10 min);
@Name('pairs') SELECT a.v AS av, b.v AS bv FROM PATTERN [every a=S(kind = 1) ->
    b=S(kind = 2 AND v > a.v) WITHIN 1 minute] PARTITION BY k;
"""


def _inputs(n: int) -> dict:
    rng = np.random.default_rng(7)
    return {"S": {SEQ: np.arange(n, dtype=np.int64) * 2, SUB: np.zeros(n, dtype=np.int64),
                  "k": rng.integers(0, 40, n).astype(np.int64),
                  "ts": np.arange(n, dtype=np.int64) * 1_000_000,
                  "v": rng.random(n), "kind": rng.integers(0, 4, n).astype(np.int64)}}


def _same(a: dict, b: dict) -> bool:
    """Equal states (rule order aside): equal encodings of each rule's part."""
    return a.keys() == b.keys() and all(
        codec.encode(a[rule], "key") == codec.encode(b[rule], "key") for rule in a)


def _replay(rules: str, batch_size: int) -> dict[str, int]:
    """Runs ``rules`` batch by batch, stores every key's state as :func:`plan` says in a
    dict standing in for the two MapStates, and checks after every batch that each key
    rebuilds from its head and segments to exactly its state and that no segment is left
    behind. Counts the bytes written (heads and segments), the bytes whole states would
    have taken, the keys written as a single new segment, the keys written whole in their
    head, and the segments written."""
    module = compile_text(rules, "layout")
    inputs = _inputs(3_000)
    engine = Engine(module)
    store: dict[object, bytes] = {}
    layouts: dict[object, Layout] = {}
    tables: dict[object, list] = {}
    written = whole = rebased = inline = segments = 0
    for batch, (lo, hi) in enumerate(batch_bounds(inputs, batch_size)):
        run_batch(module, engine, {n: take(t, (t[SEQ] >= lo) & (t[SEQ] < hi))
                                   for n, t in inputs.items()})
        states = engine.take_states(sorted(engine.keys()))
        for key, state in states.items():
            step = plan(state, layouts.get(key), tables.get(key), batch)
            rebased += step.layout.segments == [batch] and key in layouts
            inline += step.segment is None and not step.layout.segments
            store[key] = step.head
            written += len(step.head)
            if step.segment is not None:
                store[key, batch] = step.segment
                written += len(step.segment)
            for old in step.dropped:
                del store[key, old]
            whole += len(codec.encode(state, "key"))
            layouts[key] = step.layout
            tables[key] = split_state(state)[2]
            rest, layout, rows = read_head(store[key], str(key))
            assert layout == step.layout
            back = rebuild(rest, layout, rows, [store[key, b] for b in layout.segments],
                           str(key))
            assert _same(back, state), (batch, key)
            segments += step.segment is not None
        assert len([k for k in store if isinstance(k, tuple)]) == sum(
            len(lay.segments) for lay in layouts.values())  # nothing left behind
        packed = unpack(codec.decode(codec.encode(pack(
            [str(k) for k in states], list(states.values()),
            [layouts[k] for k in states]), "warm"), "warm", "file"))
        assert all(_same(packed[str(k)][0], state) and packed[str(k)][1] == layouts[k]
                   for k, state in states.items())  # what a warm file carries
        engine.put_states(states)
    return {"written": written, "whole": whole, "rebased": rebased, "inline": inline,
            "segments": segments}


def test_segments_rebuild_every_key_of_every_kind_of_state() -> None:
    counts = _replay(RULES, 80)
    assert counts["segments"] > 0 and counts["inline"] > 0  # both ways were taken


def test_a_sliding_window_is_written_as_appends() -> None:
    counts = _replay(RULES.split("@Name('uniq')")[0], 80)
    assert counts["written"] < counts["whole"] / 2
    # a key's rows become one segment when its window first fills (or fills again after
    # its #time window emptied): not every batch (37 batches of 40 keys)
    assert counts["rebased"] <= 2 * 40


def test_a_window_that_turns_over_every_batch_is_written_whole_in_its_head() -> None:
    counts = _replay(RULES.split("@Name('avg5')")[0] + "@Name('last2') SELECT k, "
                     "avg(v) AS a FROM S#groupwin(k)#length(2);", 400)
    assert counts["segments"] == 0 and counts["inline"] > 0  # one write per key and batch


def test_a_layout_that_does_not_fit_its_tables_is_refused() -> None:
    good = Layout([("r", 1)], [3], [[2]], [0]).as_json()
    assert Layout.from_json(good).segments == [3]
    for bad in ({**good, "counts": [[2, 1]]}, {**good, "skip": []}, {**good, "slots": 5},
                {"slots": []}):
        with pytest.raises(codec.StateFormatError):
            Layout.from_json(bad)


def test_a_head_that_is_not_a_head_is_refused() -> None:
    with pytest.raises(codec.StateFormatError):
        read_head(codec.encode({"rest": {}}, "head"), "k")
    with pytest.raises(codec.StateFormatError):
        read_head(codec.encode({"rest": {}, "layout": {}, "rows": None}, "key"), "k")
    segmented = Layout([("r", 1)], [3], [[2]], [0]).as_json()
    with pytest.raises(codec.StateFormatError):  # rows in the head and in a segment
        read_head(codec.encode({"rest": {}, "layout": segmented, "rows": [{}]}, "head"), "k")


def test_a_key_with_no_rows_left_keeps_no_segment() -> None:
    columns = {SEQ: np.arange(3, dtype=np.int64), SUB: np.zeros(3, np.int64),
               "v": np.ones(3)}
    assert plan({"r": [columns]}, None, None, 0).segment is None  # a new key: whole, in its head
    segmented = Layout([("r", 1)], [0], [[3]], [0])
    empty = plan({"r": [{}]}, segmented, [columns], 1)
    assert empty.segment is None and empty.dropped == [0] and empty.layout.segments == []
    rest, layout, rows = read_head(empty.head, "k")
    assert rebuild(rest, layout, rows, [], "k") == {"r": [{}]}


def test_kept_rows_are_compared_bit_for_bit() -> None:
    """A window that slid by one row is an append when its kept rows are the same bits
    (NaN included); a kept value that changed at all, even -0.0 to 0.0, rewrites it."""
    def window(values: list[float], first: int) -> dict:
        n = len(values)
        return {SEQ: np.arange(first, first + n, dtype=np.int64), SUB: np.zeros(n, np.int64),
                "v": np.array(values)}

    began = window([1.0, np.nan, -0.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0)
    layout = Layout([("r", 1)], [0], [[8]], [0])
    slid = plan({"r": [window([np.nan, -0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], 1)]},
                layout, [began], 1)
    assert slid.segment is not None and slid.layout.segments == [0, 1]
    changed = plan({"r": [window([np.nan, 0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], 1)]},
                   layout, [began], 1)
    assert changed.segment is None and changed.dropped == [0]  # whole, in its head
