"""User functions that hang or end their process, on Spark with keys moving
(``cep.engine.udf_isolation`` in every Python worker): the run finishes, each record
they misbehaved on is one dead letter naming the function and the reason, and every
event equals the oracle's: the reference runner with the same functions raising on
those records instead, in its own process (``udf_timeout=0``). Then SIGKILL inside a
batch whose tasks wrote such letters, and a restart: the oracle's events, each letter
once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.udf_isolation_sample import EXIT, HANG, RAISE, RULES, reasons, udf_file
from support.udf_sample import letters

from cep.engine.udf.files import load_udf_files
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text

DATA = Path(__file__).parent.parent / "data"
SOURCE = str(DATA / "skewed" / "tweets.jsonl")  # skewed topics: keys move
SCALAR_ID, VECTOR_ID = 5152, 5181  # English tweets of the busiest topic, mid-input
LIMIT = 2.0


def _offsets() -> dict[int, int]:
    found, offset = {}, 0
    for line in Path(SOURCE).read_text().splitlines(keepends=True):
        found[json.loads(line)["id"]] = offset
        offset += len(line.encode())
    return found


def _oracle(tmp_path: Path):
    """The rules with the functions raising on the two records, in-process."""
    load_udf_files([udf_file(tmp_path, SCALAR_ID, RAISE, VECTOR_ID, RAISE)])
    module = compile_text(RULES, "tagged.epl")
    dead = tmp_path / "oracle.dead.jsonl"
    result = run(module, RunConfig(SOURCE, runner="local", output=Output(collect=True),
                                   dead_letter=str(dead), udf_timeout=0))
    return result.records, letters(dead)


def _expected_letters(scalar_bad: str, vector_bad: str) -> dict[int, set[str]]:
    offsets = _offsets()
    return {offsets[SCALAR_ID]: {reasons(scalar_bad, "tag", LIMIT)},
            offsets[VECTOR_ID]: {reasons(vector_bad, "vtag", LIMIT)}}


def test_a_hang_and_an_exit_on_spark_with_keys_moving_cost_their_records_only(
        spark, tmp_path):
    bad = udf_file(tmp_path, SCALAR_ID, HANG, VECTOR_ID, EXIT)
    expected, oracle_letters = _oracle(tmp_path)
    assert oracle_letters == _expected_letters(RAISE, RAISE)
    load_udf_files([bad])  # tag and vtag again, misbehaving
    module = compile_text(RULES, "tagged.epl")
    dead = tmp_path / "spark.dead.jsonl"
    result = run(module, RunConfig(SOURCE, output=Output(collect=True), engines=3,
                                   batch_size=30, master="local[2]", progress=False,
                                   strategy="dlb-l", threshold=5.0, moves="always",
                                   dead_letter=str(dead), udf_timeout=LIMIT))
    assert sum(m["exported_keys"] for m in result.metrics) > 0, "keys must move"
    assert letters(dead) == _expected_letters(HANG, EXIT)  # once each
    assert result.records == expected
    assert result.totals["udf_failures"] == 2


# slow: test_udf_spark's kill -9 test proves each failing record dead-lettered once across
# a restart, and the hang test above a hang on Spark; this one is both at once
@pytest.mark.slow
def test_sigkill_then_restart_with_a_function_that_hangs(tmp_path):
    """``cep run --udf`` with a function that sleeps for ever on one record and one that
    calls ``os._exit(1)`` on another, SIGKILLed inside a batch whose tasks have written
    udf_error letters (keys moving through MongoDB), and restarted from its checkpoint:
    the oracle's events, and each misbehaving record's letter once."""
    from support.faults import cep_run, events, finish, in_flight, kill_group, start, wait_until

    expected, _ = _oracle(tmp_path)
    rules, funcs = tmp_path / "tagged.epl", udf_file(tmp_path, SCALAR_ID, HANG, VECTOR_ID,
                                                     EXIT)
    rules.write_text(RULES)
    run_dir, dead = tmp_path / "run", tmp_path / "dead.jsonl"
    command = cep_run(run_dir, "--batch-size", "30", "--udf", str(funcs),
                      "--udf-timeout", f"{LIMIT:g}", "--dead-letter", str(dead),
                      rule=rules, source=SOURCE)
    proc = start(command, tmp_path / "killed")

    def writing_letters() -> bool:
        return any(in_flight(run_dir, b) and any(
            (run_dir / "dead" / f"batch-{b:07d}").glob("udf-*.jsonl")) for b in range(3, 9))

    wait_until(writing_letters, proc, "a batch's udf_error letters written")
    kill_group(proc)
    resumed = finish(command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    lines = dead.read_text().splitlines()
    assert len(lines) == len(set(lines)) == 2
    assert letters(dead) == _expected_letters(HANG, EXIT)
    assert events(Path(f"{run_dir}.jsonl")) == expected
