"""``cep deploy``, ``cep undeploy`` and ``cep rules`` against a run directory: a change
is checked before it is written (a bad file is refused with its file:line:column and
exit 2, a change the job cannot take in one line and exit 1, nothing written either
way), and ``cep rules`` lists each rule's version and start batch once the job applied
it (here the planner's record is written as the planner writes it)."""

from __future__ import annotations

import json

from support.udf_sample import module_name

from cep.cli import main
from cep.io.rule_changes import Applied, ChangeLog
from grammar.compile import compile_text

START = """CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean)
TIMESTAMP ts;
CREATE VARIABLE double limit = 30.0;
@Name('hot')
SELECT sensor, avg(temp) AS a FROM Reading#groupwin(sensor)#length(3) GROUP BY sensor
HAVING avg(temp) > limit;
"""


def _run_dir(tmp_path):
    run = tmp_path / "run"
    ChangeLog(run).begin(compile_text(START, "start.epl"))
    return run


def test_deploy_undeploy_and_rules(tmp_path, capsys):
    run = _run_dir(tmp_path)
    new = tmp_path / "new.epl"
    new.write_text("@Name('cold') SELECT sensor, count(*) AS n "
                   "FROM Reading#groupwin(sensor)#length(2) GROUP BY sensor;\n"
                   "CREATE VARIABLE double limit = 28.0;\n")
    assert main(["deploy", str(run), str(new)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("change 1 written: hot replaced (keeps its state"), said
    assert "; cold added" in said
    assert main(["rules", str(run)]) == 0
    assert "changes 1 wait for the next batch" in capsys.readouterr().out
    ChangeLog(run).write_applied([Applied(1, 4, 1 << 36)], {})
    assert main(["rules", str(run), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["version"] == 1 and listed["pending"] == []
    assert listed["rules"] == [
        {"rule": "hot", "version": 1, "batch": 4, "first_seq": 1 << 36,
         "started": "compatible"},
        {"rule": "cold", "version": 1, "batch": 4, "first_seq": 1 << 36, "started": "added"}]
    assert main(["undeploy", str(run), "cold"]) == 0
    assert "cold removed (its state is freed)" in capsys.readouterr().out
    assert ChangeLog(run).numbers() == [1, 2]


def test_a_bad_file_is_refused_at_the_command_and_nothing_is_written(tmp_path, capsys):
    run = _run_dir(tmp_path)
    bad = tmp_path / "bad.epl"
    bad.write_text("@Name('x')\nSELECT sensor FROM Reading#groupwin(sensr)#length(2);\n")
    assert main(["deploy", str(run), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:37: error: unknown field 'sensr'"), err
    assert main(["undeploy", str(run), "nope"]) == 1
    assert capsys.readouterr().err == ("cep: refused: no running rule is named 'nope' "
                                       "(running: hot)\n")
    assert ChangeLog(run).numbers() == []


def test_a_directory_that_is_no_run_is_said_in_one_line(tmp_path, capsys):
    assert main(["rules", str(tmp_path)]) == 1
    assert "is not the run directory of a cep job" in capsys.readouterr().err


def test_a_change_written_behind_the_commands_back_is_refused_by_the_planner(tmp_path):
    """A change file that cannot apply (written by hand, or checked against a version
    another change has since replaced) is refused where the job plans: recorded with its
    reason, the rules staying as they were; the changes after it still apply."""
    from cep.io.rule_changes import RuleBook
    from cep.spark.rule_versions import RulePlanner

    run = _run_dir(tmp_path)
    log = ChangeLog(run)
    log.append({"kind": "deploy", "source_name": "hand.epl",
                "text": "@Name('x') SELECT sensr FROM Reading;"})
    log.append({"kind": "undeploy", "names": ["hot"]})
    book = RuleBook.of_run(run)
    planner = RulePlanner(book)
    assert planner.pending(0)
    assert planner.plan(batch=3, running=0, first_seq=77) == 2
    applied, refused = log.applied()
    assert applied == [Applied(2, 3, 77)]
    assert refused == {1: "hand.epl:1:19: error: unknown field or variable 'sensr'"}
    assert list(book.module(1).outputs) == ["hot"] and book.module(2).outputs == ()
    # a crash before Spark logged batch 3: planned again, the same record
    assert planner.plan(batch=3, running=0, first_seq=77) == 2
    assert log.applied()[0] == [Applied(2, 3, 77)]
    assert planner.version_of(2) == 0 and planner.version_of(9) == 2


def test_deploy_with_a_function_file_keeps_a_copy_that_any_process_imports(tmp_path, capsys):
    """``--udf FILE.py``: without it the rules' new function is unknown (file:line:column,
    nothing written); with it the change is written with a copy of the file in the change
    log, from which a process that never saw the file compiles the new rule set."""
    import subprocess
    import sys

    run = _run_dir(tmp_path)
    funcs = tmp_path / f"{module_name('cli_units')}.py"
    funcs.write_text("from cep.engine.functions import register_udf\n"
                     "register_udf('to_kelvin', lambda c: c + 273.15, ['double'], 'double')\n")
    new = tmp_path / "kelvin.epl"
    new.write_text("@Name('kelvin')\nSELECT sensor, to_kelvin(temp) AS k FROM Reading;\n")
    assert main(["deploy", str(run), str(new)]) == 2
    assert capsys.readouterr().err.startswith(f"{new}:2:16: error: unknown function")
    assert ChangeLog(run).numbers() == []
    assert main(["deploy", str(run), str(new), "--udf", str(funcs)]) == 0
    assert "kelvin added" in capsys.readouterr().out
    [copy] = ChangeLog(run).udf_files()
    assert copy.read_text() == funcs.read_text() and copy.parent.parent.name == "udf"
    funcs.unlink()  # the job's processes read the copy, not the user's file
    script = ("import sys; from cep.io.rule_changes import RuleBook; "
              "print(list(RuleBook.of_run(sys.argv[1]).module(1).outputs))")
    done = subprocess.run([sys.executable, "-c", script, str(run)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['hot', 'kelvin']"
