"""The ``cep`` command as a user runs it: real subprocesses, exit codes, files."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cep.cli import interruptible
from cep.cli.summary import balance_text

DATA = Path(__file__).parent / "data"
RULES = Path(__file__).parent.parent / "rules"



def cep(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cep.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)  # Spark runs on a busy 2-core box


def test_a_reader_that_stops_reading_ends_the_command_without_a_traceback():
    """``cep check … | head`` with head gone: the write fails with EPIPE, and the command
    ends quietly (before, a BrokenPipeError traceback)."""
    read, write = os.pipe()
    os.close(read)  # nobody will read: the first write fails
    try:
        result = subprocess.run([sys.executable, "-m", "cep.cli", "check",
                                 str(RULES / "fsd.epl")], stdout=write,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_check_describes_rules_key_and_streams():
    result = cep("check", str(RULES / "fsd.epl"))
    assert result.returncode == 0, result.stderr
    assert "key: fingerprint" in result.stdout
    assert "first_story: #lastevent join of KeyedTweet with #length(500)" in result.stdout
    assert "KeyedTweet (derived)" in result.stdout


def test_check_reports_errors_with_location_and_exit_2(tmp_path):
    bad = tmp_path / "bad.epl"
    bad.write_text("CREATE SCHEMA T (topic string, ts timestamp) TIMESTAMP ts;\n"
                   "SELECT count(*) AS n FROM T#groupwin(topc)#time(10 min);\n")
    result = cep("check", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith(f"{bad}:2:38: error: unknown field 'topc'")
    assert "did you mean 'topic'?" in result.stderr
    assert "^^^^" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_missing_file_and_bad_encoding(tmp_path):
    assert cep("check", str(tmp_path / "nope.epl")).returncode == 2
    latin = tmp_path / "latin.epl"
    latin.write_bytes(b"SELECT caf\xe9 FROM T;")
    result = cep("check", str(latin))
    assert result.returncode == 2 and "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_writes_jsonl_and_summary(tmp_path):
    out = tmp_path / "out.jsonl"
    result = cep("run", str(RULES / "busy_topic.epl"), "--input",
                 str(DATA / "tweets_small.jsonl"), "--runner", "local", "--output", str(out),
                 "--set", "threshold=4")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(r["rule"] == "busy_topic" and r["n"] >= 4 for r in rows)
    assert "80 events" in result.stderr


def test_run_dead_letters_malformed_records_and_counts_them(tmp_path):
    good = (DATA / "readings.jsonl").read_text().splitlines()
    messy = tmp_path / "messy.jsonl"
    messy.write_text("\n".join([
        good[0], "{not json", good[1], '{"sensor": "s1", "temp": 1.0, "ok": true}',  # no ts
        '{"sensor": "s1", "ts": "yesterday", "temp": 1.0, "ok": true}', good[2],
        '{"sensor": "s1", "ts": "2026-03-01T12:00:00Z", "temp": "hot", "ok": true}',
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    result = cep("run", str(RULES / "sensor_average.epl"), "--input", str(messy),
                 "--runner", "local", "--output", str(out), "--set", "limit=-100")
    assert result.returncode == 0, result.stderr
    dead = [json.loads(line) for line in Path(f"{out}.dead.jsonl").read_text().splitlines()]
    assert len(dead) == 4
    assert all(d["reason"] and d["offset"] > 0 for d in dead)  # byte offsets of bad lines
    assert "4 malformed records dead-lettered" in result.stderr
    assert "3 events" in result.stderr
    # the good events are unaffected: same rows as running on the good lines alone
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(good[:3]) + "\n")
    out2 = tmp_path / "out2.jsonl"
    assert cep("run", str(RULES / "sensor_average.epl"), "--input", str(clean), "--runner",
               "local", "--output", str(out2), "--set", "limit=-100").returncode == 0
    strip = [{k: v for k, v in json.loads(x).items() if k != "seq"}
             for x in out.read_text().splitlines()]
    strip2 = [{k: v for k, v in json.loads(x).items() if k != "seq"}
              for x in out2.read_text().splitlines()]
    assert strip == strip2


def test_run_bad_set_and_missing_input(tmp_path):
    result = cep("run", str(RULES / "busy_topic.epl"), "--input",
                 str(DATA / "tweets_small.jsonl"), "--runner", "local", "--set", "threshhold=4")
    assert result.returncode == 2 and "did you mean 'threshold'" in result.stderr
    result = cep("run", str(RULES / "busy_topic.epl"), "--input", str(tmp_path / "none.jsonl"),
                 "--runner", "local")
    assert result.returncode == 1 and "Traceback" not in result.stderr


def test_unreachable_mongodb_gives_a_clear_message_quickly(tmp_path):
    import time

    started = time.perf_counter()
    result = cep("run", str(RULES / "fsd.epl"), "--input", str(DATA / "tweets_small.jsonl"),
                 "--strategy", "dlb-h",
                 "--mongo-uri", "mongodb://cep:secret@127.0.0.1:9/?serverSelectionTimeoutMS=300")
    assert result.returncode == 1
    assert "MongoDB unreachable at mongodb://cep:***@127.0.0.1:9" in result.stderr
    assert "secret" not in result.stderr and "Traceback" not in result.stderr
    assert time.perf_counter() - started < 30


def test_spark_run_dead_letters_bad_records_and_keeps_good_events(tmp_path):
    good = (DATA / "readings.jsonl").read_text().splitlines()
    messy = tmp_path / "messy.jsonl"
    messy.write_text("\n".join([*good[:20], "not json", '{"sensor": "s1"}',
                                '{"sensor": "s1", "ts": 5, "temp": "hot", "ok": true}',
                                *good[20:40]]) + "\n")
    out, local = tmp_path / "spark.jsonl", tmp_path / "local.jsonl"
    for runner, path in (("spark", out), ("local", local)):
        result = cep("run", str(RULES / "sensor_average.epl"), "--input", str(messy),
                     "--runner", runner, "--engines", "2", "--batch-size", "15",
                     "--output", str(path), "--quiet")
        assert result.returncode == 0, result.stderr
        assert "3 malformed records dead-lettered" in result.stderr
        assert "40 events" in result.stderr
        # 40 events in batches of 15: three batches on Spark that read events (the end of
        # the input, a fourth where all time passes, reads none and is no balance), so
        # KG says so and moves none
        assert ("over 3 batches, 0 keys handed over (kg)" in result.stderr) == (runner == "spark")
    assert out.read_text() == local.read_text() and out.read_text()


def test_spark_runner_refuses_a_later_stage_reading_an_input_stream_in_one_line(tmp_path):
    """INSERT INTO chains run on Spark (tests/spark/test_chain.py), except a later stage
    that also reads an input stream: refused before Spark starts."""
    rule = tmp_path / "chain.epl"
    rule.write_text("CREATE SCHEMA T (s string, ts timestamp, p double) TIMESTAMP ts;\n"
                    "INSERT INTO Spike SELECT s, avg(p) AS a FROM T#groupwin(s)#length(3);\n"
                    "SELECT a.s AS s FROM PATTERN [every a=Spike -> b=T] PARTITION BY s;\n")
    data = tmp_path / "t.jsonl"
    data.write_text('{"s": "a", "ts": 1, "p": 1.0}\n')
    result = cep("run", str(rule), "--input", str(data))
    assert result.returncode == 1
    assert "INSERT INTO chain reads stream T" in result.stderr
    assert "--runner local" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    local = cep("run", str(rule), "--input", str(data), "--runner", "local")
    assert local.returncode == 0, local.stderr
    check = cep("check", str(rule))  # cep check says so before any run
    assert check.returncode == 0, check.stderr
    assert "spark: refused: stage 1 of the INSERT INTO chain reads stream T" in check.stdout


def test_only_a_spark_run_starts_spark_before_the_commands_load():
    """``cep run`` on Spark begins the JVM before anything heavy is imported; nothing
    else does, and a bad runner option is left to the full parser."""
    from cep.cli.runner_options import spark_to_start

    assert spark_to_start(["run", "r.epl", "--input", "tweets"]) == ("local[*]", False)
    assert spark_to_start(["run", "r.epl", "--input", "x", "--master", "local[2]",
                           "--verbose", "--engines", "2"]) == ("local[2]", True)
    assert spark_to_start(["run", "r.epl", "--input", "tweets", "--runner", "local"]) is None
    assert spark_to_start(["run", "r.epl", "--runner", "bogus"]) is None
    assert spark_to_start(["check", "r.epl"]) is None
    assert spark_to_start(["verify", "r.epl", "--input", "tweets"]) is None
    assert spark_to_start([]) is None
    assert spark_to_start(["--help"]) is None


def test_a_run_that_fails_before_spark_is_needed_exits_at_once(tmp_path):
    """A rule error in a Spark run is reported as without Spark, and the JVM begun in
    the background holds neither of the command's output pipes: they are at their end
    as soon as the command exits (a JVM holding them lives a second or more)."""
    bad = tmp_path / "bad.epl"
    bad.write_text("SELECT * FRM x;\n")
    proc = subprocess.Popen([sys.executable, "-m", "cep.cli", "run", str(bad), "--input",
                             "tweets"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.wait(timeout=120) == 2
    ready, _, _ = select.select([proc.stdout, proc.stderr], [], [], 0.2)
    assert len(ready) == 2
    assert proc.stdout.read() == b""
    assert proc.stderr.read().decode().startswith(f"{bad}:1:10: error:")


def test_balance_line_says_why_a_key_moving_strategy_changed_nothing_in_two_batches():
    # batch 1's tasks hand keys over for batch 2, which a two-batch run never has
    two = [{"batch": 0, "rstd": 40.0}, {"batch": 1, "rstd": 38.0, "exported_keys": 5}]
    assert balance_text("dlb-l", two) == (
        "  engines' load RSTD 39.0% on average over 2 batches, 5 keys handed over (dlb-l)\n"
        "  the run ended before batch 2, where the Balancer's first key map applies, so "
        "its balance is KG's; a smaller --batch-size gives it batches to act between")
    three = [*two, {"batch": 2, "rstd": 12.0, "exported_keys": 7}]
    assert balance_text("dlb-l", three) == (
        "  engines' load RSTD 30.0% on average over 3 batches, 12 keys handed over (dlb-l)")
    # the end of the input's batch reads no events: its 0% is no balance
    ended = [*two, {"batch": 2, "rstd": 0.0, "events_in": 0}]
    assert balance_text("kg", ended).startswith(
        "  engines' load RSTD 39.0% on average over 2 batches,")
    assert "ended before" not in balance_text("kg", two)  # KG never moves a key
    assert "ended before" not in balance_text("pkg", two)  # PKG splits keys, moves none
    assert balance_text("dlb-l", []) is None
    assert "over 1 batch, 0 keys" in balance_text("kg", two[:1])


def _modules_after(args: list[str], tmp_path: Path) -> set[str]:
    """The modules a ``cep`` command has imported when it is done (in a process of its own,
    so that nothing this test process loaded counts)."""
    listing = tmp_path / "modules.json"
    script = ("import json, sys\nfrom cep.cli import main\n"
              "try:\n    status = main(sys.argv[2:])\nexcept SystemExit as done:\n"
              "    status = done.code\n"
              "assert status == 0, status\n"
              "open(sys.argv[1], 'w').write(json.dumps(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", script, str(listing), *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(listing.read_text()))


@pytest.mark.parametrize("args", [["--help"], ["check", str(RULES / "fsd.epl")]],
                         ids=["help", "check"])
def test_help_and_check_import_no_data_library_and_no_spark(args, tmp_path):
    """A command imports what it uses: describing a rule file or the commands needs
    neither pandas, pyarrow nor Spark (they take seconds to load)."""
    loaded = _modules_after(args, tmp_path)
    assert "cep.cli.dispatch" in loaded
    heavy = {m.split(".")[0] for m in loaded} & {"pandas", "pyarrow", "pyspark"}
    spark = {m for m in loaded if m == "cep.spark" or m.startswith("cep.spark.")}
    assert sorted(heavy | spark) == []


def test_every_command_adds_its_options_and_handler():
    import argparse

    from cep.cli.dispatch import COMMANDS

    assert [c.name for c in COMMANDS] == ["check", "run", "produce", "consume", "verify",
                                          "simulate", "bench", "prepare", "report",
                                          "deploy", "undeploy", "scale", "rules", "ui"]
    for command in COMMANDS:
        parser = argparse.ArgumentParser()
        command.add_arguments(parser)
        assert callable(parser.get_default("handler")), command.name


def test_every_run_failure_the_command_line_names_exists():
    """The errors that end a command in one line are named, not imported (see
    cep.cli.errors): each name must still be an exception of its module."""
    import importlib

    from cep.cli.errors import RUN_FAILURES, CommandError, run_failures

    for module, name in RUN_FAILURES:
        assert issubclass(getattr(importlib.import_module(module), name), Exception), name
    assert len(run_failures()) == len(RUN_FAILURES) + 1  # all loaded now
    assert run_failures()[0] is CommandError


# A shell without job control starts `cep ... &` like this: SIGINT ignored, then exec.
_SIGINT_IGNORED = ("import os, signal, sys\n"
                   "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                   "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n")


def test_sigint_stops_a_command_started_with_sigint_ignored(tmp_path):
    """`cep ui ... &` from a script, then `kill -INT`: the command takes the SIGINT it
    documents as its stop, whatever disposition it inherited (before, it served on)."""
    metrics = tmp_path / "run.metrics"
    metrics.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", _SIGINT_IGNORED, "-m", "cep.cli", "ui",
                             str(metrics), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        assert "(Ctrl-C to stop)" in proc.stderr.readline()  # serving: past the set-up
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()


def test_main_gives_back_the_sigint_disposition_it_found():
    """An in-process caller that ignores SIGINT still ignores it after :func:`main`."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interruptible():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_run_with_udf_files_and_their_one_line_errors(tmp_path):
    """``--udf FILE.py``: the functions the file registers are callable from the rules;
    a missing file, or one whose import raises, is one line and exit 1; a rule calling a
    function no file registered is a rule error at its place, for ``cep check`` too
    unless it is given the file."""
    from support.udf_sample import FAILING, RULES, UDF_TEXT, letters, module_name

    rules = tmp_path / "loud.epl"
    rules.write_text(RULES)
    funcs = tmp_path / f"{module_name('tweet_udfs')}.py"
    funcs.write_text(UDF_TEXT)
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    result = cep("run", str(rules), "--input", str(DATA / "tweets_small.jsonl"),
                 "--runner", "local", "--udf", str(funcs), "--output", str(out),
                 "--dead-letter", str(dead))
    assert result.returncode == 0, result.stderr
    first = json.loads(out.read_text().splitlines()[0])
    assert first["loud"] == "EARTHQUAKE HITS THE NORTHERN COAST BUILDINGS LIVE!"
    assert letters(dead) == FAILING
    assert "  10 records on which user functions failed dead-lettered to" in result.stderr

    missing = cep("run", str(rules), "--input", str(DATA / "tweets_small.jsonl"),
                  "--runner", "local", "--udf", str(tmp_path / "nope.py"))
    assert missing.returncode == 1
    assert missing.stderr == f"cep: {tmp_path / 'nope.py'}: no such file\n"
    broken = tmp_path / "broken_udfs.py"
    broken.write_text("from cep.engine.functions import register_udf\n"
                      "raise RuntimeError('no database here')\n")
    failed = cep("run", str(rules), "--input", str(DATA / "tweets_small.jsonl"),
                 "--runner", "local", "--udf", str(broken))
    assert failed.returncode == 1
    assert failed.stderr == (f"cep: {broken}:2: importing it raised RuntimeError: "
                             "no database here\n")
    unknown = cep("run", str(rules), "--input", str(DATA / "tweets_small.jsonl"),
                  "--runner", "local")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith(f"{rules}:6:12: error: unknown function 'shout'")
    checked = cep("check", str(rules), "--udf", str(funcs))
    assert checked.returncode == 0, checked.stderr
    unchecked = cep("check", str(rules))
    assert unchecked.returncode == 2
    assert unchecked.stderr.startswith(f"{rules}:6:12: error: unknown function 'shout'")
