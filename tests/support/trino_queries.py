"""What the translated Trino row pattern tests share
(tests/semantics/test_trino_row_pattern_matching.py and
tests/semantics/test_trino_row_pattern_aggregations.py): the ``run_epl`` fixture that
runs each case on both matchers, the stream ``T (id, value, ts)`` Trino's ``(VALUES (id,
value), ...)`` becomes, and the multiset of rows a query outputs. A test module takes
the fixture by importing :func:`both_matchers` (pytest finds it under its name,
``run_epl``)."""

from __future__ import annotations

from collections import Counter

import pytest

from cep.engine.engine import INTERPRET_ENV

SEC = 1000
SCHEMA = "CREATE SCHEMA T (id int, value int, ts timestamp) TIMESTAMP ts;\n"
NULL = None


@pytest.fixture(name="run_epl", params=["kernel", "interpreter"])
def both_matchers(request, run_epl, monkeypatch):
    """tests/conftest.py's ``run_epl``, each case run twice: with the compiled matcher
    where it takes the rule, and with every rule on the interpreter (``CEP_INTERPRET``):
    both must give Trino's rows."""
    if request.param == "interpreter":
        monkeypatch.setenv(INTERPRET_ENV, "1")
    else:
        monkeypatch.delenv(INTERPRET_ENV, raising=False)
    return run_epl


def query(run_epl, text, values, columns, partitions=None):
    """The rows ``text`` outputs over ``values`` (ids from 1), as a multiset of tuples."""
    events = [dict(id=i, value=v, ts=i * SEC) for i, v in enumerate(values, start=1)]
    out = run_epl(SCHEMA + text, events)
    for size in (1, 3):
        assert run_epl(SCHEMA + text, events, batch_size=size) == out
    return Counter(tuple(r[c] for c in columns) for r in out)


def rows(*tuples):
    return Counter(tuples)
