"""The semantics of rules that change while a job runs, on the reference evaluator
(``reference_run(..., changes=...)``), for any seq at which a change starts and any
batch size: rules that did not change have exactly the events of an uninterrupted run;
a new rule starts empty at its first seq (its events are those of the rule run alone over
the input from there); a compatible replacement (a HAVING threshold through a variable)
keeps its state (from its first seq on its events are those of the new rule run from the
start); an incompatible replacement starts empty; a removed rule stops there.

Oracle: plain runs of the reference evaluator without any change (the whole input, the
input from the first seq on, the other threshold), cut and joined as docs/language.md
says each kind of change behaves. It never goes through ``Engine.evolved`` or the
change log, which is what is checked, but it shares every operator: a wrong window
would be wrong on both sides. The share of examples in which the part of a rule after
the change is empty is measured and bounded per kind of change."""

from __future__ import annotations

import json
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shares import EmptyShare

from cep.engine.output import output_records
from cep.engine.table import SEQ, take
from cep.io.inputs import load_inputs
from cep.reference import Deployed, log_watermark, reference_run
from grammar.compile import compile_text
from grammar.rule_set import Change, versions

START = """
CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean) TIMESTAMP ts;
CREATE VARIABLE double limit = 31.0;
@Name('overheating')
SELECT sensor, avg(temp) AS avg_temp, count(*) AS n
FROM Reading(ok)#groupwin(sensor)#length(4) GROUP BY sensor HAVING avg(temp) > limit;
@Name('rising')
SELECT a.sensor AS sensor, a.temp AS low, b.temp AS high
FROM PATTERN [every a=Reading -> b=Reading(temp > a.temp + 3)] PARTITION BY sensor;
@Name('per_window')
SELECT sensor, count(*) AS n FROM Reading#groupwin(sensor)#time_batch(2 min)
GROUP BY sensor;
"""
ADD = """
@Name('falling')
SELECT a.sensor AS sensor, a.temp AS high, b.temp AS low
FROM PATTERN [every a=Reading -> b=Reading(temp < a.temp - 3)] PARTITION BY sensor;
"""
REPLACE = """
@Name('rising')
SELECT a.sensor AS sensor, b.temp AS high
FROM PATTERN [every a=Reading -> b=Reading(temp > a.temp + 5)] PARTITION BY sensor;
"""


def _input(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("readings")
    rng = random.Random(3)
    lines = [json.dumps({"sensor": f"s{rng.randrange(5)}",
                         "ts": f"2026-03-01T10:{i // 6:02d}:{i % 6 * 10:02d}Z",
                         "temp": round(rng.uniform(25, 37), 2), "ok": rng.random() > 0.1})
             for i in range(300)]
    path = folder / "readings.jsonl"
    path.write_text("\n".join(lines) + "\n")
    module = compile_text(START, "start.epl")
    loaded = load_inputs(module, [str(path)], None)
    return module, loaded


def _events(module, loaded, changes=None, batch_size=None, only=None) -> list[dict]:
    tables = loaded.tables
    if only is not None:  # the input from seq ``only`` on
        tables = {n: take(t, t[SEQ] >= only) for n, t in tables.items()}
    clock = log_watermark(module, loaded.clock, loaded.end_seq)
    return output_records(reference_run(module, tables, batch_size, clock,
                                        changes=changes).output)


def _rule(records: list[dict], name: str) -> list[dict]:
    return [r for r in records if r["rule"] == name]


@settings(max_examples=20, deadline=None)
@given(at=st.integers(1, 299), batch=st.sampled_from([None, 7, 50]))
def _each_kind_of_change_means_what_the_docs_say(tmp_path_factory, at, batch):
    module, loaded = _input(tmp_path_factory)
    seqs = np.sort(loaded.tables["Reading"][SEQ])
    first = int(seqs[at])
    every = versions(module, [Change(1, "deploy", "add.epl", ADD),
                              Change(2, "deploy", "limit.epl",
                                     "CREATE VARIABLE double limit = 29.5;"),
                              Change(3, "deploy", "replace.epl", REPLACE),
                              Change(4, "undeploy", names=("falling",))])
    assert all(v.refused is None for v in every)
    # versions 1-3 at the same seq, version 4 (the removal) 40 events later
    later = int(seqs[min(at + 40, len(seqs) - 1)])
    changes = [Deployed(1, first, every[1].module), Deployed(2, first, every[2].module),
               Deployed(3, first, every[3].module), Deployed(4, later, every[4].module)]
    got = _events(module, loaded, changes, batch)
    never = _events(module, loaded)
    assert _rule(got, "per_window") == _rule(never, "per_window"), "untouched"
    SHARES["untouched"].note(_rule(never, "per_window"))
    # added: empty at its first seq, so the rule alone over the input from there
    falling = compile_text(START.split("CREATE VARIABLE")[0] + ADD, "f.epl")
    expected = [r for r in _events(falling, loaded, only=first)
                if r["rule"] == "falling" and r["seq"] < later]
    assert _rule(got, "falling") == expected
    SHARES["added"].note(expected)
    # compatible: the state kept, so from its first seq the new threshold's run
    lower = compile_text(START.replace("= 31.0", "= 29.5"), "start.epl")
    kept = [r for r in _rule(_events(lower, loaded), "overheating") if r["seq"] >= first]
    assert _rule(got, "overheating") == (
        [r for r in _rule(never, "overheating") if r["seq"] < first] + kept)
    SHARES["kept"].note(kept)
    # incompatible: empty at its first seq
    replaced = compile_text(START.replace(START[START.index("@Name('rising')"):
                                                START.index("@Name('per_window')")],
                                          REPLACE), "r.epl")
    fresh = _rule(_events(replaced, loaded, only=first), "rising")
    assert _rule(got, "rising") == [r for r in _rule(never, "rising") if r["seq"] < first] + fresh
    SHARES["replaced"].note(fresh)


#: per kind of change, the examples whose part after the change was empty
SHARES: dict[str, EmptyShare] = {}


def test_each_kind_of_change_means_what_the_docs_say(tmp_path_factory):
    SHARES.update((n, EmptyShare(f"rule change, {n}"))
                  for n in ("untouched", "added", "kept", "replaced"))
    _each_kind_of_change_means_what_the_docs_say(tmp_path_factory)
    for share in SHARES.values():
        share.check(0.4)


def test_a_change_after_the_last_event_applies_to_the_end_of_the_input(tmp_path_factory):
    """A version that starts after every event still gets the input's end (where a
    bounded input lets all time pass), as Spark's last batch does."""
    module, loaded = _input(tmp_path_factory)
    end = int(loaded.tables["Reading"][SEQ].max()) + 1
    every = versions(module, [Change(1, "undeploy", names=("per_window",))])
    got = _events(module, loaded, [Deployed(1, end, every[1].module)])
    never = _events(module, loaded)
    assert _rule(got, "per_window") == [r for r in _rule(never, "per_window")
                                        if r["seq"] < end]
    assert len(_rule(got, "per_window")) < len(_rule(never, "per_window"))
