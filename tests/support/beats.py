"""Heartbeats for the timer tests: devices that beat and go silent, and a rule of every
kind of timer (docs/semantics-event-time.md)."""

from __future__ import annotations

import numpy as np

RULES = """
CREATE SCHEMA Beat (device string, ts timestamp, v int) TIMESTAMP ts;
@Name('silent')
SELECT a.device AS device FROM PATTERN [every a=Beat -> (timer:interval(90 sec) and not b=Beat)]
PARTITION BY device;
@Name('minute')
SELECT device, count(*) AS n, sum(v) AS s FROM Beat#groupwin(device)#time_batch(1 min);
@Name('burst')
SELECT device, count(*) AS n FROM Beat#groupwin(device)#time_length_batch(2 min, 4);
@Name('calm')
SELECT device, v FROM Beat#groupwin(device)#length(1) OUTPUT LAST EVERY 45 sec;
@Name('rise')
SELECT a.v AS av, b.v AS bv FROM PATTERN [every a=Beat(v > 5) -> b=Beat(v > a.v) WITHIN 1 min]
PARTITION BY device;
@Name('dip')
SELECT * FROM Beat MATCH_RECOGNIZE (PARTITION BY device MEASURES A.v AS first_v,
  count(B.v) AS falls PATTERN (A B+ C) WITHIN 2 min
  DEFINE B AS B.v < prev(B.v), C AS C.v > A.v);
@Name('recent')
SELECT device, count(*) AS n FROM Beat#groupwin(device)#time(2 min);
"""


MIN = 60_000  # ms
# the heartbeat case: the schema (with a LATENESS clause to format in or not)
# and the rule for a device gone silent
BEAT = "CREATE SCHEMA Beat (device string, ts timestamp) TIMESTAMP ts{};\n"
SILENT = ("@Name('silent')\nSELECT a.device AS device FROM PATTERN "
          "[every a=Beat -> (timer:interval(5 min) and not b=Beat)] PARTITION BY device;")


def heartbeats() -> list[dict]:
    """d1 and d3 beat on every minute up to 00:30, d2 at half past each minute up to
    00:10:30, then stops."""
    out = []
    for m in range(31):
        out.append({"device": "d1", "ts": m * MIN})
        out.append({"device": "d3", "ts": m * MIN})
        if m <= 10:
            out.append({"device": "d2", "ts": m * MIN + 30_000})
    return out


def beats(n: int = 400, devices: int = 12, seed: int = 5) -> list[dict]:
    """Devices beating about every 10 s in all, each going silent for good at its own
    time (some halfway), and now and then a beat a few seconds out of order."""
    rng = np.random.default_rng(seed)
    stops = rng.integers(n // 3, n + n // 2, devices)
    out, t = [], 0
    for i in range(n):
        t += int(rng.integers(2_000, 18_000))
        alive = np.flatnonzero(stops > i)
        device = int(rng.choice(alive)) if len(alive) else 0
        late = int(rng.integers(1_000, 8_000)) if rng.random() < 0.05 else 0
        out.append({"device": f"d{device}", "ts": t - late, "v": int(rng.integers(0, 10))})
    return out
