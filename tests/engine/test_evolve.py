"""An engine's state carried onto a changed rule set (``Engine.evolved``), whole or key
by key: a key's parcel written under one rule set version and opened by an engine of
the next (a key that moved while the rules changed, DLB's case) continues exactly as
the key does in an engine that changed as a whole."""

from __future__ import annotations

import json
import random

import pytest

from cep.engine.engine import Engine
from cep.engine.output import output_records
from cep.engine.table import SEQ, take
from cep.io.inputs import load_inputs
from cep.reference import batch_watermarks, input_watermark, run_batch
from grammar.compile import compile_text
from grammar.rule_set import Change, versions

START = """CREATE SCHEMA Reading (sensor string, ts timestamp, temp double) TIMESTAMP ts;
CREATE VARIABLE double limit = 31.0;
@Name('hot') SELECT sensor, avg(temp) AS a FROM Reading#groupwin(sensor)#length(3)
GROUP BY sensor HAVING avg(temp) > limit;
@Name('rise') SELECT a.sensor AS sensor, b.temp AS t
FROM PATTERN [every a=Reading -> b=Reading(temp > a.temp + 4)] PARTITION BY sensor;
@Name('gone') SELECT sensor, count(*) AS n FROM Reading#groupwin(sensor)#length(2)
GROUP BY sensor;
"""
CHANGE = """CREATE VARIABLE double limit = 29.0;
@Name('new') SELECT sensor, min(temp) AS m FROM Reading#groupwin(sensor)#length(2)
GROUP BY sensor;
"""


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    rng = random.Random(5)
    path = tmp_path_factory.mktemp("ev") / "r.jsonl"
    path.write_text("".join(json.dumps(
        {"sensor": f"s{rng.randrange(4)}", "ts": f"2026-03-01T10:{i // 6:02d}:{i % 6}0Z",
         "temp": round(rng.uniform(25, 37), 2)}) + "\n" for i in range(120)))
    start = compile_text(START, "start.epl")
    every = versions(start, [Change(1, "deploy", "c.epl", CHANGE),
                             Change(2, "undeploy", names=("gone",))])
    table = load_inputs(start, [str(path)], None).tables["Reading"]
    cut = int(sorted(table[SEQ])[60])
    bounds = [(0, cut), (cut, int(table[SEQ].max()) + 1)]
    clocks = batch_watermarks(input_watermark(start, {"Reading": table}), bounds)
    parts = [{"Reading": take(table, (table[SEQ] >= lo) & (table[SEQ] < hi))}
             for lo, hi in bounds]
    return start, every[2].module, parts, clocks


def test_a_parcel_of_the_old_rules_continues_in_an_engine_of_the_new(halves):
    start, changed, parts, clocks = halves
    whole = Engine(start)
    run_batch(start, whole, parts[0], clocks[0])
    whole, kinds = whole.evolved(changed, 2)
    assert kinds == {"hot": "compatible", "rise": "kept", "new": "added"}
    expected = output_records(run_batch(changed, whole, parts[1], clocks[1]))
    sender = Engine(start)
    run_batch(start, sender, parts[0], clocks[0])
    parcel = sender.export_keys(sorted(sender.keys()))
    receiver = Engine(changed, 2)
    with pytest.raises(ValueError, match="rule set version 0, not 2"):
        receiver.open_parcel(parcel)  # without the old rules it cannot be read
    receiver.adopt(receiver.open_parcel(parcel, {0: start, 2: changed}.__getitem__))
    got = output_records(run_batch(changed, receiver, parts[1], clocks[1]))
    assert got == expected and {r["rule"] for r in got} >= {"hot", "rise", "new"}


def test_a_removed_rule_leaves_no_state_and_a_snapshot_says_its_version(halves):
    start, changed, parts, clocks = halves
    engine = Engine(start)
    run_batch(start, engine, parts[0], clocks[0])
    engine = engine.evolved(changed, 2)[0]
    assert [rule.name for rule, _ in engine.operators] == ["hot", "rise", "new"]
    blob = engine.snapshot()
    with pytest.raises(ValueError, match="rule set version 2, not 0"):
        Engine(changed).restore(blob)
    again = Engine(changed, 2)
    again.restore(blob)
    assert again.keys() == engine.keys()
