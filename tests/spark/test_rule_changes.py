"""Rules that change while a ``cep run --follow --checkpoint`` job runs (``cep deploy``,
``cep undeploy``): the job's events equal the reference evaluator's over the same input
log with the same change log (each version from the first seq of the batch that applied
it), event for event; and a rule that never changed has exactly the events of a run
whose rules never changed. Cases: a rule added, a rule replaced compatibly (a HAVING
threshold through a variable: it keeps its state), a rule replaced incompatibly with a
timer pending (it starts empty), a rule removed; under key grouping, with DLB-L moving
keys every batch, with an INSERT INTO chain, and with ``kill -9`` while a change is
being applied, then a restart (the change applies once, at the same batch). Keys move
every batch under DLB-L, DLB-H and LPTF.

The jobs are real ``cep`` processes fed files while they run (``support.faults``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from pathlib import Path

import pytest
from support.changed_runs import log_reference
from support.faults import (
    batch_total,
    committed,
    events,
    in_flight,
    kill_group,
    land,
    start,
    wait_until,
)
from support.udf_sample import module_name

from cep.io.rule_changes import ChangeLog

START = """
CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean) TIMESTAMP ts;
CREATE VARIABLE double limit = 31.0;

@Name('overheating')
SELECT sensor, avg(temp) AS avg_temp, count(*) AS n
FROM Reading(ok)#groupwin(sensor)#length(4) GROUP BY sensor HAVING avg(temp) > limit;

@Name('silent')
SELECT a.sensor AS sensor, a.temp AS temp
FROM PATTERN [every a=Reading(temp > 34) -> (timer:interval(3 min) and not b=Reading)]
PARTITION BY sensor;

@Name('per_window')
SELECT sensor, count(*) AS n, max(temp) AS top
FROM Reading#groupwin(sensor)#time_batch(2 min) GROUP BY sensor;
"""

ADDED = """
CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean) TIMESTAMP ts;
@Name('rising')
SELECT a.sensor AS sensor, a.temp AS low, b.temp AS high
FROM PATTERN [every a=Reading -> b=Reading(temp > a.temp + 3)] PARTITION BY sensor;
"""
COMPATIBLE = "CREATE VARIABLE double limit = 30.0;\n"
INCOMPATIBLE = """
@Name('silent')
SELECT a.sensor AS sensor, a.temp AS temp, 'v3' AS version
FROM PATTERN [every a=Reading(temp > 33) -> (timer:interval(2 min) and not b=Reading)]
PARTITION BY sensor;
"""

CHAIN = """
CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean) TIMESTAMP ts;
@Name('warm')
INSERT INTO Warm
SELECT sensor, avg(temp) AS avg_temp FROM Reading#groupwin(sensor)#length(3)
GROUP BY sensor HAVING avg(temp) > 30;
@Name('warmer')
SELECT a.sensor AS sensor, a.avg_temp AS first, b.avg_temp AS second
FROM PATTERN [every a=Warm -> b=Warm(avg_temp > a.avg_temp)] PARTITION BY sensor;
"""
CHAIN_CHANGE = """
@Name('warm')
INSERT INTO Warm
SELECT sensor, avg(temp) AS avg_temp FROM Reading#groupwin(sensor)#length(3)
GROUP BY sensor HAVING avg(temp) > 29;
@Name('warm_count')
SELECT sensor, count(*) AS n FROM Warm#groupwin(sensor)#length(2) GROUP BY sensor;
"""

OPTIONS = ("--batch-size", "40", "--master", "local[2]", "--quiet",
           "--trigger-interval", "0.2")


def readings(first: int, n: int, sensors: int = 12, seed: int = 7) -> list[str]:
    """``n`` readings from event ``first`` on, 10 seconds apart, of ``sensors`` sensors
    of unequal rates (so that balancing has something to move)."""
    rng = random.Random(seed * 1000 + first)
    out = []
    for i in range(first, first + n):
        sensor = f"s{min(int(rng.paretovariate(1.2)) - 1, sensors - 1)}"
        minute, second = divmod(i * 10, 60)
        hour, minute = divmod(minute, 60)
        out.append(json.dumps({"sensor": sensor,
                               "ts": f"2026-03-01T{hour:02d}:{minute:02d}:{second:02d}Z",
                               "temp": round(rng.uniform(25.0, 37.0), 2),
                               "ok": rng.random() > 0.1}) + "\n")
    return out


def _command(rule: Path, folder: Path, run: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "cep.cli", "run", str(rule), "--input", str(folder),
            "--follow", *OPTIONS, "--checkpoint", str(run), "--output", f"{run}.jsonl",
            *extra]


def _cep(*args: str) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "cep.cli", *args], capture_output=True,
                          text=True, cwd=Path(__file__).parent.parent.parent)
    assert done.returncode == 0, done.stderr


def _ran_version(run: Path, version: int) -> bool:
    """A committed batch ran ``version`` (its metrics say so)."""
    for path in (run / "metrics").glob("batch-*.json"):
        if json.loads(path.read_text()).get("rules", {}).get("version", 0) >= version:
            return True
    return False


class Job:
    """A followed job in ``tmp``, fed a file per phase."""

    def __init__(self, tmp: Path, rules: str, *extra: str) -> None:
        self.tmp, self.extra = tmp, extra
        self.rule = tmp / "start.epl"
        self.rule.write_text(rules)
        self.folder, self.run = tmp / "in", tmp / "run"
        self.folder.mkdir()
        self.fed = 0
        self.proc = start(_command(self.rule, self.folder, self.run, *extra), tmp / "job")

    def feed(self, n: int, late: int = 0) -> None:
        """``n`` new readings, and the first ``late`` of them again in the same file
        after them: behind the watermark by then (a replay of old readings)."""
        fresh = readings(self.fed, n)
        land(self.folder, f"part-{self.fed:06d}.jsonl", fresh + fresh[:late])
        self.fed += n + late
        wait_until(lambda: batch_total(self.run, "events_in") >= self.fed, self.proc,
                   f"{self.fed} events read")

    def deploy(self, text: str, version: int, name: str = "change.epl",
               udf: tuple[Path, ...] = ()) -> None:
        path = self.tmp / f"{version}-{name}"
        path.write_text(text)
        _cep("deploy", str(self.run), str(path), *(f"--udf={p}" for p in udf))
        wait_until(lambda: _ran_version(self.run, version), self.proc,
                   f"a batch of rule set version {version}")

    def undeploy(self, version: int, *names: str) -> None:
        _cep("undeploy", str(self.run), *names)
        wait_until(lambda: _ran_version(self.run, version), self.proc,
                   f"a batch of rule set version {version}")

    def stop(self) -> list[dict]:
        os.kill(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=300)
        assert self.proc.returncode == 0, (self.tmp / "job.err").read_text()
        return events(Path(f"{self.run}.jsonl"))


def _changes(job: Job) -> None:
    job.feed(120)
    job.deploy(ADDED, 1)
    job.feed(120)
    job.deploy(COMPATIBLE, 2)
    job.feed(120)
    job.deploy(INCOMPATIBLE, 3)
    job.feed(120)
    job.undeploy(4, "rising")
    job.feed(120)


def _check(job: Job, got: list[dict]) -> None:
    assert got == log_reference(job.run, final=False)
    rules = {r["rule"] for r in got}
    assert {"overheating", "silent", "per_window", "rising"} <= rules
    never = [r for r in log_reference(job.run, final=False, changes=False)
             if r["rule"] == "per_window"]
    assert [r for r in got if r["rule"] == "per_window"] == never, \
        "a rule no change touched has the events of a run whose rules never changed"
    applied, refused = ChangeLog(job.run).applied()
    assert [a.version for a in applied] == [1, 2, 3, 4] and not refused


def test_changes_under_key_grouping_equal_the_reference(tmp_path):
    job = Job(tmp_path, START, "--engines", "2")
    _changes(job)
    got = job.stop()
    _check(job, got)
    silent = [r for r in got if r["rule"] == "silent"]
    assert any("version" in r for r in silent) and any("version" not in r for r in silent)


# dlb-l by default; the other movers of the same handoff are slow tests
@pytest.mark.parametrize("strategy", ["dlb-l", *(
    pytest.param(name, marks=pytest.mark.slow) for name in ("dlb-h", "lptf"))])
def test_changes_while_keys_move_every_batch(tmp_path, strategy):
    job = Job(tmp_path, START, "--engines", "3", "--strategy", strategy,
              "--moves", "always", "--threshold", "1")
    _changes(job)
    got = job.stop()
    _check(job, got)
    moved = batch_total(job.run, "imported_keys")
    assert moved > 0, "keys moved between engines while the rules changed"


def test_changes_in_an_insert_into_chain(tmp_path):
    job = Job(tmp_path, CHAIN, "--engines", "2")
    job.feed(160)
    job.deploy(CHAIN_CHANGE, 1)
    job.feed(160)
    got = job.stop()
    assert got == log_reference(job.run, final=False)
    assert {"warmer", "warm_count"} <= {r["rule"] for r in got}


def test_kill_9_while_a_change_applies_then_restart(tmp_path):
    """SIGKILL while the batch that applies a change is in flight (planned, its offsets
    logged, not committed: proved after the kill, when nothing can commit it any more),
    then a restart: the change applies once, at the same batch, and the events equal the
    reference's."""
    job = Job(tmp_path, START, "--engines", "2")
    job.feed(120)
    path = tmp_path / "added.epl"
    path.write_text(ADDED)
    _cep("deploy", str(job.run), str(path))
    log = ChangeLog(job.run)

    def applying() -> bool:
        applied = log.applied()[0]
        return bool(applied) and in_flight(job.run, applied[0].batch)

    wait_until(applying, job.proc, "the batch that applies the change in flight")
    kill_group(job.proc)
    planned = log.applied()[0]
    assert planned and not committed(job.run, planned[0].batch), \
        "killed while the batch that applies the change was in flight"
    job.proc = start(_command(job.rule, job.folder, job.run, *job.extra), tmp_path / "again")
    wait_until(lambda: _ran_version(job.run, 1), job.proc, "a batch of rule set version 1")
    assert log.applied()[0] == planned, "the change applies once, at the same batch"
    job.feed(120)
    job.deploy(COMPATIBLE, 2)
    job.feed(120)
    got = job.stop()
    assert got == log_reference(job.run, final=False)
    assert "rising" in {r["rule"] for r in got}


FAHRENHEIT = """
from cep.engine.functions import register_udf


def fahrenheit(celsius):
    return celsius * 1.8 + 32.0


register_udf("fahrenheit", fahrenheit, ["double"], "double")
"""
CALLS_IT = """
@Name('in_fahrenheit')
SELECT sensor, fahrenheit(avg(temp)) AS avg_f FROM Reading#groupwin(sensor)#length(3)
GROUP BY sensor HAVING fahrenheit(avg(temp)) > 95;
"""


def test_a_rule_deployed_with_its_function_file(tmp_path):
    """``cep deploy RUN_DIR rules.epl --udf FILE.py``: a function the running job never
    had reaches its processes with the change (the engines compile the new version from
    the change log, the file's copy in it), on Spark as in the reference."""
    funcs = tmp_path / f"{module_name('deployed_units')}.py"
    funcs.write_text(FAHRENHEIT)
    job = Job(tmp_path, START, "--engines", "2")
    job.feed(120)
    job.deploy(CALLS_IT, 1, udf=(funcs,))
    job.feed(160)
    got = job.stop()
    assert got == log_reference(job.run, final=False)
    made = [r for r in got if r["rule"] == "in_fahrenheit"]
    assert made and all(r["avg_f"] > 95 for r in made)


def test_changes_with_late_events_dropped(tmp_path):
    """``--late drop`` across changes: the late readings of every phase go to the dead
    letters under every rule set version, and the events equal the reference's with the
    same policy and change log."""
    job = Job(tmp_path, START, "--engines", "2", "--late", "drop")
    job.feed(120, late=15)
    job.deploy(ADDED, 1)
    job.feed(120, late=15)
    job.deploy(INCOMPATIBLE, 2)
    job.feed(120, late=15)
    got = job.stop()
    assert got == log_reference(job.run, final=False, late="drop")
    assert got != log_reference(job.run, final=False), "the late readings counted"
    assert batch_total(job.run, "late_events") == 45
    assert {"rising", "silent"} <= {r["rule"] for r in got}


def test_the_python_api_deploys_into_its_stream(tmp_path):
    import threading

    import cep

    folder, run = tmp_path / "in", tmp_path / "run"
    folder.mkdir()
    rules = cep.compile_rules(START)
    got: list[tuple] = []
    land(folder, "a.jsonl", readings(0, 120))
    with rules.stream(folder, checkpoint=str(run), engines=2, batch_size=40,
                      master="local[2]", trigger_s=0.2) as job:
        reader = threading.Thread(target=lambda: got.extend(
            (r.rule, r.key, r.seq) for _, frame in job for r in frame.itertuples()))
        reader.start()
        wait_until(lambda: batch_total(run, "events_in") >= 120, _Alive(reader), "a")
        assert job.deploy(ADDED) == {"rising": "added"}
        wait_until(lambda: _ran_version(run, 1), _Alive(reader), "version 1")
        land(folder, "b.jsonl", readings(120, 120))
        wait_until(lambda: batch_total(run, "events_in") >= 240, _Alive(reader), "b")
        assert [r["rule"] for r in job.rules()] == ["overheating", "silent", "per_window",
                                                   "rising"]
        job.stop()
        reader.join(timeout=300)
    expected = log_reference(run, final=False)
    assert got == [(r["rule"], r["key"], r["seq"]) for r in expected]
    assert "rising" in {rule for rule, _, _ in got}


class _Alive:
    """``wait_until``'s process, for a thread: ``poll`` is None while it runs."""

    def __init__(self, thread) -> None:
        self.thread = thread
        self.returncode = "thread ended"

    def poll(self):
        return None if self.thread.is_alive() else 1


NO_OK = """
CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean) TIMESTAMP ts;
@Name('hot')
SELECT sensor, avg(temp) AS avg_temp FROM Reading#groupwin(sensor)#length(3)
GROUP BY sensor HAVING avg(temp) > 31;
"""
READS_OK = """
@Name('hot')
SELECT sensor, avg(temp) AS avg_temp, count(*) AS n FROM Reading(ok)#groupwin(sensor)#length(3)
GROUP BY sensor HAVING avg(temp) > 31;
@Name('flagged')
SELECT sensor, ok, temp FROM Reading(not ok);
"""


def test_a_deployed_rule_reads_a_field_no_running_rule_read(tmp_path):
    """No rule of the first version reads ``ok``, so the input tasks leave it out of
    their columns; the deployed version's rules read it (a replaced window rule, which
    starts empty since it reads a field its old form did not keep, and a new filter).
    Oracle: the reference evaluator over the input log with the same change log
    (``log_reference``), which reads every field."""
    job = Job(tmp_path, NO_OK, "--engines", "2")
    job.feed(120)
    job.deploy(READS_OK, 1)
    job.feed(120)
    got = job.stop()
    assert got == log_reference(job.run, final=False)
    flagged = [r for r in got if r["rule"] == "flagged"]
    assert flagged and all(r["ok"] is False for r in flagged)
    hot = [r for r in got if r["rule"] == "hot"]
    assert any("n" in r for r in hot) and any("n" not in r for r in hot)
