"""CREATE SCHEMA fields with FROM paths and FORMAT: parsed, checked, carried in the IR
(the errors are in the tests/data/broken and broken_semantic corpora: schema_*.epl)."""

from __future__ import annotations

import pytest

from grammar import ir
from grammar.compile import compile_text
from grammar.errors import RuleError


def schema(fields: str) -> ir.StreamDef:
    return compile_text(f"CREATE SCHEMA E ({fields}) TIMESTAMP ts; SELECT * FROM E;").streams["E"]


def test_paths_and_formats_reach_the_stream_definition() -> None:
    s = schema("id long, ts timestamp FROM 'ts', 'created_at' FORMAT 'EEE MMM dd HH:mm:ss Z yyyy',"
               " user string FROM 'user.screen_name', 'user', text string,"
               " at timestamp format \"yyyy-MM-dd'T'HH:mm\"")
    assert s.fields == (("id", "long"), ("ts", "timestamp"), ("user", "string"),
                        ("text", "string"), ("at", "timestamp"))
    assert s.source("ts") == ir.FieldSource(("ts", "created_at"), "EEE MMM dd HH:mm:ss Z yyyy")
    assert s.source("user") == ir.FieldSource(("user.screen_name", "user"))
    assert s.source("at") == ir.FieldSource(("at",), "yyyy-MM-dd'T'HH:mm")
    assert s.source("text") == ir.FieldSource(("text",))  # no FROM: its own name
    assert dict(s.sources).keys() == {"ts", "user", "at"}


def test_from_and_format_stay_usable_as_names() -> None:
    s = schema("format string FROM 'fmt', ts timestamp FORMAT 'epoch_s'")
    assert s.fields == (("format", "string"), ("ts", "timestamp"))
    assert s.source("ts").format == "epoch_s"
    module = compile_text("CREATE SCHEMA E (format string, ts timestamp) TIMESTAMP ts;"
                          "SELECT format FROM E(format = 'x');")
    assert module.streams["E"].source("format").paths == ("format",)


@pytest.mark.parametrize(("fields", "says"), [
    ("ts timestamp FORMAT ''", "empty timestamp format"),
    ("ts timestamp FORMAT 'yyyy-MM-dd QQ'", "pattern letter 'QQ'"),
    ("ts timestamp FORMAT 'yyyy ''x'", "unterminated quoted text"),
    ("ts timestamp, n int FORMAT 'epoch_s'", "FORMAT is for timestamp fields"),
    ("ts timestamp FROM ''", "bad field path ''"),
    ("ts timestamp FROM 'a', '.b'", "bad field path '.b'"),
])
def test_bad_paths_and_formats_are_rule_errors(fields: str, says: str) -> None:
    with pytest.raises(RuleError, match=says):
        schema(fields)
