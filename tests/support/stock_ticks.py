"""INSERT INTO chains over generated stock ticks: the rule files and their input, shared
by the Spark chain tests and their restart tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SCHEMA = ("CREATE SCHEMA StockTick (symbol string, sector string, ts timestamp, "
          "price double) TIMESTAMP ts;\n")
SPIKE = ("INSERT INTO Spike SELECT symbol, sector, ts, price, avg(price) AS mean "
         "FROM StockTick#groupwin(symbol)#length(3) HAVING price > 1.1 * avg(price);\n")
DROP = ("@Name('drop') SELECT symbol, price FROM StockTick#groupwin(symbol)#length(2) "
        "HAVING price < 0.9 * avg(price);\n")
HOT = ("@Name('hot') SELECT sector, count(*) AS spikes, max(price) AS top "
       "FROM Spike#groupwin(sector)#time(5 sec);\n")
RULES = {
    # stage 0 keyed by symbol (with an output rule of its own), stage 1 by sector
    "window": SCHEMA + SPIKE + DROP + HOT,
    # three stages: spikes → sectors with several spikes → a rising count per sector
    "three_stages": SCHEMA + SPIKE + DROP + HOT + (
        "INSERT INTO Hot SELECT sector, ts, count(*) AS n FROM Spike#groupwin(sector)"
        "#time(10 sec) HAVING count(*) >= 2;\n"
        "@Name('heating') SELECT a.sector AS sector, a.n AS first, b.n AS second FROM "
        "PATTERN [every a=Hot -> b=Hot(n > a.n) WITHIN 20 sec] PARTITION BY sector;\n"),
    "pattern": SCHEMA + (
        "INSERT INTO Jump SELECT a.sector AS sector, b.ts AS ts, b.price - a.price AS rise "
        "FROM PATTERN [every a=StockTick -> b=StockTick(price >= a.price * 1.25)] "
        "PARTITION BY symbol;\n"
        "@Name('jumps') SELECT sector, count(*) AS n, sum(rise) AS total "
        "FROM Jump#groupwin(sector)#length(4);\n"),
    # stage 1's timers: a sector whose spikes stop (its own last spike's time passes on
    # the watermark, its key seeing no event), and buckets that close on time alone
    "timers": SCHEMA + SPIKE + (
        "@Name('quiet') SELECT a.sector AS sector, a.symbol AS symbol FROM PATTERN "
        "[every a=Spike -> (timer:interval(8 sec) and not b=Spike)] PARTITION BY sector;\n"
        "@Name('spikes') SELECT sector, count(*) AS n FROM Spike#groupwin(sector)"
        "#time_batch(15 sec);\n"),
    # stage 1 has stateless rules only
    "join": SCHEMA + (
        "INSERT INTO Cheaper SELECT LE.symbol AS symbol, LE.ts AS ts, count(*) AS n "
        "FROM StockTick#lastevent AS LE, StockTick#groupwin(symbol)#length(3) AS W "
        "WHERE LE.symbol = W.symbol AND W.price < LE.price;\n"
        "@Name('above') SELECT symbol, n FROM Cheaper WHERE n >= 2;\n"),
}
TICKS = 500


def write_ticks(path: Path, n: int, seed: int = 7) -> Path:
    """Random walks of 12 symbols in 4 sectors, volatile enough for many spikes."""
    rng = np.random.default_rng(seed)
    price = 10.0 + np.arange(12)
    ts = 0
    lines = []
    for _ in range(n):
        s = int(rng.integers(12))
        ts += int(rng.integers(0, 800))
        price[s] = round(max(1.0, price[s] * (1 + rng.normal(0, 0.15))), 2)
        lines.append(json.dumps({"symbol": f"S{s}", "sector": ["tech", "energy", "bank",
                                                                "food"][s % 4],
                                 "ts": ts, "price": float(price[s])}))
    path.write_text("\n".join(lines) + "\n")
    return path
