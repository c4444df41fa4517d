"""Each pass of the checker runs alone, on a Context or less, without the driver: the
declarations, the expression typer, the windows, keys and stages, the SELECT list and a
rule kind (see the order in ``grammar.check``)."""

from __future__ import annotations

import pytest

from grammar import ast, ir
from grammar.check.context import Context, Stage
from grammar.check.declarations import declare_schema, declare_variable
from grammar.check.expressions import ExpressionTyper
from grammar.check.scope import single_scope
from grammar.check.select import columns
from grammar.check.single_stream import single_stream_rule
from grammar.check.stages import claim_key, enter_stage, place_target
from grammar.check.windows import windows
from grammar.errors import NOWHERE, RuleError
from grammar.parser import parse

DECLARATIONS = ("CREATE SCHEMA T (k string, a long, ts timestamp) TIMESTAMP ts;"
                "CREATE VARIABLE long n = 3;")
T = ir.StreamDef("T", (("k", "string"), ("a", "long"), ("ts", "timestamp")), "ts")
N = ir.Variable("n", "long", 3)


def _declared(rule: str) -> tuple[Context, ast.SelectStatement]:
    """A context holding T and n, and the parsed rule (not checked)."""
    module = parse(DECLARATIONS + rule)
    ctx = Context(module, {})
    schema, variable, stmt = module.statements
    declare_schema(ctx, schema)  # type: ignore[arg-type]
    declare_variable(ctx, variable)  # type: ignore[arg-type]
    return ctx, stmt  # type: ignore[return-value]


def _expr(text: str) -> ast.Expr:
    return parse(f"SELECT {text} FROM T;").statements[0].select[0].expr  # type: ignore[union-attr]


def test_declarations() -> None:
    ctx, _ = _declared("SELECT a FROM T;")
    assert ctx.streams == {"T": T}
    assert ctx.input_streams == ["T"]
    assert ctx.variables == {"n": N}


def test_the_expression_typer_needs_only_the_variables() -> None:
    typer = ExpressionTyper({"n": N})
    typed = typer.expr(_expr("a + n * 2"), single_scope(T, None))
    assert typed == ir.Op("+", (ir.FieldRef("", "a", "long"), ir.Const(6, "long")), "long")
    assert typer.positive_duration_us(_expr("n sec"), "WITHIN") == 3_000_000
    with pytest.raises(RuleError) as info:
        typer.positive_duration_us(_expr("n - 3"), "WITHIN")
    assert info.value.message == "WITHIN needs a positive duration"


def test_windows_and_their_key() -> None:
    ctx, stmt = _declared("SELECT a FROM T#groupwin(k)#length(n);")
    source = stmt.sources[0]
    assert isinstance(source, ast.StreamSource)
    assert windows(ctx, source, T) == (ir.WindowSpec("length", 3), "k")


def test_the_keys_of_a_stage() -> None:
    stage = Stage()
    claim_key(stage, "first", "k", NOWHERE)
    claim_key(stage, "second", "k", NOWHERE)
    assert (stage.key, stage.key_owner) == ("k", ("first", NOWHERE))
    with pytest.raises(RuleError) as info:
        claim_key(stage, "third", None, NOWHERE)
    assert info.value.message == "rule 'third' has no key, but rule 'first' is keyed by k"


def test_the_select_list() -> None:
    ctx, stmt = _declared("SELECT *, a + 1 FROM T;")
    selected = columns(ctx, stmt.select, single_scope(T, None), star_qualifier="",
                       star_stream=T)
    # ts is the output row's own: SELECT * leaves it out
    assert [c.name for c in selected] == ["k", "a", "a + 1"]


def test_a_rule_kind_and_its_stage() -> None:
    ctx, stmt = _declared("INSERT INTO U SELECT k, count(*) AS c FROM T#groupwin(k)#length(2);")
    enter_stage(ctx, stmt)
    source = stmt.sources[0]
    assert isinstance(source, ast.StreamSource)
    rule = single_stream_rule(ctx, stmt, "counts", source)
    assert isinstance(rule, ir.WindowRule)
    assert (rule.key, rule.window, [c.name for c in rule.columns]) == (
        "k", ir.WindowSpec("length", 2), ["k", "c"])
    ctx.outputs.append("counts")
    ctx.stage.stateful.append(rule)
    place_target(ctx, stmt, stateful=True, name="counts")
    assert ctx.stream_stage == {"U": 1}
    assert ctx.streams["U"] == ir.StreamDef("U", (("k", "string"), ("c", "long")), None,
                                            derived=True)
    assert ctx.outputs == []
