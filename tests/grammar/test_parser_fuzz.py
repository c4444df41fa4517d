"""Whatever the text, parse() returns a Module or raises a located RuleError.

Mutations of realistic rules reach deep into the grammar (almost-valid text is where
error handling gets exercised), random unicode checks the lexer's edges.
"""

from __future__ import annotations

import dataclasses
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.rule_edits import TOKEN, VOCABULARY, edit_tokens

from grammar import ast
from grammar.errors import Pos, RuleError
from grammar.parser import parse

RULES = [
    """CREATE SCHEMA Tweet (id long, ts timestamp, user string, text string) TIMESTAMP ts;
CREATE VARIABLE double tau = 0.2;
INSERT INTO KeyedTweet SELECT *, lsh_bucket(text, 4096) AS fingerprint FROM Tweet;
@Name('first_story')
SELECT LE.id, LE.text, MAX(similarity(LE.text, TW.text)) AS max_sim
FROM KeyedTweet#lastevent AS LE, KeyedTweet#groupwin(fingerprint)#length(H) AS TW
WHERE LE.fingerprint = TW.fingerprint
HAVING coalesce(MAX(similarity(LE.text, TW.text)), 0) <= tau;
""",
    "SELECT * FROM Tweet.std:lastevent() LE, Tweet.std:groupwin(fingerprint).win:length(H) "
    "as TW WHERE LE.fingerprint = TW.fingerprint HAVING MAX(similarity(LE.text, TW.text)) <= tau;",
    """@Name('busy_topic') -- hot topics
SELECT topic, count(*) AS n, avg(retweets) AS avg_rt
FROM Tweet(lang = 'en' AND NOT (retweets BETWEEN 1 AND 5))#groupwin(topic)#time(10 min)
GROUP BY topic HAVING count(*) >= 100 OR max(retweets) IS NOT NULL;
""",
    """@Name('delay_streak')
SELECT a.tailnum AS tailnum, a.ts AS first_ts, c[0].ts AS last_ts
FROM PATTERN [ every a=Flight(dep_delay > 60) -> (b=Flight(dep_delay > 60) and not x=Cancel)
               -> [2] c=Flight(dep_delay > 60) where timer:within(1 hour 30 minutes) ] AS p
PARTITION BY tailnum;
""",
    """/* derived */ INSERT INTO Scored
SELECT id, CASE WHEN score > 0.5e1 THEN 'hot' WHEN score IS NULL THEN "n/a" ELSE 'it''s' END
  AS label, -score * 2 % 7 || '\\n' AS s, user NOT LIKE 'bot%', lang IN ('en', 'fr')
FROM Tweet#time_batch(500 msec)#length_batch(2147483648);
""",
]

CHARS = st.one_of(st.sampled_from(list("()[];,.'\"#@-/*=<>|!$&:%\\\n\t 019aeZ_")), st.characters())


@st.composite
def mutated_rule(draw: st.DrawFn) -> str:
    """A realistic rule after a few random character or token edits."""
    text = draw(st.sampled_from(RULES))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 12)))
        edit = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "truncate",
                                     "splice", "tokens"]))
        if edit == "delete":
            text = text[:i] + text[j:]
        elif edit == "insert":
            text = text[:i] + draw(st.text(CHARS, min_size=1, max_size=4)) + text[i:]
        elif edit == "replace":
            text = text[:i] + draw(st.text(CHARS, min_size=1, max_size=4)) + text[j:]
        elif edit == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif edit == "truncate":
            text = text[:i]
        elif edit == "splice":
            other = draw(st.sampled_from(RULES))
            text = text[:i] + other[draw(st.integers(0, len(other))):]
        else:
            text = edit_tokens(draw, TOKEN.findall(text))
    return text


def _positions(node: object) -> list[Pos]:
    """Every position in an AST."""
    if isinstance(node, Pos):
        return [node]
    if isinstance(node, tuple):
        return [p for item in node for p in _positions(item)]
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return [p for f in dataclasses.fields(node) for p in _positions(getattr(node, f.name))]
    return []


def _check(text: str) -> None:
    """parse() either builds a module whose positions lie in the text, or raises a
    RuleError whose rendering starts with file:line:col inside the text."""
    lines = text.split("\n")
    try:
        module = parse(text, "fuzz.epl")
    except RuleError as err:
        rendered = err.render()
        head = re.match(r"fuzz\.epl:(\d+):(\d+): error: \S", rendered)
        assert head, rendered
        line, column = int(head[1]), int(head[2])
        assert 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]) + 1, rendered
        assert err.source == text
        return
    assert isinstance(module, ast.Module)
    for pos in _positions(module.statements):
        assert 1 <= pos.line <= pos.end_line <= len(lines)
        assert pos.line < pos.end_line or pos.column < pos.end_column


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_seed_rule_parses() -> None:
    assert [len(parse(text).statements) for text in RULES] == [4, 1, 1, 1, 1]


@FUZZ
@given(mutated_rule())
def test_mutated_rules_parse_or_fail_cleanly(text: str) -> None:
    _check(text)


@FUZZ
@given(st.text(max_size=200))
def test_random_text_parses_or_fails_cleanly(text: str) -> None:
    _check(text)


@FUZZ
@given(st.lists(st.sampled_from([*VOCABULARY, "a", "b", "T", "1", "'s'"]), max_size=40))
def test_random_token_soup_parses_or_fails_cleanly(tokens: list[str]) -> None:
    _check(" ".join(tokens))
