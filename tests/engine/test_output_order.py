"""Rows that tie on (seq, at, origin, rule) are ordered by their key's JSON text, stably,
with array operations: the same order as the loop over the runs it replaced (kept here
as the oracle), for keys of every kind (ints, strings, mixed, lists as tuples)."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.engine.output import (
    _rule_ranks,
    by_key_within_ties,
    concat_sorted,
    output_records,
    sort_output,
)
from cep.engine.table import object_array, repeated, take


def oracle(order: np.ndarray, columns: tuple[np.ndarray, ...], keys: np.ndarray
           ) -> np.ndarray:
    n = len(order)
    if n < 2:
        return order
    same = np.ones(n - 1, dtype=bool)
    for column in columns:
        ordered = column[order]
        same &= ordered[1:] == ordered[:-1]
    order = order.copy()
    starts = np.flatnonzero(np.r_[True, ~same])
    ends = np.append(starts[1:], n)
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        if b - a > 1:
            run = order[a:b]
            texts = [json.dumps(k) for k in keys[run].tolist()]
            order[a:b] = run[sorted(range(b - a), key=texts.__getitem__)]
    return order


KEYS = (st.lists(st.integers(-3, 12), min_size=0, max_size=40)
        | st.lists(st.integers(-120, 120) | st.integers(-2**70, 2**70), max_size=40)
        | st.lists(st.sampled_from(["a", "b", "é", 'q"', "A", "ab"]), max_size=40)
        | st.lists(st.one_of(st.integers(-2, 2), st.booleans(), st.none(),
                             st.sampled_from([1.0, 0.5, "1", "x"]),
                             st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"]))),
                   max_size=40))


@settings(max_examples=300, deadline=None)
@given(keys=KEYS, data=st.data())
def test_ties_by_key_text_as_the_loop_ordered_them(keys, data):
    n = len(keys)
    seq = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
    at = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), np.int64)
    order = np.lexsort((at, seq))
    values = object_array(keys)
    assert by_key_within_ties(order, (seq, at), values).tolist() == \
        oracle(order, (seq, at), values).tolist()


@given(rules=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=30))
def test_rule_ranks_are_each_rules_place(rules):
    order = {"b": 0, "a": 1}
    assert _rule_ranks(object_array(rules), order).tolist() == \
        [order.get(r, -1) for r in rules]


@given(value=st.text(max_size=5) | st.sampled_from(["\x00", "a\x00"]) | st.none()
       | st.integers(), n=st.integers(0, 20))
def test_repeated_is_n_references_to_the_value(value, n):
    """Oracle: a Python list of ``n`` times the value (``np.full`` is not one: it goes
    through a numpy string, which cuts trailing NULs off, ``"\\x00"`` -> ``""``)."""
    out = repeated(value, n)
    assert out.dtype == object and out.tolist() == [value] * n
    assert len({id(v) for v in out.tolist()}) <= 1


def _rows(keys: list, seq: list[int], at: list[int], rules: list[str]) -> dict:
    n = len(keys)
    return {"rule": object_array(rules), "key": object_array(keys),
            "seq": np.array(seq, np.int64), "ts": np.arange(n, dtype=np.int64),
            "ts__null": np.zeros(n, bool),
            "values": object_array([f'{{"i":{i}}}' for i in range(n)]),
            "at": np.array(at, np.int64), "origin": np.full(n, -1, np.int64)}


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(0, 30), shuffled=st.booleans())
def test_parts_in_order_concatenate_to_the_whole_sorted(data, n, shuffled):
    """``concat_sorted`` of parts each in the reference order is ``sort_output`` of
    them all: the parts as they are where their seqs ascend part after part (cuts of
    the sorted rows between seqs), sorted whole where not (cuts within a seq, parts of
    shuffled rows)."""
    ints = st.lists(st.integers(0, 4), min_size=n, max_size=n)
    rows = _rows(data.draw(st.lists(st.integers(0, 3) | st.sampled_from(["a", "b"]),
                                    min_size=n, max_size=n)),
                 data.draw(ints), data.draw(ints),
                 data.draw(st.lists(st.sampled_from(["r", "s"]), min_size=n, max_size=n)))
    order = {"s": 0, "r": 1}
    source = take(rows, np.random.default_rng(n).permutation(n)) if shuffled else \
        sort_output(rows, order)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    bounds = [0, *cuts, n]
    parts = [sort_output(take(source, np.arange(a, b)), order)
             for a, b in pairwise(bounds)]
    assert output_records(concat_sorted(parts, order)) == \
        output_records(sort_output(source, order))
