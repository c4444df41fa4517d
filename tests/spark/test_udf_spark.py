"""User functions on Spark (``cep run --udf``): the workers import the file, the events
equal the reference runner's, and a function that raises dead-letters exactly the
records it raised on, once each, with its message (``cep.engine.udf.shipment``,
``cep.spark.output.udf_seen``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from support.spark_runs import reference
from support.udf_sample import FAILING, RULES, UDF_TEXT, letters, module_name

from cep.engine.udf.files import load_udf_files
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text

DATA = Path(__file__).parent.parent / "data"


def _loud_rows(source: Path) -> list[tuple]:
    """The 'loud' rule's rows computed from the input by hand: each English tweet's id,
    shout(text), score(retweets), initial(user), twice(retweets), as
    support.udf_sample's functions define them (NULL where they raise)."""
    out = []
    for line in source.read_text().splitlines():
        t = json.loads(line)
        if t["lang"] == "en":
            out.append((t["id"], None if "wow" in t["text"] else t["text"].upper() + "!",
                        None if t["retweets"] == 42 else float(np.log1p(t["retweets"]) * 10),
                        t["user"][:1], 2 * t["retweets"]))
    return out


def test_udfs_on_spark_equal_the_reference_and_dead_letter_the_same_records(spark, tmp_path):
    udf_file = tmp_path / f"{module_name('udfs_spark_sample')}.py"
    udf_file.write_text(UDF_TEXT)
    load_udf_files([udf_file])
    module = compile_text(RULES, "loud.epl")
    source = str(DATA / "tweets_small.jsonl")
    local_dead, spark_dead = tmp_path / "local.dead.jsonl", tmp_path / "spark.dead.jsonl"
    local = run(module, RunConfig(source, runner="local", output=Output(collect=True),
                                  dead_letter=str(local_dead)))
    on_spark = run(module, RunConfig(source, output=Output(collect=True), engines=3,
                                     batch_size=20, master="local[2]", progress=False,
                                     dead_letter=str(spark_dead)))
    # the local runner is the reference evaluator, so the oracle of its 'loud' rows is
    # the functions' own Python over the input file (NULL where one raised)
    assert [(r["id"], r["loud"], r["score"], r["u"], r["rt2"]) for r in local.records
            if r["rule"] == "loud"] == _loud_rows(Path(source))
    assert on_spark.records == local.records  # scalar and vectorised, event for event
    assert len(on_spark.metrics) >= 4  # a window's rows re-evaluated in later batches
    assert letters(local_dead) == letters(spark_dead) == FAILING  # once each
    failed = sum(map(len, FAILING.values()))
    assert on_spark.totals["udf_failures"] == local.totals["udf_failures"] == failed


def test_python_api_ships_functions_registered_in_process(spark, tmp_path):
    """``cep.compile_rules(..., udf=[...])`` loads files as ``--udf`` does, and functions
    registered in this process from an importable module (here ``support``, a directory
    Spark's workers do not have on their path) reach the workers too."""
    from support import udf_functions

    import cep
    from cep.engine.functions import register_udf

    register_udf("spaced", udf_functions.spaced, ["string"], "string")
    register_udf("halved", udf_functions.halved, ["int"], "double", vectorized=True)
    udf_file = tmp_path / f"{module_name('udfs_api_sample')}.py"
    udf_file.write_text(UDF_TEXT)
    rules = cep.compile_rules(
        "CREATE SCHEMA Tweet (id long, ts timestamp, user string, lang string, text string,"
        " retweets int, topic string) TIMESTAMP ts;\n"
        "@Name('r') SELECT id, spaced(topic) AS t, halved(retweets) AS h, shout(text) AS s "
        "FROM Tweet(retweets > 20);", udf=[udf_file])
    source = str(DATA / "tweets_small.jsonl")
    local = rules.run(source, runner="local")
    assert list(local["t"][:1]) == ["s p o r t"] and local["s"].isna().any()
    on_spark = rules.run(source, runner="spark", engines=2, batch_size=30,
                         master="local[2]")
    pd.testing.assert_frame_equal(on_spark, local)
    assert rules.last_run is not None and rules.last_run.udf_failures > 0


CHAIN_UDFS = '''
import numpy as np
from cep.engine.functions import register_udf


def grade(symbol):
    if symbol == "S3":
        raise LookupError("no grade for " + symbol)
    return symbol.lower()


def ratio(price, mean):
    if (price > 25).any():
        raise OverflowError("price above 25")
    return price / mean


register_udf("grade", grade, ["string"], "string")
register_udf("ratio", ratio, ["double", "double"], "double", vectorized=True)
'''


def test_udfs_in_a_chain_s_later_stage_on_spark_equal_the_reference(spark, tmp_path):
    """A later stage's stateless rule (run by the chain's reading tasks) and its engine
    rule call raising functions: the events and the dead letters (the input records the
    complex events came from) equal the reference runner's."""
    from support.stock_ticks import SCHEMA, SPIKE, TICKS, write_ticks

    udf_file = tmp_path / f"{module_name('udfs_chain_sample')}.py"
    udf_file.write_text(CHAIN_UDFS)
    load_udf_files([udf_file])
    module = compile_text(SCHEMA + SPIKE + (
        "@Name('graded') SELECT symbol, grade(symbol) AS g, ratio(price, mean) AS r "
        "FROM Spike;\n"
        "@Name('hot') SELECT sector, count(*) AS spikes, max(ratio(price, mean)) AS top "
        "FROM Spike#groupwin(sector)#time(5 sec);\n"), "chain.epl")
    ticks = write_ticks(tmp_path / "ticks.jsonl", TICKS)
    local_dead, spark_dead = tmp_path / "local.dead.jsonl", tmp_path / "spark.dead.jsonl"
    local = run(module, RunConfig(str(ticks), runner="local", output=Output(collect=True),
                                  dead_letter=str(local_dead)))
    on_spark = run(module, RunConfig(str(ticks), output=Output(collect=True), engines=3,
                                     batch_size=37, master="local[2]", progress=False,
                                     dead_letter=str(spark_dead)))
    assert on_spark.records == local.records
    found = letters(local_dead)
    reasons = set().union(*found.values())
    assert {"grade() raised LookupError: no grade for S3",
            "ratio() raised OverflowError: price above 25"} <= reasons
    assert letters(spark_dead) == found


def test_sigkill_then_restart_dead_letters_each_failing_record_once(tmp_path):
    """``cep run --udf`` SIGKILLed inside a batch whose tasks have written udf_error
    letters (keys moving through MongoDB), and restarted from its checkpoint with the
    same file: the reference's events, and each failing record's letters once."""
    from support.faults import cep_run, finish, in_flight, kill_group, start, wait_until

    rules, funcs = tmp_path / "loud.epl", tmp_path / f"{module_name('udfs_kill_sample')}.py"
    # a length window keeps the failing records, so batches after the restart evaluate
    # them again: only what the killed run delivered, remembered, keeps them once
    text = RULES.replace("#time(10 min)", "#length(40)")
    rules.write_text(text)
    funcs.write_text(UDF_TEXT)
    load_udf_files([funcs])
    module = compile_text(text, "loud.epl")
    source = str(DATA / "tweets_small.jsonl")
    expected = reference(module, source)
    run_dir, dead = tmp_path / "run", tmp_path / "dead.jsonl"
    command = cep_run(run_dir, "--batch-size", "10", "--udf", str(funcs),
                      "--dead-letter", str(dead), rule=rules, source=source)
    proc = start(command, tmp_path / "killed")

    def writing_letters() -> bool:
        return any(in_flight(run_dir, b) and any(
            (run_dir / "dead" / f"batch-{b:07d}").glob("udf-*.jsonl")) for b in range(3, 12))

    wait_until(writing_letters, proc, "a later batch's udf_error letters written")
    kill_group(proc)
    resumed = finish(command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    lines = dead.read_text().splitlines()
    assert len(lines) == len(set(lines)) == sum(map(len, FAILING.values()))
    assert letters(dead) == FAILING
    from support.faults import events

    assert events(Path(f"{run_dir}.jsonl")) == expected
