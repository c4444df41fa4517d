"""Bad input for real: a file of good events with every kind of broken record mixed in.

Each test writes the same good events twice, once clean and once interleaved with
malformed JSON, a missing timestamp, mistyped fields, huge text fields, bytes that are not UTF-8
and (CSV) rows with the wrong number of cells, runs the rules over both, and requires the
same output events, one dead letter with a reason per broken record, and every line
accounted for. Some good events have timestamps going backwards: those are events, not
errors (docs/language.md#windows: a late event counts at its key's latest time), so they are in
both files and must be processed.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.input_files import read_input

from cep.engine.output import output_records
from cep.engine.table import SEQ
from cep.io.deadletter import DeadLetter
from cep.io.inputs import load_inputs
from cep.io.readers.reader import MAX_RECORD_BYTES
from cep.reference import run_reference
from grammar import ir
from grammar.compile import compile_file

DATA = Path(__file__).parent.parent / "data"
RULES = Path(__file__).parent.parent.parent / "rules"
HUGE = "w" * (MAX_RECORD_BYTES + 1000)  # one text field over the default record bound

# (rule file, sample of good events, --set overrides); sensor_average with limit -100
# emits a row for every event, so a lost or extra event always shows in the output.
CASES = {
    "sensor_average": ("sensor_average.epl", "readings.jsonl", {"limit": "-100"}),
    "busy_topic": ("busy_topic.epl", "tweets_small.jsonl", {"threshold": "2"}),
    "fsd": ("fsd.epl", "tweets_small.jsonl", {"H": "20"}),
}


@dataclass
class Files:
    """A clean file, the same events with broken records mixed in, and what each broken
    record must become (its byte offset in the dirty file → dead-letter kind)."""

    clean: list[bytes] = field(default_factory=list)
    dirty: list[bytes] = field(default_factory=list)
    expected: dict[int, str] = field(default_factory=dict)
    size: int = 0  # bytes of the dirty file so far

    def good(self, line: bytes) -> None:
        self.clean.append(line)
        self.add(line)

    def bad(self, line: bytes, kind: str) -> None:
        self.expected[self.size] = kind
        self.add(line)

    def add(self, line: bytes) -> None:
        self.dirty.append(line)
        self.size += len(line) + 1

    def write(self, directory: Path, suffix: str) -> tuple[Path, Path]:
        clean, dirty = directory / f"clean{suffix}", directory / f"dirty{suffix}"
        clean.write_bytes(b"\n".join(self.clean) + b"\n")
        dirty.write_bytes(b"\n".join(self.dirty) + b"\n")
        return clean, dirty


def good_events(sample: str) -> list[dict]:
    """The sample's events, every fifth one moved an hour back in time (late)."""
    events = [json.loads(line) for line in (DATA / sample).read_text().splitlines()]
    for i in range(4, len(events), 5):
        late = _instant(events[i]["ts"]) - timedelta(hours=1)
        events[i]["ts"] = late.isoformat().replace("+00:00", "Z")
    return events


def _fields(stream: ir.StreamDef, kind: str) -> list[str]:
    return [name for name, t in stream.fields if t == kind]


def broken_json(event: dict, stream: ir.StreamDef) -> list[tuple[bytes, str]]:
    """Broken JSON lines made from one good event, with the dead-letter kind of each."""
    ts = stream.timestamp
    text = _fields(stream, "string")[0]
    number = (_fields(stream, "double") + _fields(stream, "int"))[0]
    line = json.dumps(event)

    def edit(**changes: object) -> bytes:
        return json.dumps({**event, **changes}).encode()

    no_time = {k: v for k, v in event.items() if k != ts}
    return [
        (line[: len(line) // 2].encode(), "not_json"),  # cut off mid-record
        (b"{not json", "not_json"),
        (line.replace('", "', '" "', 1).encode(), "not_json"),  # a comma missing
        (b"[1, 2, 3]", "not_object"),
        (b'"just a string"', "not_object"),
        (json.dumps(no_time).encode(), "null_timestamp"),  # a missing TIMESTAMP field
        (edit(**{number: "abc"}), "wrong_type"),
        (edit(**{text: ["a", "list"]}), "wrong_type"),
        (edit(**{text: 42}), "wrong_type"),
        (edit(**{ts: "yesterday"}), "bad_timestamp"),
        (edit(**{ts: None}), "null_timestamp"),
        (edit(**{ts: 1e300}), "out_of_range"),
        (edit(**{text: HUGE}), "too_large"),
        (edit(**{text: "caf\udce9"}).replace(b"\\udce9", b"\xe9"), "invalid_utf8"),
        (b"\xff\xfe" + line.encode(), "invalid_utf8"),
        (line.encode().replace(b'", "', b'\x00", "', 1), "not_json"),  # a raw NUL
    ]


def broken_csv(event: dict, stream: ir.StreamDef) -> list[tuple[bytes, str]]:
    """Broken CSV rows made from one good event, with the dead-letter kind of each."""
    ts = stream.timestamp
    text = _fields(stream, "string")[0]
    number = (_fields(stream, "double") + _fields(stream, "int"))[0]

    def edit(**changes: object) -> bytes:
        return csv_row({**event, **changes}, stream)

    row = csv_row(event, stream)
    return [
        (row + b",extra", "bad_row"),
        (row[: row.rindex(b",")], "bad_row"),
        (edit(**{number: "abc"}), "wrong_type"),
        (edit(**{ts: "yesterday"}), "bad_timestamp"),
        (edit(**{ts: ""}), "null_timestamp"),
        (edit(**{text: HUGE}), "too_large"),
        (edit(**{text: "café"}).replace("é".encode(), b"\xe9"), "invalid_utf8"),
    ]


def csv_row(event: dict, stream: ir.StreamDef) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(
        [str(event[n]).lower() if isinstance(event[n], bool) else event[n]
         for n, _ in stream.fields])
    return out.getvalue().encode()


def build(events: list[dict], stream: ir.StreamDef, fmt: str) -> Files:
    """Good events in order, each broken record after a good one (spread over the file)."""
    if fmt == "jsonl":
        broken, encode = broken_json, (lambda e: json.dumps(e).encode())
    else:
        broken, encode = broken_csv, (lambda e: csv_row(e, stream))
    bad = broken(events[0], stream)
    files = Files()
    if fmt == "csv":
        files.good(",".join(n for n, _ in stream.fields).encode())
    step = max(1, len(events) // len(bad))
    for i, event in enumerate(events):
        files.good(encode(event))
        if i % step == 0 and bad:
            files.bad(*bad.pop(0))
    assert not bad
    return files


def run(module: ir.CompiledModule, path: Path, dead: Path | None,
        by_index: bool = True) -> tuple[list[dict], int]:
    """The output of the rules over ``path``, and the number of events. ``by_index``: an
    output row's ``seq`` is replaced by its event's index among the accepted events, so
    outputs of files that differ only by rejected lines compare equal whatever the
    sequence numbers are (they number places in the input)."""
    loaded = load_inputs(module, [str(path)], str(dead) if dead else None)
    records = output_records(run_reference(module, loaded.tables))
    if by_index:
        seqs = np.sort(loaded.tables[module.input_streams[0]][SEQ])
        for r in records:
            r["seq"] = int(np.searchsorted(seqs, r["seq"]))
    return records, loaded.accepted


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_records_are_dead_lettered_and_good_events_unaffected(
        tmp_path: Path, case: str, fmt: str) -> None:
    rule, sample, overrides = CASES[case]
    module = compile_file(RULES / rule, overrides)
    stream = module.streams[module.input_streams[0]]
    events = good_events(sample)
    files = build(events, stream, fmt)
    clean, dirty = files.write(tmp_path, "." + fmt)
    dead = tmp_path / "dead.jsonl"

    expected, accepted_clean = run(module, clean, None)
    got, accepted = run(module, dirty, dead)

    assert got == expected
    assert accepted == accepted_clean == len(events)
    letters = [json.loads(line) for line in dead.read_text().splitlines()]
    assert {d["offset"]: d["kind"] for d in letters} == files.expected
    assert len(letters) == len(files.expected)  # one entry per broken record
    for letter in letters:
        assert letter["source"] == str(dirty) and letter["reason"]
        assert len(letter["record"]) <= 1000
    too_large = next(d for d in letters if d["kind"] == "too_large")
    assert f"over the limit of {MAX_RECORD_BYTES} bytes" in too_large["reason"]


def test_late_events_are_processed_not_rejected(tmp_path: Path) -> None:
    """Timestamps going backwards: every event that passes the rule's filter (``ok``)
    triggers it, late or not, and its row carries its own timestamp."""
    rule, sample, overrides = CASES["sensor_average"]
    module = compile_file(RULES / rule, overrides)
    events = good_events(sample)
    path = tmp_path / "late.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    out, accepted = run(module, path, tmp_path / "dead.jsonl")
    assert not (tmp_path / "dead.jsonl").exists() and accepted == len(events)
    triggers = [i for i, e in enumerate(events) if e["ok"]]
    assert [r["seq"] for r in out] == triggers
    late = [i for i in triggers[1:] if events[i]["ts"] < events[i - 1]["ts"]]
    assert len(late) == 11, "the sample has 11 triggering events going backwards in time"
    ts = {r["seq"]: _instant(r["ts"]) for r in out}
    assert all(ts[i] == _instant(events[i]["ts"]) for i in late)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_cli_summary_counts_accepted_and_rejected(tmp_path: Path) -> None:
    rule, sample, overrides = CASES["sensor_average"]
    module = compile_file(RULES / rule, overrides)
    events = good_events(sample)
    files = build(events, module.streams[module.input_streams[0]], "jsonl")
    clean, dirty = files.write(tmp_path, ".jsonl")
    out = tmp_path / "out.jsonl"
    proc = _cep_run(rule, dirty, overrides, "--output", str(out))
    expected, _ = run(module, dirty, None, by_index=False)
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected
    assert [r["rule"] for r in expected] == [r["rule"] for r in run(module, clean, None)[0]]
    assert f"cep: {len(events)} events" in proc.stderr
    dead = f"{out}.dead.jsonl"
    assert f"{len(files.expected)} malformed records dead-lettered to {dead}" in proc.stderr
    assert len(Path(dead).read_text().splitlines()) == len(files.expected)


def test_a_rerun_replaces_the_dead_letter_file(tmp_path: Path) -> None:
    """Two runs over the same input leave each broken record in the file once, not twice;
    a run over a clean input leaves no file, not the previous run's letters."""
    rule, sample, overrides = CASES["sensor_average"]
    module = compile_file(RULES / rule, overrides)
    files = build(good_events(sample), module.streams[module.input_streams[0]], "jsonl")
    clean, dirty = files.write(tmp_path, ".jsonl")
    dead = tmp_path / "dead.jsonl"
    for _ in range(2):
        proc = _cep_run(rule, dirty, overrides, "--dead-letter", str(dead))
        assert f"{len(files.expected)} malformed records dead-lettered" in proc.stderr
        letters = [json.loads(line) for line in dead.read_text().splitlines()]
        assert sorted(d["offset"] for d in letters) == sorted(files.expected)
    _cep_run(rule, clean, overrides, "--dead-letter", str(dead))
    assert not dead.exists()


def _cep_run(rule: str, source: Path, overrides: dict[str, str],
             *options: str) -> subprocess.CompletedProcess:
    """``cep run`` with the local runner in a fresh interpreter; it must succeed."""
    proc = subprocess.run(
        [sys.executable, "-m", "cep.cli", "run", str(RULES / rule), "--input", str(source),
         "--runner", "local", *options, *(f"--set={k}={v}" for k, v in overrides.items())],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def _peak_rss_mb(script: str) -> float:
    """Peak resident memory (MB) of a fresh interpreter running ``script``."""
    code = script + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1]) / 1024


def test_a_line_of_hundreds_of_megabytes_is_read_past_in_bounded_memory(
        tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.write(b'{"sensor": "s1", "ts": 1000, "temp": 1.0, "ok": true}\n')
        fh.write(b'{"sensor": "')
        for _ in range(256):
            fh.write(b"x" * (1 << 20))  # 256 MiB in one field of one line
        fh.write(b'", "ts": 2000, "temp": 2.0, "ok": true}\n')
        fh.write(b'{"sensor": "s1", "ts": 3000, "temp": 3.0, "ok": true}\n')
    read: Callable[[str], str] = lambda p: (  # noqa: E731
        "import os\n"
        "from cep.io.deadletter import DeadLetter\n"
        "from cep.io.readers.ranges import read_range\n"
        "from grammar.ir import StreamDef\n"
        "dead = DeadLetter()\n"
        "fields = (('sensor', 'string'), ('ts', 'timestamp'), ('temp', 'double'),"
        " ('ok', 'boolean'))\n"
        f"frame = read_range({p!r}, 'json', 0, os.path.getsize({p!r}),"
        " StreamDef('R', fields, 'ts'), dead)\n"
        "assert frame['temp'].tolist() == [1.0, 3.0], frame\n"
        "assert dict(dead.reasons) == {'too_large': 1}, dead.reasons\n"
        # a range starting inside the second line skips to the third one
        f"tail = read_range({p!r}, 'json', 60, os.path.getsize({p!r}),"
        " StreamDef('R', fields, 'ts'), DeadLetter())\n"
        "assert tail['temp'].tolist() == [3.0], tail\n")
    small = tmp_path / "small.jsonl"
    small.write_text('{"sensor": "s1", "ts": 1000, "temp": 1.0, "ok": true}\n'
                     '{"x": 1}\n{"sensor": "s1", "ts": 3000, "temp": 3.0, "ok": true}\n')
    baseline = _peak_rss_mb(read(str(small)).replace("'too_large'", "'null_timestamp'"))
    peak = _peak_rss_mb(read(str(path)))
    print(f"peak RSS: {baseline:.0f} MB on a small file, {peak:.0f} MB past a 256 MiB line")
    assert peak - baseline < 64


def test_parquet_row_with_a_huge_text_is_dead_lettered(tmp_path: Path) -> None:
    frame = pd.DataFrame({"sensor": ["s1", HUGE, "s1"], "ts": [1000, 2000, 3000],
                          "temp": [1.0, 2.0, 3.0], "ok": [True, True, True]})
    path = tmp_path / "r.parquet"
    frame.to_parquet(path)
    dead = DeadLetter()
    got = read_input(path, [("sensor", "string"), ("ts", "timestamp"),
                            ("temp", "double"), ("ok", "boolean")], "ts", dead)
    assert got["temp"].tolist() == [1.0, 3.0]
    assert dict(dead.reasons) == {"too_large": 1}
