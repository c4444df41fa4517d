"""Esper's own spellings run as the equivalent cep rules: comma-separated filter
expressions, ``#ext_timed`` and the ISTREAM selector (hand-checked event by event)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = "CREATE SCHEMA StockTick (symbol string, ts timestamp, price double, vol int) " \
         "TIMESTAMP ts;\n"


def ticks(*rows):
    return [dict(zip(("symbol", "ts", "price", "vol"), r, strict=True)) for r in rows]


EVENTS = ticks(("IBM", 0, 9.0, 1), ("IBM", 1 * SEC, 11.0, 2), ("MSFT", 2 * SEC, 12.0, 3),
               ("IBM", 3 * SEC, 12.5, 0), ("IBM", 4 * SEC, 10.5, 5))


def test_comma_filter_is_and(run_epl):
    # Esper reference, "Filter criteria": StockTick(symbol='IBM', price > 10)
    comma = run_epl(SCHEMA + "SELECT price FROM StockTick(symbol = 'IBM', price > 10);", EVENTS)
    spelled = run_epl(SCHEMA + "SELECT price FROM StockTick(symbol = 'IBM' AND price > 10);",
                      EVENTS)
    assert [r["price"] for r in comma] == [11.0, 12.5, 10.5]
    assert comma == spelled


def test_comma_filter_in_windows_and_patterns(run_epl):
    window = run_epl(SCHEMA + "SELECT count(*) AS n FROM StockTick(price > 10, vol > 0)"
                     "#groupwin(symbol)#length(5);", EVENTS)
    assert [(r["key"], r["n"]) for r in window] == [("IBM", 1), ("MSFT", 1), ("IBM", 2)]
    pattern = run_epl(SCHEMA + "SELECT a.price AS p, b.price AS q FROM PATTERN [every "
                      "a=StockTick(price > 10, vol > 1) -> b=StockTick(price < a.price, vol > 0)]"
                      " PARTITION BY symbol;", EVENTS)
    assert [(r["p"], r["q"]) for r in pattern] == [(11.0, 10.5)]


def test_ext_timed_is_time_on_the_timestamp_field(run_epl):
    rule = "SELECT count(*) AS n, sum(price) AS s FROM StockTick#groupwin(symbol){} ;"
    ext = run_epl(SCHEMA + rule.format("#ext_timed(ts, 2 sec)"), EVENTS)
    old = run_epl(SCHEMA + rule.format(".win:ext_timed(ts, 2)"), EVENTS)
    plain = run_epl(SCHEMA + rule.format("#time(2 sec)"), EVENTS)
    assert ext == old == plain
    assert [r["n"] for r in ext if r["key"] == "IBM"] == [1, 2, 1, 2]


def test_istream_is_the_default_and_rstream_is_refused(run_epl):
    assert run_epl(SCHEMA + "SELECT ISTREAM price FROM StockTick;", EVENTS) == run_epl(
        SCHEMA + "SELECT price FROM StockTick;", EVENTS)
    for selector in ("RSTREAM", "irstream"):
        with pytest.raises(RuleError, match=f"SELECT {selector.upper()} is not supported"):
            compile_text(SCHEMA + f"SELECT {selector} price FROM StockTick;")


def test_case_when_in_a_window_rule(run_epl):
    out = run_epl(SCHEMA + "SELECT CASE WHEN avg(price) > 11 THEN 'high' WHEN avg(price) >= 10 "
                  "THEN 'mid' ELSE 'low' END AS band FROM StockTick#groupwin(symbol)#length(2);",
                  EVENTS)
    assert [r["band"] for r in out] == ["low", "mid", "high", "high", "high"]
