"""``cep check`` describes rules in their author's terms: durations in the largest whole
unit, windows, patterns and MATCH_RECOGNIZE in one line, output rate limiting, timers,
keys, the stages of an INSERT INTO chain and the event-time settings; ``--json`` the same
as data. The text is pinned for every example rule and one rule of each construct."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cep.cli import main
from cep.cli.check import describe
from grammar.compile import compile_file, compile_text
from grammar.describe import duration_text

ROOT = Path(__file__).parent.parent
HEAD = "event time: watermark = the largest timestamp so far (no LATENESS declared)\n" \
       "late events: processed as they come (--late process)\n"
TWEET = ("  Tweet (input): id long, ts timestamp, user string, lang string, text string, "
         "retweets int, topic string TIMESTAMP ts\n")
FSD = (
    "key: fingerprint\n"
    "streams:\n" + TWEET
    + "  KeyedTweet (derived): id long, ts timestamp, user string, lang string, text string, "
    "retweets int, topic string, fingerprint int TIMESTAMP ts\n"
    "variables:\n"
    "  double tau = 0.2\n"
    "  int H = 500\n"
    "  int buckets = 4096\n"
    + HEAD + "rules:\n"
    "  rule1: stateless on Tweet -> INSERT INTO KeyedTweet\n"
    "  first_story: #lastevent join of KeyedTweet with #length(500) on KeyedTweet, key "
    "fingerprint -> output")
EXAMPLES = {
    "busy_topic.epl": (
        "key: topic\n"
        "streams:\n" + TWEET
        + "variables:\n"
        "  int threshold = 3\n"
        + HEAD + "rules:\n"
        "  busy_topic: window #time(10 min) on Tweet, key topic -> output\n"
        "    timer: a row leaves the window 10 min after its time"),
    "delay_streak.epl": (
        "key: tailnum\n"
        "streams:\n"
        "  Flight (input): tailnum string, ts timestamp, origin string, dest string, "
        "dep_delay int TIMESTAMP ts\n"
        "variables:\n"
        "  int late = 60\n"
        + HEAD + "rules:\n"
        "  delay_streak: pattern [every a=Flight(a.dep_delay > 60) -> "
        "b=Flight(b.dep_delay > 60) -> c=Flight(c.dep_delay > 60) WITHIN 24 hours], key "
        "tailnum -> output\n"
        "    timer: WITHIN 24 hours discards a partial match that long after its first event"),
    "fsd.epl": FSD,
    "fsd_listing1.epl": FSD,
    "sensor_average.epl": (
        "key: sensor\n"
        "streams:\n"
        "  Reading (input): sensor string, ts timestamp, temp double, ok boolean TIMESTAMP ts\n"
        "variables:\n"
        "  double limit = 30.0\n"
        + HEAD + "rules:\n"
        "  overheating: window #length(5) on Reading, key sensor -> output"),
}


def test_every_example_rule_is_pinned() -> None:
    assert sorted(EXAMPLES) == sorted(p.name for p in (ROOT / "rules").glob("*.epl"))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_rules_are_described_as_written(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    path = f"rules/{name}"
    assert describe(compile_file(path)) == f"{path}: ok\n{EXAMPLES[name]}"


SCHEMA = ("CREATE SCHEMA S (k string, ts timestamp, v double) TIMESTAMP ts;\n"
          "CREATE SCHEMA B (k string, ts timestamp) TIMESTAMP ts;\n")
HOUR_US = 3_600_000_000
ROW_LEAVES = "    timer: a row leaves the window {} after its time"
FAMILIES = [
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#time(2 hours)",
     ["  rule1: window #time(2 hours) on S, key k -> output", ROW_LEAVES.format("2 hours")]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#time_batch(90 sec)",
     ["  rule1: window #time_batch(90 sec) on S, key k -> output",
      "    timer: each 90 sec bucket is emitted at its end"]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#time_length_batch(30 sec, 100)",
     ["  rule1: window #time_length_batch(30 sec, 100) on S, key k -> output",
      "    timer: a batch is emitted 30 sec after its first event, or at 100 events"]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#firsttime(250 msec)",
     ["  rule1: window #firsttime(250 msec) on S, key k -> output",
      "    timer: the window closes 250 msec after the key's first event"]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#length_batch(10)",
     ["  rule1: window #length_batch(10) on S, key k -> output"]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#firstlength(3)",
     ["  rule1: window #firstlength(3) on S, key k -> output"]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#unique(v)",
     ["  rule1: window #unique(v) on S, key k -> output"]),
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#keepall",  # with --state-ttl '1 hour'
     ["  rule1: window #keepall on S, key k -> output",
      "    timer: a row is freed 1 hour after its time (state TTL)"]),
    # Esper's ext_timed on the TIMESTAMP field is #time, which is what runs
    ("SELECT k, count(*) AS n FROM S#groupwin(k)#ext_timed(ts, 48 hours)",
     ["  rule1: window #time(48 hours) on S, key k -> output",
      ROW_LEAVES.format("48 hours")]),
    ("SELECT k, avg(v) AS a FROM S#groupwin(k)#time(5 min) OUTPUT LAST EVERY 30 seconds",
     ["  rule1: window #time(5 min) on S, key k -> output",
      "    output: OUTPUT LAST EVERY 30 seconds", ROW_LEAVES.format("5 min"),
      "    timer: each key's 30 seconds interval releases its rows at its end"]),
    ("SELECT k, avg(v) AS a FROM S#groupwin(k)#length(5) OUTPUT SNAPSHOT EVERY 3 EVENTS",
     ["  rule1: window #length(5) on S, key k -> output",
      "    output: OUTPUT SNAPSHOT EVERY 3 EVENTS"]),
    ("SELECT a.k AS k FROM PATTERN [every a=S -> (timer:interval(10 sec) and not b=B)] "
     "PARTITION BY k",
     ["  rule1: pattern [every a=S -> (timer:interval(10 sec) and not b=B)], key k -> output",
      "    timer: timer:interval(10 sec) completes 10 sec after its sub-pattern starts"]),
    ("SELECT a[0].k AS k FROM PATTERN [every ([2:] a=S(v > 1) until b=B) WITHIN 1 hour] "
     "PARTITION BY k",
     ["  rule1: pattern [every ([2:] a=S(a.v > 1) until b=B) WITHIN 1 hour], key k -> output",
      "    timer: WITHIN 1 hour discards a partial match that long after its first event"]),
    ("SELECT a.k AS k FROM PATTERN [every (a=S or b=B) -> [3] c=S] PARTITION BY k",
     ["  rule1: pattern [every (a=S or b=B) -> [3] c=S], key k -> output"]),
    ("SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k MEASURES A.v AS first_v "
     "PATTERN (A B+? (C | D){2,3} E*) WITHIN 36 hours "
     "DEFINE A AS A.v > 1, B AS B.v < 1, C AS C.v = 1, D AS D.v = 2)",
     ["  rule1: MATCH_RECOGNIZE PATTERN (A B+? (C | D){2,3} E*) WITHIN 36 hours on S, "
      "AFTER MATCH SKIP PAST LAST ROW, key k -> output",
      "    timer: WITHIN 36 hours drops a start that long after its row"]),
    ("SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k MEASURES CLASSIFIER() AS c "
     "ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO LAST B "
     "PATTERN (^ A {- B+ -} PERMUTE(C, D) ()) SUBSET U = (A, B) "
     "DEFINE B AS B.v < PREV(B.v, 2), C AS C.v > FIRST(A.v), D AS avg(U.v) < 10)",
     ["  rule1: MATCH_RECOGNIZE PATTERN (^ A {- B+ -} (C D | D C) ()) SUBSET U = (A, B) on "
      "S, ALL ROWS PER MATCH WITH UNMATCHED ROWS, AFTER MATCH SKIP TO LAST B, key k -> "
      "output"]),
    ("SELECT LE.k AS k, count(*) AS n FROM S#lastevent AS LE, S#groupwin(k)#time(1 min) "
     "AS TW WHERE LE.k = TW.k",
     ["  rule1: #lastevent join of S with #time(1 min) on S, key k -> output",
      ROW_LEAVES.format("1 min")]),
    ("INSERT INTO Spike SELECT k, ts, avg(v) AS a FROM S#groupwin(k)#length(3);\n"
     "SELECT k, count(*) AS n FROM Spike#groupwin(k)#time(5 sec) OUTPUT FIRST EVERY 2 EVENTS",
     ["  rule1: window #length(3) on S, key k -> INSERT INTO Spike",
      "  rule2: window #time(5 sec) on Spike, key k, stage 1 (reads complex events) -> output",
      "    output: OUTPUT FIRST EVERY 2 EVENTS", ROW_LEAVES.format("5 sec"),
      "spark: 2 stages, each later stage one micro-batch behind the one before it (its "
      "keys by key grouping)"]),
]


@pytest.mark.parametrize(("rule", "lines"), FAMILIES,
                         ids=[f"{n}-{r.split('FROM ')[1][:28]}" for n, (r, _) in
                              enumerate(FAMILIES)])
def test_each_construct_is_described_in_the_authors_terms(rule: str, lines: list[str]) -> None:
    ttl = HOUR_US if "keepall" in rule else None
    text = describe(compile_text(SCHEMA + rule + ";", "t.epl", state_ttl_us=ttl))
    assert text.split("rules:\n", 1)[1].splitlines() == lines


def test_a_pattern_bounded_by_the_state_ttl_and_a_rule_without_key() -> None:
    ttl = compile_text(SCHEMA + "SELECT a.k AS k FROM PATTERN [every a=S -> b=B] "
                       "PARTITION BY k;", "t.epl", state_ttl_us=HOUR_US)
    assert describe(ttl).split("rules:\n", 1)[1].splitlines() == [
        "  rule1: pattern [every a=S -> b=B], key k -> output",
        "    timer: a partial match is freed 1 hour after its first event (state TTL)"]
    global_group = compile_text(SCHEMA + "SELECT count(*) AS n FROM S#length(3);", "t.epl")
    assert describe(global_group).splitlines()[1] == "key: (none: one global group)"
    assert describe(global_group).endswith(
        "  rule1: window #length(3) on S, no key (one global group) -> output")


def test_event_time_says_the_lateness_whose_it_is_and_the_late_policy() -> None:
    module = compile_text(
        "CREATE SCHEMA S (k string, ts timestamp) TIMESTAMP ts LATENESS 90 sec;\n"
        "CREATE SCHEMA B (k string, ts timestamp) TIMESTAMP ts LATENESS 2 min;\n"
        "CREATE SCHEMA C (k string, ts timestamp) TIMESTAMP ts LATENESS 1500 msec;\n"
        "SELECT a.k AS k FROM PATTERN [every a=S -> b=B -> c=C] PARTITION BY k;", "t.epl")
    text = describe(module, late="drop")
    assert "  S (input): k string, ts timestamp TIMESTAMP ts LATENESS 90 sec\n" in text
    assert "  C (input): k string, ts timestamp TIMESTAMP ts LATENESS 1500 msec\n" in text
    assert ("event time: watermark = the largest timestamp so far - 2 min (LATENESS of B)\n"
            "late events: dropped to the dead letters (--late drop)\n") in text
    untimed = compile_text("CREATE SCHEMA S (k string, v int);\n"
                           "SELECT k, count(*) AS n FROM S#groupwin(k)#length(2);", "u.epl")
    assert "event time: none (no input stream has a TIMESTAMP)\nrules:\n" in describe(untimed)


def test_durations_take_the_largest_unit_that_divides_them() -> None:
    us = {0: "0 sec", 1: "1 usec", 1_500: "1500 usec", 250_000: "250 msec",
          1_500_000: "1500 msec", 90_000_000: "90 sec", 600_000_000: "10 min",
          3_600_000_000: "1 hour", 86_400_000_000: "1 day", 129_600_000_000: "36 hours",
          172_800_000_000: "2 days"}
    assert {n: duration_text(n) for n in us} == us


def test_json_gives_the_same_as_data(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rule = tmp_path / "r.epl"
    rule.write_text("CREATE SCHEMA S (k string, ts timestamp, v double) TIMESTAMP ts "
                    "LATENESS 5 sec;\n@Name('avg') SELECT k, avg(v) AS a FROM "
                    "S#groupwin(k)#time(10 min) OUTPUT LAST EVERY 30 sec;\n")
    assert main(["check", str(rule), "--json", "--late", "drop"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["key"] == "k" and data["stage_keys"] == ["k"] and data["spark"] is None
    assert data["event_time"] == {"streams": {"S": "ts"},
                                  "lateness": {"text": "5 sec", "us": 5_000_000},
                                  "lateness_from": ["S"], "late": "drop"}
    assert data["streams"][0]["fields"][1] == {"name": "ts", "type": "timestamp"}
    assert data["rules"] == [{
        "name": "avg", "stage": 0, "kind": "window", "streams": ["S"], "key": "k",
        "windows": [{"stream": "S", "text": "#time(10 min)", "kind": "time",
                     "size_us": 600_000_000}],
        "output": {"text": "OUTPUT LAST EVERY 30 sec", "kind": "last", "events": None,
                   "period_us": 30_000_000},
        "into": None,
        "timers": ["a row leaves the window 10 min after its time",
                   "each key's 30 sec interval releases its rows at its end"]}]


def test_checking_a_chain_loads_no_data_library(tmp_path: Path) -> None:
    """Saying whether Spark takes an INSERT INTO chain needs the compiled rules only."""
    rule = tmp_path / "chain.epl"
    rule.write_text(SCHEMA + "INSERT INTO Spike SELECT k, ts FROM S#groupwin(k)#length(3);\n"
                    "SELECT k, count(*) AS n FROM Spike#groupwin(k)#length(2);\n")
    script = ("import io, contextlib, json, sys\nfrom cep.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              f"    assert main(['check', {str(rule)!r}]) == 0\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=300).stdout
    assert set(json.loads(out)) & {"numpy", "pandas", "pyarrow", "pyspark"} == set()


@pytest.mark.parametrize(("written", "described"), [
    ("upper(k), v * 2", "upper(k), (v * 2)"),
    ("coalesce(k, 'x'), -v", "coalesce(k, 'x'), -(v)"),
    ("case when v > 1 then k else 'it''s' end", "case when (v > 1) then k else 'it''s' end"),
    ("v between 1 and 2, k in ('a', 'b'), k is not null",
     "v between 1 and 2, k in ('a', 'b'), k is not null"),
    ("k not like 'a%'", "k not like 'a%'"),
])
def test_unique_keys_are_written_back_as_expressions(written: str, described: str) -> None:
    module = compile_text(SCHEMA + f"SELECT k, count(*) AS n FROM S#groupwin(k)#unique({written});",
                          "t.epl")
    assert describe(module).endswith(f"  rule1: window #unique({described}) on S, key k -> output")


def test_the_guide_quotes_what_cep_check_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    text = describe(compile_file("rules/delay_streak.epl"))
    assert f"$ cep check rules/delay_streak.epl\n{text}\n```" in guide
