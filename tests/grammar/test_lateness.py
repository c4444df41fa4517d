"""``CREATE SCHEMA ... TIMESTAMP ts LATENESS T``: the rule file's one watermark lateness."""

from __future__ import annotations

from grammar.compile import compile_text


def test_lateness_reaches_the_stream_and_the_file_takes_the_largest() -> None:
    module = compile_text(
        "CREATE VARIABLE long slack = 3;  -- seconds, as a bare number is\n"
        "CREATE SCHEMA A (k string, ts timestamp) TIMESTAMP ts LATENESS 10 sec;\n"
        "CREATE SCHEMA B (k string, ts timestamp) TIMESTAMP ts lateness slack;\n"
        "CREATE SCHEMA C (k string, ts timestamp) TIMESTAMP ts;\n"
        "SELECT k, count(*) AS n FROM A#time(1 min) GROUP BY k;\n")
    assert module.streams["A"].lateness_us == 10_000_000
    assert module.streams["B"].lateness_us == 3_000_000  # a bare number counts seconds
    assert module.streams["C"].lateness_us is None
    assert module.lateness_us == 10_000_000


def test_no_lateness_is_zero_and_lateness_stays_a_usable_name() -> None:
    module = compile_text(
        "CREATE SCHEMA A (lateness string, ts timestamp) TIMESTAMP ts;\n"
        "SELECT lateness, count(*) AS n FROM A#groupwin(lateness)#length(2);\n")
    assert module.lateness_us == 0
    assert compile_text("CREATE SCHEMA A (ts timestamp) TIMESTAMP ts LATENESS 0 sec;\n"
                        "SELECT ts AS at FROM A;\n").lateness_us == 0
