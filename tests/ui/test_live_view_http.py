"""The live view's HTTP side over a real short run: every JSON endpoint the page uses,
``/metrics`` as Prometheus parses it, and ``cep ui`` over the finished run's metrics
file, all showing the numbers the run's metrics hold.

One real run serves every test here (a Spark run costs a JVM start): sensor readings on
two engines in batches of 15, with a key-moving strategy at θ = 1 % so keys move, a
planted key that is markup, and two malformed lines for the dead letters.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.faults import ROOT, finish, free_port, metrics

from cep.ui import serve_run, ui_command
from cep.ui.source import RunSource

RULE = ROOT / "rules" / "sensor_average.epl"
READINGS = (ROOT / "tests" / "data" / "readings.jsonl").read_text().splitlines(keepends=True)
PLANTED_KEY = "<img src=x onerror=window.__cepXss=1>"
# the last line: its event is the run's last, so it is among the latest on the page
PLANTED = json.dumps({"sensor": PLANTED_KEY, "ts": "2026-03-01T12:30:00.000Z",
                      "temp": 45.0, "ok": True}) + "\n"
MALFORMED = ['{"sensor": "s1", "ts": "<script>x</script>", "temp": 1.0, "ok": true}\n',
             "not json at all\n"]
LINES = [*READINGS[:40], *MALFORMED, *READINGS[40:], PLANTED]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run: its directory; ``<dir>.metrics`` is its metrics file."""
    base = tmp_path_factory.mktemp("live")
    folder, run_dir = base / "in", base / "run"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(LINES))
    done = finish([*_cep_run(folder, run_dir)], base / "run")
    assert done.returncode == 0, done.stderr
    return run_dir


def _cep_run(folder: Path, run_dir: Path) -> list[str]:
    import sys

    return [sys.executable, "-m", "cep.cli", "run", str(RULE), "--input", str(folder),
            "--batch-size", "15", "--engines", "2", "--master", "local[2]", "--quiet",
            "--strategy", "dlb-l", "--threshold", "1", "--checkpoint", str(run_dir),
            "--output", f"{run_dir}.jsonl", "--metrics", f"{run_dir}.metrics"]


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _json(url: str) -> dict:
    status, headers, body = _get(url)
    assert status == 200 and headers["Content-Type"] == "application/json"
    return json.loads(body)


def _expected(records: list[dict]) -> dict:
    """What the metrics file says, summed the plain way."""
    per_rule: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for r in records:
        per_rule.update(r["outputs_per_rule"])
        kinds.update(r.get("dead_letter_kinds", {}))
    engines = [sum(r["rows_per_engine"][e] for r in records) for e in range(2)]
    return {"events_in": sum(r["events_in"] for r in records),
            "events_out": sum(r["events_out"] for r in records),
            "dead": sum(r["dead_lettered"] for r in records),
            "handed_over": sum(r["exported_keys"] for r in records),
            "per_rule": dict(per_rule), "kinds": dict(kinds), "engines": engines,
            "batches": len(records), "last": records[-1]}


def test_state_endpoint_shows_the_runs_numbers(run):
    records = metrics(Path(f"{run}.metrics"))
    want = _expected(records)
    assert want["events_in"] == len(LINES) - 2 and want["dead"] == 2
    assert want["handed_over"] > 0, "θ = 1 % moves keys: the moves are on the page"
    with serve_run(run, "127.0.0.1", 0) as server:
        state = _json(server.url + "api/state")
    assert state["run"]["kind"] == "run directory" and state["run"]["path"] == str(run)
    assert state["batches"] == want["batches"] == len(state["points"])
    assert state["last_batch"] == want["last"]["batch"]
    totals = state["totals"]
    assert (totals["events_in"], totals["events_out"], totals["dead_lettered"],
            totals["exported_keys"]) == (want["events_in"], want["events_out"], want["dead"],
                                         want["handed_over"])
    assert state["per_rule"] == want["per_rule"]
    assert state["dead_kinds"] == want["kinds"] == {"bad_timestamp": 1, "not_json": 1}
    assert state["engines"]["rows"] == want["engines"]
    assert [p["rows"] for p in state["points"]] == [r["rows_per_engine"] for r in records]
    assert [p["rstd"] for p in state["points"]] == [r["rstd"] for r in records]
    assert {m["batch"] for m in state["moves"] if m["handed_over"]} == {
        r["batch"] for r in records if r["exported_keys"]}
    settings = state["settings"]
    assert (settings["strategy"], settings["threshold"], settings["engines"],
            settings["batch_size"], settings["rules"]) == ("dlb-l", 1.0, 2, 15, ["overheating"])
    assert settings["inputs"] == {"Reading": str(run.parent / "in")}
    latest = [e["line"] for e in state["latest_events"]["overheating"]]
    assert 1 <= len(latest) <= 3 and all(json.loads(line)["rule"] == "overheating"
                                         for line in latest)
    reasons = {d["kind"]: d for d in state["dead_latest"]}
    assert "<script>x</script>" in reasons["bad_timestamp"]["record"]
    assert reasons["not_json"]["record"] == "not json at all"
    [source] = state["input"]["sources"]
    assert (source["read_records"], source["behind_records"]) == (len(LINES), 0)
    assert source["read"] == (run.parent / "in" / "a.jsonl").stat().st_size


def test_the_planted_key_is_in_the_json_as_data(run):
    """The key reaches the page as a JSON string, unchanged (the page writes it as text:
    the browser test shows that)."""
    with serve_run(run, "127.0.0.1", 0) as server:
        state = _json(server.url + "api/state")
    latest = [json.loads(e["line"]) for e in state["latest_events"]["overheating"]]
    assert latest[-1]["key"] == PLANTED_KEY and latest[-1]["sensor"] == PLANTED_KEY


def test_since_sends_only_newer_batches_and_history_reads_older_ones(run):
    with serve_run(run, "127.0.0.1", 0) as server:
        everything = _json(server.url + "api/state")["points"]
        newer = _json(server.url + "api/state?since=2")["points"]
        older = _json(server.url + "api/history?before=3&count=2")["points"]
        status, _, body = _get(server.url + "api/history?before=x")
    assert [p["batch"] for p in newer] == [p["batch"] for p in everything if p["batch"] > 2]
    assert older == [p for p in everything if p["batch"] in (1, 2)], \
        "history, read again from the files, gives the same figures as the live window"
    assert status == 400 and b"not a batch number" in body


def test_the_window_in_memory_is_bounded_and_older_batches_come_from_the_files(run):
    source = RunSource(run, kept=2)
    state = source.snapshot()
    records = metrics(Path(f"{run}.metrics"))
    assert state["batches"] == len(records) > 2
    assert [p["batch"] for p in state["points"]] == [r["batch"] for r in records[-2:]]
    assert state["totals"]["events_in"] == sum(r["events_in"] for r in records), \
        "totals cover the whole run"
    first_kept = state["points"][0]["batch"]
    older = source.history(first_kept, 100)
    assert [p["batch"] for p in older] == [r["batch"] for r in records
                                           if r["batch"] < first_kept]


def test_prometheus_endpoint_parses_and_matches_the_metrics(run):
    records = metrics(Path(f"{run}.metrics"))
    want = _expected(records)
    with serve_run(run, "127.0.0.1", 0) as server:
        status, headers, body = _get(server.url + "metrics")
    assert status == 200
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert all(name.startswith("cep_") for name in families)

    def value(name: str, **labels: str) -> float:
        family = families[name]
        [sample] = [s for s in family.samples if s.labels == labels]
        return sample.value

    assert families["cep_events_in"].type == "counter"
    assert families["cep_events_in"].samples[0].name == "cep_events_in_total"
    assert value("cep_events_in") == want["events_in"]
    assert value("cep_batches") == want["batches"]
    assert value("cep_complex_events", rule="overheating") == want["per_rule"]["overheating"]
    assert value("cep_dead_letters", kind="not_json") == 1
    assert value("cep_dead_letters", kind="bad_timestamp") == 1
    for e in range(2):
        assert value("cep_engine_events", engine=str(e)) == want["engines"][e]
        assert value("cep_engine_batch_events", engine=str(e)) == \
            want["last"]["rows_per_engine"][e]
    assert value("cep_keys_handed_over") == want["handed_over"]
    assert value("cep_engine_load_rstd_ratio") == pytest.approx(want["last"]["rstd"] / 100)
    assert value("cep_balance_threshold_ratio") == pytest.approx(0.01)
    assert value("cep_last_batch") == want["last"]["batch"]
    source = {"input": "Reading", "source": str(run.parent / "in")}
    assert value("cep_input_read_records", **source) == len(LINES)
    assert value("cep_input_behind_records", **source) == 0
    assert families["cep_input_behind_records"].type == "gauge"
    assert {s.labels["phase"] for s in families["cep_batch_phase_seconds"].samples} == {
        "read", "engines", "deliver"}
    [info] = families["cep_run_info"].samples
    assert info.labels["strategy"] == "dlb-l" and info.labels["run_id"]


def test_the_state_paths_figures_are_in_the_json_and_in_prometheus(run):
    """Keys held, state bytes written, the engines' task seconds split restore / process
    / save / handoff, and where the engines' state came from, as the metrics hold them."""
    records = metrics(Path(f"{run}.metrics"))
    last = records[-1]
    with serve_run(run, "127.0.0.1", 0) as server:
        state = _json(server.url + "api/state")
        body = _get(server.url + "metrics")[2].decode()
    assert last["keys_held"] > 0 and all(r["state_bytes"] > 0 for r in records)
    assert [(p["keys_held"], p["state_bytes"]) for p in state["points"]] == [
        (r["keys_held"], r["state_bytes"]) for r in records]
    stages = last["stage_s"]
    parts = state["points"][-1]["engine_parts"]
    assert parts == pytest.approx({
        "restore": stages["restore"], "process": stages["process"], "save": stages["save"],
        "handoff": stages.get("import", 0) + stages.get("export", 0)}, abs=1e-4)
    moved = [r for r in records if r["exported_keys"]]
    assert moved and all(
        p["engine_parts"]["handoff"] > 0 for p in state["points"]
        if p["batch"] in {r["batch"] for r in moved}), "keys moved: handoff has seconds"
    restored = Counter()
    for r in records:
        restored.update(r["keys_restored"])
    assert state["restored"] == dict(restored)
    assert restored["new"] == 2, "two engines, each new at its first batch"
    assert sum(restored[k] for k in ("resident", "caught_up", "rebuilt", "new")) == \
        2 * len(records), "every engine batch says where its engine came from"
    families = {f.name: f for f in text_string_to_metric_families(body)}

    def value(name: str, **labels: str) -> float:
        [sample] = [s for s in families[name].samples if s.labels == labels]
        return sample.value

    assert value("cep_engine_keys_held") == last["keys_held"]
    assert value("cep_batch_state_written_bytes") == last["state_bytes"]
    assert families["cep_state_written_bytes"].type == "counter"
    assert value("cep_state_written_bytes") == sum(r["state_bytes"] for r in records)
    for part, seconds in parts.items():
        assert value("cep_engine_part_seconds", part=part) == pytest.approx(seconds)
    for origin, n in restored.items():
        assert value("cep_engine_restores", origin=origin) == n
    assert value("cep_late_events") == sum(r["late_events"] for r in records)
    assert last["watermark"] > 0, "the readings carry timestamps"
    assert value("cep_watermark_seconds") == pytest.approx(last["watermark"] / 1e6)


def test_cep_ui_over_a_finished_runs_metrics_file_shows_the_same_numbers(run):
    metrics_file = Path(f"{run}.metrics")
    records = metrics(metrics_file)
    want = _expected(records)
    port, stop = free_port(), threading.Event()
    serving = threading.Thread(target=ui_command, args=(metrics_file, "127.0.0.1", port, stop))
    serving.start()
    try:
        url = f"http://127.0.0.1:{port}/"
        state = _wait_for(lambda: _json(url + "api/state"))
        text = _get(url + "metrics")[2].decode()
    finally:
        stop.set()
        serving.join(timeout=10)
    assert not serving.is_alive(), "cep ui ends when stopped"
    assert state["run"] == {"path": str(metrics_file), "kind": "metrics file", "manifest": {}}
    assert state["totals"]["events_in"] == want["events_in"]
    assert state["totals"]["events_out"] == want["events_out"]
    assert state["per_rule"] == want["per_rule"]
    assert state["engines"]["rows"] == want["engines"]
    assert [p["batch"] for p in state["points"]] == [r["batch"] for r in records]
    assert [(p["events_in"], p["events_out"], p["rows"]) for p in state["points"]] == [
        (r["events_in"], r["events_out"], r["rows_per_engine"]) for r in records]
    assert state["settings"] == records[-1]["settings"]
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["cep_events_in"].samples[0].value == want["events_in"]


def test_the_server_is_read_only_and_says_so_in_its_headers(run):
    with serve_run(run, "127.0.0.1", 0) as server:
        status, headers, page = _get(server.url)
        for method in ("POST", "PUT", "DELETE"):
            request = urllib.request.Request(server.url + "api/state", data=b"{}",
                                             method=method)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 405
            assert refused.value.headers["Allow"] == "GET, HEAD"
        assert _get(server.url + "static/app.js")[0] == 200
        assert _get(server.url + "static/../server.py")[0] == 404
        assert _get(server.url + "nothing")[0] == 404
    assert status == 200 and b"<title>cep" in page
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "unsafe-inline" not in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert server.url.startswith("http://127.0.0.1:")


def _wait_for(get, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return get()
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_servers_memory_stays_flat_over_a_long_run(run, tmp_path):
    """Thousands of batches (the real run's last record, renumbered) cost the server what
    its window holds: memory after 6,000 batches is what it was after 1,000."""
    import tracemalloc

    record = metrics(Path(f"{run}.metrics"))[-1]
    path = tmp_path / "long.metrics"

    def append(first: int, count: int) -> None:
        with open(path, "a") as fh:
            for b in range(first, first + count):
                fh.write(json.dumps({**record, "batch": b, "wall_time": 1e9 + b}) + "\n")

    append(0, 1000)
    source = RunSource(path)
    tracemalloc.start()
    try:
        assert source.snapshot()["batches"] == 1000
        before = tracemalloc.get_traced_memory()[0]
        append(1000, 5000)
        time.sleep(0.6)  # past the refresh interval
        state = source.snapshot()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert state["batches"] == 6000 and len(state["points"]) == state["kept"] == 600
    assert state["totals"]["events_in"] == 6000 * record["events_in"]
    assert after - before < 256 * 1024, f"{after - before} bytes more after 5,000 batches"


def test_a_metrics_file_rewritten_by_a_replay_is_read_again(run, tmp_path):
    """A replayed batch truncates the metrics file back and appends its record again
    (cep.spark.output.delivery.AppendLedger): the view starts over, and counts it once."""
    records = metrics(Path(f"{run}.metrics"))
    path = tmp_path / "replayed.metrics"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    source = RunSource(path)
    assert source.snapshot()["totals"]["events_in"] == sum(r["events_in"] for r in records)
    replayed = {**records[-1], "note": "the second attempt's record is longer"}
    path.write_text("".join(json.dumps(r) + "\n" for r in [*records[:-1], replayed]))
    time.sleep(0.6)
    state = source.snapshot()
    assert state["batches"] == len(records)
    assert state["totals"]["events_in"] == sum(r["events_in"] for r in records)
    path.write_text("".join(json.dumps(r) + "\n" for r in records[:2]))  # shorter
    time.sleep(0.6)
    assert source.snapshot()["batches"] == 2
