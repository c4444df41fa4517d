"""The Esper constructs of issue 15 on Spark: the same events as the reference evaluator,
with one and several engines, small batches, and a key-moving strategy (so every new kind
of per-key state is exported and imported mid-stream). Input: tests/data/esper/ticks.jsonl,
a skewed stream of stock ticks (more than half are IBM's).

The default run puts every construct keyed by ``symbol`` into one module (one Spark job per
layout, each rule's events compared on their own) and runs the ``sector``-keyed one apart:
the same rules, inputs and layouts as one job per construct, which stays as a slow test
(``-m slow``) to point at a failing construct alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from grammar.compile import compile_text

TICKS = Path(__file__).parent.parent / "data" / "esper" / "ticks.jsonl"
SCHEMA = ("CREATE SCHEMA StockTick (symbol string, sector string, ts timestamp, price double, "
          "vol int) TIMESTAMP ts;\n")
RULES = {
    "comma_filter": "SELECT count(*) AS n, avg(price) AS a FROM StockTick(vol > 10, price > 25)"
                    "#groupwin(symbol)#ext_timed(ts, 5 sec);",
    "prev_prior": "SELECT price, prev(1, price) AS p1, prevtail(price) AS oldest, "
                  "prevcount(price) AS c, prior(4, price) AS r4 FROM "
                  "StockTick#groupwin(symbol)#length(3) HAVING prev(1, price) IS NULL OR "
                  "price > prev(1, price);",
    "firstlength": "SELECT count(*) AS n, sum(vol) AS v FROM StockTick#groupwin(symbol)"
                   "#firstlength(6);",
    "firsttime": "SELECT count(*) AS n, max(price) AS m FROM StockTick#groupwin(symbol)"
                 "#firsttime(20 sec);",
    "time_length_batch": "SELECT count(*) AS n, sum(vol) AS v, prev(0, price) AS last_price "
                         "FROM StockTick#groupwin(symbol)#time_length_batch(3 sec, 4);",
    "unique": "SELECT count(*) AS n, avg(price) AS a FROM StockTick#unique(symbol) "
              "GROUP BY symbol;",
    "unique_groupwin": "SELECT count(*) AS n, sum(price) AS s, prevtail(vol) AS t FROM "
                       "StockTick#groupwin(sector)#unique(symbol);",
    "output_all_time": "SELECT price, count(*) AS n FROM StockTick#groupwin(symbol)#length(4) "
                       "OUTPUT ALL EVERY 2 sec;",
    "output_last_events": "SELECT avg(price) AS a FROM StockTick#groupwin(symbol)#time(5 sec) "
                          "OUTPUT LAST EVERY 3 EVENTS;",
    "output_first_time": "SELECT price FROM StockTick#groupwin(symbol)#length(2) "
                         "OUTPUT FIRST EVERY 1 sec;",
    "output_snapshot_pattern": "SELECT a.price AS p, b.price AS q FROM PATTERN [every "
                               "a=StockTick -> b=StockTick(price > a.price, vol > 20)] "
                               "PARTITION BY symbol OUTPUT SNAPSHOT EVERY 2 sec;",
    "match_until": "SELECT b[0].price AS b0, b[1].price AS b1, c.price AS c FROM PATTERN [every "
                   "([1:3] b=StockTick(vol > 25) until c=StockTick(vol < 5)) WITHIN 30 sec] "
                   "PARTITION BY symbol;",
    # an `or` step on the chain kernel: the not-taken alternative's tag is NULL
    "or_pattern": "SELECT a.price AS p, b.vol AS bv, c.price AS cp FROM PATTERN [every "
                  "a=StockTick(vol > 40) -> (b=StockTick(vol < 10) or "
                  "c=StockTick(price > a.price)) WITHIN 30 sec] PARTITION BY symbol;",
    # an `and` step on the chain kernel: both, in either order, each event bound once
    "and_pattern": "SELECT a.price AS p, b.vol AS bv, c.price AS cp FROM PATTERN [every "
                   "a=StockTick(vol > 40) -> (b=StockTick(vol < 20) and "
                   "c=StockTick(price > a.price)) WITHIN 30 sec] PARTITION BY symbol;",
    # [n] inside a chain: n slots b[0]..b[n-1]; b[2] is never bound (NULL)
    "repeat_in_chain": "SELECT a.price AS p, b[0].vol AS b0, b[1].price AS b1, b[2].vol AS b2 "
                       "FROM PATTERN [every a=StockTick(vol > 40) -> [2] b=StockTick(vol < "
                       "20) -> c=StockTick(price > b[1].price) WITHIN 30 sec] "
                       "PARTITION BY symbol;",
    # every over a group: one instance per key at a time (the group kernel)
    "group_pattern": "SELECT a.price AS p, b.vol AS bv, c.price AS cp FROM PATTERN [every "
                     "(a=StockTick(vol > 40) -> (b=StockTick(vol < 10) or "
                     "c=StockTick(price > 50))) WITHIN 30 sec] PARTITION BY symbol;",
    "group_and_pattern": "SELECT a.price AS p, b.vol AS bv, c.price AS cp FROM PATTERN "
                         "[every (a=StockTick(vol > 40) -> (b=StockTick(vol < 20) and "
                         "c=StockTick(price > 50))) WITHIN 30 sec] PARTITION BY symbol;",
    # no every: each key's first match only (a key done for good keeps a state row)
    "once_pattern": "SELECT a.price AS p, b.vol AS bv FROM PATTERN [a=StockTick(vol > 40) "
                    "-> b=StockTick(vol < 10) WITHIN 30 sec] PARTITION BY symbol;",
    "timer_absence": "SELECT a.price AS p FROM PATTERN [every a=StockTick(vol > 40) -> "
                     "(timer:interval(3 sec) and not b=StockTick(vol < 10))] PARTITION BY symbol;",
    "match_recognize": "SELECT * FROM StockTick MATCH_RECOGNIZE ( PARTITION BY symbol MEASURES "
                       "A.price AS top, last(B.price) AS bottom, count(B.price) AS falls "
                       "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B{2,} C) WITHIN 20 sec "
                       "DEFINE B AS B.price < prev(B.price), C AS C.price > prev(C.price) );",
    # SQL:2016's greedy matches, held in the key's state (across batches, through key
    # moves) until a row or the input's end decides them
    "match_recognize_held": "SELECT * FROM StockTick MATCH_RECOGNIZE ( PARTITION BY symbol "
                            "MEASURES FIRST(A.price) AS top, LAST(B.price) AS bottom, "
                            "LAST(C.price) AS back, count(*) AS n PATTERN (A B+ C+) "
                            "DEFINE B AS B.price < prev(B.price), "
                            "C AS C.price > prev(C.price) );",
    # every row of each match, numbered per key, navigation and an aggregate in DEFINE
    "match_recognize_all_rows": "SELECT * FROM StockTick MATCH_RECOGNIZE ( PARTITION BY "
                                "symbol MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS cl, "
                                "PREV(FIRST(B.price)) AS before_b, FINAL avg(B.vol) AS v "
                                "ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A B+ C?) "
                                "DEFINE B AS avg(B.vol) < 30 AND B.price < PREV(B.price), "
                                "C AS C.price > A.price );",
}


LAYOUTS = [(1, 400, "kg"), (3, 37, "kg"), (3, 37, "dlb-h")]


def _options(strategy: str) -> dict:
    """A key-moving strategy moves keys at every batch it can (so every kind of state is
    exported and imported mid-stream); KG needs nothing."""
    return {"threshold": 5.0, "moves": "always"} if strategy != "kg" else {}


def _module_text(names: list[str]) -> str:
    return SCHEMA + "\n".join(f"@Name('{name}') {RULES[name]}" for name in names)


def _by_rule(events: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for event in events:
        grouped.setdefault(event["rule"], []).append(event)
    return grouped


# every construct keyed by symbol, and the one keyed by sector (a module has one key)
MODULES = {"by_symbol": sorted(name for name in RULES if name != "unique_groupwin"),
           "by_sector": ["unique_groupwin"]}


@pytest.mark.parametrize(("engines", "batch_size", "strategy"), LAYOUTS)
@pytest.mark.parametrize("group", sorted(MODULES))
def test_constructs_in_one_module_on_spark_equal_the_reference(
        spark, spark_events, reference_events, group, engines, batch_size, strategy):
    """Oracle: the reference evaluator over the same module and input. Every rule must emit
    on the sample (none passes on empty output), and each rule's events are compared on
    their own, so a failure names the constructs that differ."""
    names = MODULES[group]
    module = compile_text(_module_text(names), group)
    expected = _by_rule(reference_events(module, TICKS))
    assert sorted(expected) == names, "every rule must produce output on the sample"
    got = _by_rule(spark_events(module, TICKS, engines=engines, batch_size=batch_size,
                                strategy=strategy, **_options(strategy)))
    differ = [name for name in names if got.get(name) != expected[name]]
    assert not differ, f"Spark differs from the reference on {differ}"


@pytest.mark.slow
@pytest.mark.parametrize(("engines", "batch_size", "strategy"), LAYOUTS)
@pytest.mark.parametrize("name", sorted(RULES))
def test_construct_on_spark_equals_reference(spark, spark_events, reference_events, name,
                                             engines, batch_size, strategy):
    """Oracle: the reference evaluator, one construct per job (slow: the module test above
    runs them all; this one isolates a failing construct)."""
    module = compile_text(SCHEMA + RULES[name], name)
    expected = reference_events(module, TICKS)
    assert expected, "the rule must produce output on the sample"
    assert spark_events(module, TICKS, engines=engines, batch_size=batch_size,
                        strategy=strategy, **_options(strategy)) == expected
