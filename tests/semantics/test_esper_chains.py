"""INSERT INTO from windowed, joined and pattern rules: complex events feeding rules of a
later stage, on that stage's own key (hand-checked event by event)."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.errors import RuleError

SEC = 1000
SCHEMA = ("CREATE SCHEMA StockTick (symbol string, sector string, ts timestamp, "
          "price double) TIMESTAMP ts;\n")
# IBM and MSFT are tech, XOM energy; prices jump now and then
TICKS = [
    ("IBM", "tech", 0, 10.0), ("MSFT", "tech", 1, 20.0), ("XOM", "energy", 2, 30.0),
    ("IBM", "tech", 3, 10.0), ("IBM", "tech", 4, 13.0), ("MSFT", "tech", 5, 26.0),
    ("XOM", "energy", 6, 30.0), ("IBM", "tech", 7, 10.0), ("XOM", "energy", 8, 39.0),
    ("MSFT", "tech", 9, 21.0), ("IBM", "tech", 10, 14.0), ("MSFT", "tech", 11, 28.0),
]
SPIKE = ("INSERT INTO Spike SELECT symbol, sector, ts, price, avg(price) AS mean "
         "FROM StockTick#groupwin(symbol)#length(3) HAVING price > 1.1 * avg(price);\n")


def ticks():
    return [dict(symbol=s, sector=c, ts=t * SEC, price=p) for s, c, t, p in TICKS]


def run(run_epl, text):
    out = run_epl(text, ticks())
    for size in (1, 2, 5):
        assert run_epl(text, ticks(), batch_size=size) == out
    return out


def test_window_rule_feeds_a_window_rule_on_another_key(run_epl):
    text = SCHEMA + SPIKE + ("@Name('hot') SELECT sector, count(*) AS spikes, max(price) AS top "
                             "FROM Spike#groupwin(sector)#time(5 sec);")
    out = run(run_epl, text)
    # spikes (price above 1.1 × the average of the symbol's last three): IBM 13 at 4 s
    # (avg 11), MSFT 26 at 5 s (avg 23), XOM 39 at 8 s (avg 33), IBM 14 at 10 s (avg 12.3),
    # MSFT 28 at 11 s (avg 25)
    assert [(r["rule"], r["key"], r["ts"][17:19], r["spikes"], r["top"]) for r in out] == [
        ("hot", "tech", "04", 1, 13.0),
        ("hot", "tech", "05", 2, 26.0),
        ("hot", "energy", "08", 1, 39.0),
        ("hot", "tech", "10", 1, 14.0),   # the window (5 s, 10 s] holds 14 only
        ("hot", "tech", "11", 2, 28.0),
    ]
    assert {r["rule"] for r in out} == {"hot"}  # the inserting rule outputs nothing


def test_pattern_over_complex_events(run_epl):
    text = SCHEMA + SPIKE + ("@Name('again') SELECT a.symbol AS symbol, a.price AS first, "
                             "b.price AS second FROM PATTERN [every a=Spike -> b=Spike(price > "
                             "a.price) WITHIN 10 sec] PARTITION BY symbol;")
    out = run(run_epl, text)
    assert [(r["symbol"], r["first"], r["second"]) for r in out] == [("IBM", 13.0, 14.0),
                                                                      ("MSFT", 26.0, 28.0)]


def test_pattern_rule_feeds_a_window_rule(run_epl):
    text = SCHEMA + ("INSERT INTO Jump SELECT a.sector AS sector, b.ts AS ts, b.price - a.price "
                     "AS rise FROM PATTERN [every a=StockTick -> b=StockTick(price >= a.price * "
                     "1.25)] PARTITION BY symbol;\n"
                     "@Name('jumps') SELECT sector, count(*) AS n, sum(rise) AS total "
                     "FROM Jump#groupwin(sector)#keepall;")
    out = run(run_epl, text)
    # IBM 10 → 13 (the a's at 0 s and 3 s both complete at 4 s), 10 → 14 at 10 s (a at
    # 7 s); MSFT 20 → 26 at 5 s, 21 → 28 at 11 s; XOM 30 → 39 at 8 s (a's at 2 s and 6 s)
    assert [(r["key"], r["ts"][17:19], r["n"], r["total"]) for r in out] == [
        ("tech", "04", 1, 3.0), ("tech", "04", 2, 6.0), ("tech", "05", 3, 12.0),
        ("energy", "08", 1, 9.0), ("energy", "08", 2, 18.0), ("tech", "10", 4, 16.0),
        ("tech", "11", 5, 23.0)]


def test_join_rule_feeds_a_stateless_rule(run_epl):
    text = SCHEMA + ("INSERT INTO Cheaper SELECT LE.symbol AS symbol, LE.ts AS ts, count(*) AS n "
                     "FROM StockTick#lastevent AS LE, StockTick#groupwin(symbol)#length(3) AS W "
                     "WHERE LE.symbol = W.symbol AND W.price < LE.price;\n"
                     "@Name('above') SELECT symbol, n FROM Cheaper WHERE n >= 2;")
    out = run(run_epl, text)
    # how many of the symbol's previous three ticks were cheaper than this one
    assert [(r["ts"][17:19], r["symbol"], r["n"]) for r in out] == [
        ("04", "IBM", 2), ("08", "XOM", 2), ("10", "IBM", 3), ("11", "MSFT", 3)]


def test_complex_events_feed_stateless_rules_and_keep_their_timestamp():
    module = compile_text(SCHEMA + SPIKE + "@Name('loud') SELECT symbol, price FROM Spike "
                          "WHERE price > 20;")
    assert module.streams["Spike"].timestamp == "ts"
    assert [s.key for s in module.stages] == [None]
    assert [r.name for r in module.stages[0].derived] == ["loud"]
    assert module.inserting_rules() == {"rule1": "Spike"}


def test_misuse():
    with pytest.raises(RuleError, match="would come from two stages"):
        compile_text(SCHEMA + SPIKE + "INSERT INTO Spike SELECT symbol, sector, ts, price, "
                     "price AS mean FROM StockTick;")
    with pytest.raises(RuleError, match="keyed by symbol, but rule 'a' is keyed by sector"):
        compile_text(SCHEMA + SPIKE + "@Name('a') SELECT count(*) AS n FROM "
                     "Spike#groupwin(sector)#length(2);\n@Name('b') SELECT count(*) AS n "
                     "FROM Spike#groupwin(symbol)#length(2);")
