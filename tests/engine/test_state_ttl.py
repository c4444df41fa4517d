"""The state time-to-live bounds the state no rule bounds itself, and nothing else.

With a TTL, a ``#keepall`` window is read and retained as ``#time(ttl)``, and a pattern
without WITHIN runs as if it had ``WITHIN ttl``; windows and patterns with a bound of their
own give the same events with or without it. Eviction is checked on the engine's retained
state itself, over a long stream, not only on the output.

Oracles: the reference evaluator over the rule the docs say a TTL makes of it
(``#time(ttl)`` for ``#keepall``, ``WITHIN ttl`` for a pattern), or the rule without
the TTL: shared code, so these show the rewriting, not that ``#time`` or WITHIN is
right (``#time`` against an independent reading: ``tests/semantics/test_window_oracle.py``).
The inputs are fixed and their outputs asserted non-empty where compared (row counts,
``len(with_ttl) == 20``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from support.samples import EXAMPLES

from cep.engine import compressed
from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.patterns.rule import PatternOperator
from cep.engine.table import SEQ, Table
from cep.engine.windows.rule import WindowOperator
from cep.io.inputs import load_inputs
from cep.reference import batch_watermarks, input_watermark, run_batch, run_reference
from grammar.check import compile_module
from grammar.compile import compile_file, compile_text
from grammar.errors import RuleError
from grammar.parser import parse, parse_duration

ROOT = Path(__file__).parent.parent.parent
SCHEMA = "CREATE SCHEMA T (k string, x long, ts timestamp) TIMESTAMP ts;\n"
SECOND = 1_000_000
TTL = 10 * SECOND


def stream(n: int, keys: int = 3, step_us: int = SECOND, late_every: int = 0) -> dict:
    """``n`` events, keys round-robin, ``x`` cycling 1, 2, 3, one every ``step_us``; with
    ``late_every`` every such event is an hour late (event time going backwards)."""
    seq = np.arange(n)
    ts = seq * step_us
    if late_every:
        ts = np.where(seq % late_every == late_every - 1, ts - 3600 * SECOND, ts)
    return {"T": {SEQ: seq, "k": np.array([f"k{i % keys}" for i in range(n)], dtype=object),
                  "x": seq % 3 + 1, "ts": ts}}


def run(text: str, tables: dict[str, Table], ttl: int | None = None,
        batch_size: int | None = None) -> list[dict]:
    module = compile_text(SCHEMA + text, "<test>", state_ttl_us=ttl)
    return output_records(run_reference(module, tables, batch_size))


def strip_rule(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "rule"} for r in rows]


KEEPALL = "SELECT k, count(*) AS n, min(x) AS lo, first(ts) AS since FROM T#groupwin(k)#keepall;"
TIME = "SELECT k, count(*) AS n, min(x) AS lo, first(ts) AS since FROM T#groupwin(k)#time(10 sec);"


@pytest.mark.parametrize("late_every", [0, 7])
@pytest.mark.parametrize("batch_size", [None, 1, 13])
def test_keepall_with_a_ttl_is_a_time_window(late_every: int, batch_size: int | None) -> None:
    tables = stream(200, late_every=late_every)
    with_ttl = run(KEEPALL, tables, TTL, batch_size)
    assert strip_rule(with_ttl) == strip_rule(run(TIME, tables))
    assert max(r["n"] for r in with_ttl) < 10  # without it the count reaches 67
    assert max(r["n"] for r in run(KEEPALL, tables)) == 67


def test_a_joined_keepall_with_a_ttl_is_a_time_window() -> None:
    join = ("SELECT LE.x AS x, count(*) AS n, max(TW.ts) AS newest FROM T#lastevent AS LE, "
            "T#groupwin(k)#{} AS TW WHERE LE.k = TW.k;")
    tables = stream(120, late_every=9)
    assert run(join.format("keepall"), tables, TTL) == run(join.format("time(10 sec)"), tables)


def _retained_rows(text: str, ttl: int | None, batches: int) -> list[int]:
    """Rows the engine holds after each batch of a long stream of 5 keys."""
    module = compile_text(SCHEMA + text, "<test>", state_ttl_us=ttl)
    engine = Engine(module)
    (_, op), = engine.operators
    assert isinstance(op, WindowOperator)
    tables = stream(batches * 100, keys=5)["T"]
    clocks = _clocks(module, tables, batches)
    sizes = []
    for b in range(batches):
        part = {name: col[b * 100:(b + 1) * 100] for name, col in tables.items()}
        run_batch(module, engine, {"T": part}, clocks[b])
        sizes.append(len(op.window.rows[SEQ]))
    return sizes


def _clocks(module, table: Table, batches: int) -> list:
    """The watermark through each batch of 100 events (the input's end after the last)."""
    return batch_watermarks(input_watermark(module, {"T": table}),
                            [(b * 100, (b + 1) * 100) for b in range(batches)])


def test_keepall_state_is_evicted_and_stays_flat() -> None:
    sizes = _retained_rows(KEEPALL, TTL, 50)
    assert max(sizes) <= 10 * 5  # 10 s of one event a second, over 5 keys
    assert sizes[-2] == sizes[10]
    assert sizes[-1] == 0  # the end of the input lets all time pass: every row expires
    assert _retained_rows(KEEPALL, None, 50)[-1] == 5000  # what it bounds


@pytest.mark.parametrize("rule", sorted(EXAMPLES))
def test_rules_with_bounds_of_their_own_are_unchanged(rule: str) -> None:
    """Every example rule is bounded (#length, #time, WITHIN): even a TTL of one
    microsecond, far below their windows, changes none of their events."""
    plain = compile_file(ROOT / "rules" / rule)
    tiny = compile_file(ROOT / "rules" / rule, state_ttl_us=1)
    assert tiny == plain
    tables = load_inputs(plain, [str(ROOT / "tests" / "data" / EXAMPLES[rule])], None).tables
    assert output_records(run_reference(tiny, tables)) == output_records(
        run_reference(plain, tables))


UNBOUNDED = "SELECT a.x AS ax, b.x AS bx FROM PATTERN [every a=T(x = 1) -> b=T(x = 3)] " \
    "PARTITION BY k;"


def test_a_pattern_without_within_runs_as_if_it_had_within_ttl() -> None:
    tables = stream(400, keys=2)
    cycle = tables["T"][SEQ] % 40  # per key: x = 1 at 0 s and 15 s, x = 3 at 19 s
    tables["T"]["x"] = np.select([np.isin(cycle, (0, 1, 30, 31)), np.isin(cycle, (38, 39))],
                                 [1, 3], 2)
    with_ttl = run(UNBOUNDED, tables, TTL)
    assert len(with_ttl) == 20  # 10 cycles, 2 keys: each cycle only its later x = 1 matches
    within = run(UNBOUNDED.replace("]", " WITHIN 10 sec]"), tables)
    assert with_ttl == within
    assert len(with_ttl) < len(run(UNBOUNDED, tables))
    # a WITHIN of its own wins over the TTL
    assert run(UNBOUNDED.replace("]", " WITHIN 1 min]"), tables, TTL) == \
        run(UNBOUNDED.replace("]", " WITHIN 1 min]"), tables)


def _pattern_state_bytes(ttl: int | None, batches: int) -> list[int]:
    """Bytes of the engine's snapshot before compression (one key, one pattern rule:
    that key's pattern state) after each batch: x = 1 starts a partial match that only
    x = 3 completes, and there never is one."""
    module = compile_text(SCHEMA + UNBOUNDED, "<test>", state_ttl_us=ttl)
    engine = Engine(module)
    (_, op), = engine.operators
    assert isinstance(op, PatternOperator)
    tables = stream(batches * 100, keys=1)["T"]
    tables["x"] = np.ones(len(tables[SEQ]), dtype=np.int64)
    clocks = _clocks(module, tables, batches)
    sizes = []
    for b in range(batches):
        part = {name: col[b * 100:(b + 1) * 100] for name, col in tables.items()}
        run_batch(module, engine, {"T": part}, clocks[b])
        assert engine.keys() == {"k0"} or b == batches - 1  # the end frees what expires
        sizes.append(compressed.raw_length(engine.snapshot()))
    return sizes


def test_pattern_partial_matches_are_evicted_and_stay_flat() -> None:
    with_ttl = _pattern_state_bytes(TTL, 30)
    assert max(with_ttl[5:]) < 1.2 * with_ttl[5] and with_ttl[-2] < 10_000
    without = _pattern_state_bytes(None, 30)
    assert without[-1] > 20 * with_ttl[-2]


def test_the_ttl_needs_event_time() -> None:
    untimed = "CREATE SCHEMA U (k string, x long);\n"
    for rule in ("SELECT count(*) AS n FROM U#groupwin(k)#keepall;",
                 "SELECT a.x AS x FROM PATTERN [every a=U -> b=U] PARTITION BY k;"):
        compile_text(untimed + rule)  # fine without a TTL
        with pytest.raises(RuleError, match="state time-to-live needs event time"):
            compile_text(untimed + rule, "<test>", state_ttl_us=TTL)
    # bounded ones do not need it
    compile_text(untimed + "SELECT count(*) AS n FROM U#groupwin(k)#length(3);",
                 state_ttl_us=TTL)
    with pytest.raises(ValueError, match="positive"):
        compile_module(parse(SCHEMA + KEEPALL), state_ttl_us=0)


@pytest.mark.parametrize(("text", "micros"), [
    ("10 min", 600 * SECOND), ("10min", 600 * SECOND), ("1 hour 30 min", 5400 * SECOND),
    ("90 sec", 90 * SECOND), ("1.5 seconds", 1_500_000), ("2 days", 172_800 * SECOND),
    ("250 ms", 250_000), ("1 usec", 1),
])
def test_durations_for_the_option(text: str, micros: int) -> None:
    assert parse_duration(text) == micros


@pytest.mark.parametrize("text", ["", "10", "ten min", "10 parsecs", "0 sec", "10 mins",
                                  "-5 sec", "0.5 usec", "1 min garbage"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="time period.*" + re.escape(repr(text))):
        parse_duration(text)
