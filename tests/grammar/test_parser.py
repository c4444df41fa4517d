"""The parser builds the documented AST for every construct of the rule language: whole
files, declarations, select statements, sources and patterns here, and the grammar itself
(no LALR conflicts, the reserved words); expressions and literals in
tests/grammar/test_parser_expressions.py, which takes its helpers from this module."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest
from lark import Lark, logger

from grammar import ast
from grammar.errors import Pos, RuleError
from grammar.grammar import lalr
from grammar.parser import parse

DESIGN_EXAMPLE = """\
CREATE SCHEMA Tweet (id long, ts timestamp, user string, text string) TIMESTAMP ts;
CREATE VARIABLE double tau = 0.2;            -- cep run … --set tau=0.3
CREATE VARIABLE int H = 500;

INSERT INTO KeyedTweet                       -- stateless derived stream
SELECT *, lsh_bucket(text, 4096) AS fingerprint FROM Tweet;

@Name('first_story')
SELECT LE.id, LE.text, MAX(similarity(LE.text, TW.text)) AS max_sim
FROM KeyedTweet#lastevent AS LE, KeyedTweet#groupwin(fingerprint)#length(H) AS TW
WHERE LE.fingerprint = TW.fingerprint
HAVING coalesce(MAX(similarity(LE.text, TW.text)), 0) <= tau;

@Name('busy_topic')
SELECT topic, count(*) AS n, avg(retweets) AS avg_rt
FROM Tweet(lang = 'en')#groupwin(topic)#time(10 min)
GROUP BY topic HAVING count(*) >= 100;

@Name('delay_streak')
SELECT a.tailnum AS tailnum, a.ts AS first_ts, c.ts AS last_ts
FROM PATTERN [ every a=Flight(dep_delay > 60) -> b=Flight(dep_delay > 60)
               -> c=Flight(dep_delay > 60) WITHIN 24 hours ]
PARTITION BY tailnum;
"""

LISTING_1 = (
    "SELECT * FROM Tweet.std:lastevent() LE, "
    "Tweet.std:groupwin(fingerprint).win:length(H) as TW "
    "WHERE LE.fingerprint = TW.fingerprint "
    "HAVING MAX(similarity(LE.text, TW.text)) <= tau;"
)

MINUTE = 60_000_000

# ---------------------------------------------------------------- helpers


def strip(node: object) -> object:
    """The same tree with every position set to None, to compare structure only."""
    if isinstance(node, Pos):
        return None
    if isinstance(node, tuple):
        return tuple(strip(item) for item in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {f.name: strip(getattr(node, f.name)) for f in dataclasses.fields(node)}
        return dataclasses.replace(node, **changes)
    return node


def sexpr(node: object) -> str:
    """A compact rendering of an expression or pattern, to state precedence tests."""
    match node:
        case ast.Literal(value=value, type="string"):
            return repr(value)
        case ast.Literal(value=value):
            return str(value)
        case ast.Name(name=name):
            return name
        case ast.Attr(base=base, name=name):
            return f"{base}.{name}"
        case ast.IndexedAttr(base=base, index=index, name=name):
            return f"{base}[{index}].{name}"
        case ast.Star(base=base):
            return f"{base}.*" if base else "*"
        case ast.Unary(op=op, operand=operand):
            return f"({op} {sexpr(operand)})"
        case ast.Binary(op=op, left=left, right=right):
            return f"({op} {sexpr(left)} {sexpr(right)})"
        case ast.InList(operand=operand, items=items, negated=negated):
            name = "not-in" if negated else "in"
            return f"({name} {sexpr(operand)} {' '.join(map(sexpr, items))})"
        case ast.Between(operand=operand, low=low, high=high, negated=negated):
            name = "not-between" if negated else "between"
            return f"({name} {sexpr(operand)} {sexpr(low)} {sexpr(high)})"
        case ast.Like(operand=operand, pattern=pattern, negated=negated):
            return f"({'not-like' if negated else 'like'} {sexpr(operand)} {sexpr(pattern)})"
        case ast.IsNull(operand=operand, negated=negated):
            return f"({'is-not-null' if negated else 'is-null'} {sexpr(operand)})"
        case ast.Case(whens=whens, default=default):
            parts = " ".join(f"[{sexpr(c)} {sexpr(v)}]" for c, v in whens)
            return f"(case {parts}{'' if default is None else ' ' + sexpr(default)})"
        case ast.Call(name=name, args=args, distinct=distinct):
            inner = " ".join(map(sexpr, args))
            return f"{name}({'distinct ' if distinct else ''}{inner})"
        case ast.PatAtom(tag=tag, stream=stream, filter=filter_):
            where = "" if filter_ is None else f"({sexpr(filter_)})"
            return f"{tag}={stream}{where}" if tag else f"{stream}{where}"
        case ast.PatFollowedBy(left=left, right=right):
            return f"(-> {sexpr(left)} {sexpr(right)})"
        case ast.PatAnd(left=left, right=right):
            return f"(and {sexpr(left)} {sexpr(right)})"
        case ast.PatOr(left=left, right=right):
            return f"(or {sexpr(left)} {sexpr(right)})"
        case ast.PatNot(operand=operand):
            return f"(not {sexpr(operand)})"
        case ast.PatEvery(operand=operand):
            return f"(every {sexpr(operand)})"
        case ast.PatRepeat(count=count, operand=operand):
            return f"([{count}] {sexpr(operand)})"
        case ast.PatWithin(operand=operand, duration=duration):
            return f"(within {sexpr(operand)} {sexpr(duration)})"
    raise AssertionError(f"no rendering for {node!r}")


def rule(text: str) -> ast.SelectStatement:
    (statement,) = parse(text).statements
    assert isinstance(statement, ast.SelectStatement)
    return statement


def expr(text: str) -> ast.Expr:
    """The expression of ``SELECT <text> FROM T``."""
    return rule(f"SELECT {text} FROM T").select[0].expr


def stream(text: str) -> ast.StreamSource:
    """The source of ``SELECT * FROM <text>``."""
    (source,) = rule(f"SELECT * FROM {text}").sources
    assert isinstance(source, ast.StreamSource)
    return source


def pattern(text: str) -> ast.Pattern:
    """The pattern of ``SELECT * FROM PATTERN [<text>]``."""
    (source,) = rule(f"SELECT * FROM PATTERN [{text}]").sources
    assert isinstance(source, ast.PatternSource)
    return source.pattern


# ---------------------------------------------------------------- whole files


def test_design_example_parses_in_full() -> None:
    module = parse(DESIGN_EXAMPLE, "design.epl")
    assert module.source_name == "design.epl" and module.source == DESIGN_EXAMPLE
    kinds = [type(s).__name__ for s in module.statements]
    assert kinds == ["CreateSchema", "CreateVariable", "CreateVariable"] + ["SelectStatement"] * 4
    schema, tau, h, keyed, first, busy, streak = module.statements

    assert schema.name == "Tweet" and schema.timestamp == "ts"
    assert [(f.name, f.type) for f in schema.fields] == [
        ("id", "long"), ("ts", "timestamp"), ("user", "string"), ("text", "string"),
    ]
    assert (tau.type, tau.name, tau.default.value, tau.default.type) == (
        "double", "tau", 0.2, "double",
    )
    assert (h.type, h.name, h.default.value, h.default.type) == ("int", "H", 500, "int")

    assert keyed.insert_into == "KeyedTweet"
    assert keyed.insert_into_pos == Pos(5, 13, 5, 23)
    assert [sexpr(i.expr) for i in keyed.select] == ["*", "lsh_bucket(text 4096)"]
    assert keyed.select[1].alias == "fingerprint"

    assert first.annotations[0].name == "Name" and first.annotations[0].value == "first_story"
    assert [s.alias for s in first.sources] == ["LE", "TW"]
    assert [w.kind for w in first.sources[1].windows] == ["groupwin", "length"]
    assert sexpr(first.where) == "(= LE.fingerprint TW.fingerprint)"
    assert sexpr(first.having) == "(<= coalesce(max(similarity(LE.text TW.text)) 0) tau)"

    (source,) = busy.sources
    assert sexpr(source.filter) == "(= lang 'en')"
    assert [(w.kind, [sexpr(a) for a in w.args]) for w in source.windows] == [
        ("groupwin", ["topic"]), ("time", [str(10 * MINUTE)]),
    ]
    assert [sexpr(g) for g in busy.group_by] == ["topic"]
    assert sexpr(busy.having) == "(>= count(*) 100)"

    (source,) = streak.sources
    assert sexpr(source.pattern) == (
        "(within (-> (-> (every a=Flight((> dep_delay 60))) b=Flight((> dep_delay 60)))"
        " c=Flight((> dep_delay 60))) 86400000000)"
    )
    assert [sexpr(p) for p in streak.partition_by] == ["tailnum"]


def test_paper_listing_1_parses_like_the_hash_spelling() -> None:
    old = rule(LISTING_1)
    new = rule(
        "SELECT * FROM Tweet#lastevent LE, Tweet#groupwin(fingerprint)#length(H) as TW "
        "WHERE LE.fingerprint = TW.fingerprint "
        "HAVING MAX(similarity(LE.text, TW.text)) <= tau;"
    )
    assert strip(old) == strip(new)
    assert sexpr(old.having) == "(<= max(similarity(LE.text TW.text)) tau)"


def test_empty_and_comment_only_files_have_no_statements() -> None:
    assert parse("").statements == ()
    assert parse("  -- nothing\n/* at\n all */\n").statements == ()
    assert parse(";").statements == ()


def test_the_last_semicolon_is_optional() -> None:
    assert strip(parse("SELECT a FROM T")) != strip(parse("SELECT a FROM T;"))  # sources differ
    assert strip(parse("SELECT a FROM T").statements) == strip(parse("SELECT a FROM T;").statements)
    assert len(parse("SELECT a FROM T; SELECT b FROM U").statements) == 2


def test_keywords_are_case_insensitive() -> None:
    lower = parse(DESIGN_EXAMPLE.lower().replace("tweet", "Tweet"))
    upper = parse(DESIGN_EXAMPLE.upper().replace("TWEET", "Tweet"))
    assert [type(s) for s in lower.statements] == [type(s) for s in upper.statements]
    mixed = rule("sElEcT a FrOm T wHeRe a iS nOt NuLl GrOuP bY a HaViNg TrUe")
    assert sexpr(mixed.where) == "(is-not-null a)" and sexpr(mixed.having) == "True"


def test_identifiers_keep_their_case_and_functions_are_lower_cased() -> None:
    statement = rule("SELECT MyField, COUNT(*), Coalesce(X, 1) AS Total FROM MyStream AS Ms")
    assert [sexpr(i.expr) for i in statement.select] == [
        "MyField", "count(*)", "coalesce(X 1)",
    ]
    assert statement.select[2].alias == "Total"
    assert (statement.sources[0].stream, statement.sources[0].alias) == ("MyStream", "Ms")


def test_comments_are_ignored_but_not_inside_strings() -> None:
    statement = rule(
        "SELECT a, -- the key\n"
        "  /* a block\n comment */ 'x -- y /* z */' AS s\n"
        "FROM T -- last\n"
    )
    assert [sexpr(i.expr) for i in statement.select] == ["a", "'x -- y /* z */'"]


# ---------------------------------------------------------------- declarations


@pytest.mark.parametrize(
    ("written", "normalised"),
    [
        ("int", "int"), ("integer", "int"), ("INT", "int"), ("long", "long"),
        ("bigint", "long"), ("double", "double"), ("float", "double"),
        ("boolean", "boolean"), ("bool", "boolean"), ("string", "string"),
        ("String", "string"), ("timestamp", "timestamp"),
    ],
)
def test_schema_types_are_normalised(written: str, normalised: str) -> None:
    (schema,) = parse(f"CREATE SCHEMA S (f {written})").statements
    assert schema.fields[0].type == normalised
    (variable,) = parse(f"CREATE VARIABLE {written} v").statements
    assert variable.type == normalised and variable.default is None


def test_schema_with_as_and_without_timestamp() -> None:
    (schema,) = parse("create schema Flight as (tailnum string, dep_delay double)").statements
    assert schema == ast.CreateSchema(
        name="Flight",
        fields=(
            ast.FieldDecl("tailnum", "string", Pos(1, 26, 1, 40)),
            ast.FieldDecl("dep_delay", "double", Pos(1, 42, 1, 58)),
        ),
        timestamp=None,
        pos=Pos(1, 1, 1, 59),
    )


def test_schema_timestamp_position() -> None:
    (schema,) = parse("CREATE SCHEMA S (t timestamp)\n  TIMESTAMP t;").statements
    assert schema.timestamp == "t" and schema.timestamp_pos == Pos(2, 13, 2, 14)


def test_variable_default_is_an_expression() -> None:
    (variable,) = parse("CREATE VARIABLE long window_size = 10 * 60;").statements
    assert sexpr(variable.default) == "(* 10 60)"


def test_words_that_are_not_reserved_stay_usable_as_names() -> None:
    statement = rule(
        "SELECT timestamp, schema, variable, timer, min, sec, hours, std, win, count "
        "FROM timestamp"
    )
    assert [sexpr(i.expr) for i in statement.select] == [
        "timestamp", "schema", "variable", "timer", "min", "sec", "hours", "std", "win", "count",
    ]
    assert statement.sources[0].stream == "timestamp"


# ---------------------------------------------------------------- select statement


def test_select_items() -> None:
    statement = rule("SELECT *, LE.*, a AS x, b y, c, count(*) n FROM T")
    assert [(sexpr(i.expr), i.alias) for i in statement.select] == [
        ("*", None), ("LE.*", None), ("a", "x"), ("b", "y"), ("c", None), ("count(*)", "n"),
    ]
    star, alias_star = statement.select[0].expr, statement.select[1].expr
    assert star == ast.Star(Pos(1, 8, 1, 9)) and alias_star.base == "LE"


def test_all_clauses_in_order() -> None:
    statement = rule(
        "@Name('r') @Priority(5) @Audit @Flag(true) INSERT INTO Out "
        "SELECT a FROM T WHERE a > 1 GROUP BY a, b HAVING count(*) > 2 PARTITION BY a, b"
    )
    assert [(a.name, a.value) for a in statement.annotations] == [
        ("Name", "r"), ("Priority", 5), ("Audit", None), ("Flag", True),
    ]
    assert statement.insert_into == "Out"
    assert sexpr(statement.where) == "(> a 1)"
    assert [sexpr(g) for g in statement.group_by] == ["a", "b"]
    assert sexpr(statement.having) == "(> count(*) 2)"
    assert [sexpr(p) for p in statement.partition_by] == ["a", "b"]


def test_absent_clauses_are_empty() -> None:
    statement = rule("SELECT a FROM T")
    assert statement.annotations == () and statement.insert_into is None
    assert statement.where is None and statement.having is None
    assert statement.group_by == () and statement.partition_by == ()
    assert statement.insert_into_pos is None


def test_statement_positions_span_their_text() -> None:
    module = parse("CREATE VARIABLE int n = 1;\n\n@Name('r')\nSELECT a\n  FROM T#length(n) AS x;")
    variable, statement = module.statements
    assert variable.pos == Pos(1, 1, 1, 26)
    assert statement.pos == Pos(3, 1, 5, 24)
    (source,) = statement.sources
    assert source.pos == Pos(5, 8, 5, 24)
    assert source.windows[0].pos == Pos(5, 9, 5, 19)
    assert source.windows[0].args[0] == ast.Name("n", Pos(5, 17, 5, 18))


# ---------------------------------------------------------------- sources


def test_stream_sources() -> None:
    assert stream("T") == ast.StreamSource("T", None, (), None, Pos(1, 15, 1, 16))
    assert stream("T()").filter is None
    assert sexpr(stream("T(a > 1 and b = 'x')").filter) == "(and (> a 1) (= b 'x'))"
    assert stream("T AS t").alias == "t" and stream("T t").alias == "t"
    assert stream("T(a > 1)#length(5) AS t").alias == "t"
    assert [s.stream for s in rule("SELECT * FROM A, B b, C AS c").sources] == ["A", "B", "C"]


@pytest.mark.parametrize(
    ("hash_spelling", "view_spelling"),
    [
        ("#length(5)", ".win:length(5)"),
        ("#length_batch(H)", ".win:length_batch(H)"),
        ("#time(10 min)", ".win:time(10 min)"),
        ("#time_batch(1 hour 30 minutes)", ".win:time_batch(1 hour 30 minutes)"),
        ("#lastevent", ".std:lastevent()"),
        ("#lastevent()", ".std:lastevent"),
        ("#keepall", ".win:keepall()"),
        ("#groupwin(a, b)", ".std:groupwin(a, b)"),
        ("#groupwin(fingerprint)#length(H)", ".std:groupwin(fingerprint).win:length(H)"),
        ("#groupwin(k).win:time(5 sec)", ".std:groupwin(k)#time(5 sec)"),
        ("#LENGTH(5)", ".WIN:Length(5)"),
    ],
)
def test_both_window_spellings_give_the_same_windows(
    hash_spelling: str, view_spelling: str
) -> None:
    hashed = stream(f"Tweet{hash_spelling} AS w").windows
    viewed = stream(f"Tweet{view_spelling} AS w").windows
    assert strip(hashed) == strip(viewed)
    assert all(w.kind == w.kind.lower() for w in hashed)


def test_window_kinds_and_arguments() -> None:
    windows = stream("T#groupwin(a, b.c)#length_batch(100)#time(5 sec)#keepall").windows
    assert [(w.kind, [sexpr(a) for a in w.args]) for w in windows] == [
        ("groupwin", ["a", "b.c"]), ("length_batch", ["100"]), ("time", ["5000000"]),
        ("keepall", []),
    ]


def test_pattern_source_alias() -> None:
    (source,) = rule("SELECT * FROM PATTERN [a=A] AS p").sources
    assert source.alias == "p"
    (source,) = rule("SELECT * FROM PATTERN [a=A] p").sources
    assert source.alias == "p"
    (source,) = rule("SELECT * FROM PATTERN [a=A]").sources
    assert source.alias is None and source.pos == Pos(1, 15, 1, 28)


# ---------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("A", "A"),
        ("a=A", "a=A"),
        ("a=A(x > 1)", "a=A((> x 1))"),
        ("A()", "A"),
        ("every a=A -> b=B", "(-> (every a=A) b=B)"),
        ("a=A -> b=B -> c=C", "(-> (-> a=A b=B) c=C)"),
        ("every a=A -> (b=B and not c=C)", "(-> (every a=A) (and b=B (not c=C)))"),
        ("a=A or b=B and c=C", "(or a=A (and b=B c=C))"),
        ("a=A and b=B or c=C", "(or (and a=A b=B) c=C)"),
        ("a=A -> b=B or c=C", "(-> a=A (or b=B c=C))"),
        ("not a=A and b=B", "(and (not a=A) b=B)"),
        ("every (a=A -> b=B)", "(every (-> a=A b=B))"),
        ("every not a=A", "(every (not a=A))"),
        ("[3] a=A", "([3] a=A)"),
        ("every [2] a=A -> b=B", "(-> (every ([2] a=A)) b=B)"),
        ("[3] (a=A -> b=B)", "([3] (-> a=A b=B))"),
        ("a=A -> b=B WITHIN 10 sec", "(within (-> a=A b=B) 10000000)"),
        ("a=A -> b=B within H", "(within (-> a=A b=B) H)"),
        ("a=A -> b=B WITHIN 30", "(within (-> a=A b=B) 30)"),
        ("a=A WITHIN 1 min -> b=B", None),
        ("(a=A WITHIN 1 min) -> b=B", "(-> (within a=A 60000000) b=B)"),
        ("(every a=A -> b=B) where timer:within(10 min)",
         "(within (-> (every a=A) b=B) 600000000)"),
        ("every a=A -> b=B where timer:within(10 min)",
         "(within (-> (every a=A) b=B) 600000000)"),
        ("every a=A -> (b=B WHERE Timer:Within(H * 2))",
         "(-> (every a=A) (within b=B (* H 2)))"),
        ("EVERY a=A -> B AND NOT c=C OR d=D", "(-> (every a=A) (or (and B (not c=C)) d=D))"),
    ],
)
def test_pattern_precedence(text: str, tree: str | None) -> None:
    if tree is None:  # WITHIN only ends a pattern; elsewhere it needs parentheses
        with pytest.raises(RuleError, match="unexpected '->'"):
            pattern(text)
    else:
        assert sexpr(pattern(text)) == tree


def test_both_within_spellings_give_the_same_node() -> None:
    within = pattern("every a=A -> b=B WITHIN 10 min")
    timer = pattern("every a=A -> b=B where timer:within(10 min)")
    assert isinstance(within, ast.PatWithin) and strip(within) == strip(timer)


def test_pattern_positions() -> None:
    tree = pattern("every a=Flight(d > 60) -> b=Flight")
    assert tree.pos == Pos(1, 24, 1, 58)
    assert tree.left.pos == Pos(1, 24, 1, 46)
    assert tree.left.operand.pos == Pos(1, 30, 1, 46)
    assert tree.right == ast.PatAtom("b", "Flight", None, Pos(1, 50, 1, 58))


# ---------------------------------------------------------------- the grammar itself


def test_grammar_has_no_lalr_conflicts() -> None:
    """Lark resolves shift/reduce conflicts silently (as shift); debug mode logs them."""
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        Lark(
            _grammar_text(), parser="lalr", propagate_positions=True,
            maybe_placeholders=False, debug=True,
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    assert not [r for r in records if "conflict" in r.lower()]


def test_reserved_words_are_keywords_of_the_grammar() -> None:
    """NAME's lookahead must list exactly the keywords a name could be confused with."""
    keywords = {
        t.pattern.value for t in lalr().terminals
        if t.pattern.type == "str" and t.pattern.value.isalpha()
    }
    reserved = set(
        re.search(r"\(\?!\(\?:([a-z|]+)\)", lalr().get_terminal("NAME").pattern.value)
        [1].split("|")
    )
    contextual = {"schema", "variable", "timestamp", "timer", "istream", "rstream", "irstream",
                  "output", "all", "first", "last", "snapshot", "events", "until",
                  "interval", "measures", "define", "after", "match",
                  "skip", "past", "row", "to", "next", "current"}
    contextual |= {"format"}  # FORMAT, only after a schema field's type or path
    contextual |= {"lateness"}  # LATENESS, only after a schema's TIMESTAMP field
    # MATCH_RECOGNIZE's ROWS PER MATCH and its modes, PERMUTE, SUBSET, RUNNING
    # and FINAL at the start of a measure
    contextual |= {"one", "rows", "per", "show", "omit", "empty", "matches", "with",
                   "unmatched", "permute", "subset", "running", "final"}
    assert reserved <= keywords
    assert keywords - reserved == contextual


def _grammar_text() -> str:
    from importlib.resources import files

    return files("grammar").joinpath("epl.lark").read_text(encoding="utf-8")
