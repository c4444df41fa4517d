"""Property: rule text derived from the grammar itself compiles or fails with a RuleError,
and what compiles also runs; nothing ever raises another exception.

The mutation fuzzers (``test_parser_fuzz``, ``test_check_fuzz``) start from the example
rules; this one starts from ``cep/lang/epl.lark`` and reaches every production, so the
checker meets combinations no example has (windows on patterns, HAVING without windows,
INSERT INTO from joins, ...). Texts are random derivations of the grammar's rules with a
depth budget, made by a random generator seeded by hypothesis (a failure names its seed;
drawing every choice from hypothesis would shrink better but costs 10x), and the terminals
picked from small sets of names, numbers and strings that the declared schema knows, so
that many derivations get past name resolution. (``hypothesis.extra.lark.from_lark`` does
the same but needs over a second per example on this grammar.)
"""

from __future__ import annotations

import random
from collections import defaultdict
from functools import cache

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.lexer import PatternStr

from cep.engine.output import output_records
from cep.engine.table import SEQ
from cep.lang.compile import compile_text
from cep.lang.errors import RuleError
from cep.lang.grammar import lalr
from cep.reference import run_reference

SCHEMA = ("CREATE SCHEMA T (k string, a long, d double, b boolean, s string, ts timestamp) "
          "TIMESTAMP ts;\n")
FIELDS = ["k", "a", "d", "b", "s", "ts"]
TERMINALS = {  # repeated entries are drawn more often
    "NAME": ["T"] * 6 + FIELDS * 6 + [
        "x", "e", "length", "length_batch", "time", "time_batch", "keepall", "lastevent",
        "groupwin", "win", "std", "Name", "long", "string", "U"],
    # a NAME before '(' is a function (or a window)
    "FUNCTION": ["count", "sum", "avg", "max", "min", "stddev", "first", "last", "coalesce",
                 "abs", "lsh_bucket", "similarity", "lower", "upper", "length", "x"],
    "NUMBER": ["0", "1", "2", "3", "5", "10"] * 20 + [
        "1.5", "1e3", "2147483648", "99999999999999999999", "0.000001", "1e400"],
    "STRING": ["'x'", "'a%b_'", "''", "'it''s'", '"en"', "'\\n'", "'%a%a%a%b'"],
    "UNIT": ["min", "sec", "hours", "ms", "day", "usec"],
}
DEPTH = 8  # derivations lean to their shortest way out as they near it, and take it past it
SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@cache
def _grammar() -> tuple[dict[str, list[list[str]]], dict[str, int]]:
    """The grammar's productions by nonterminal, and each symbol's shortest height."""
    lark = lalr()
    productions: dict[str, list[list[str]]] = defaultdict(list)
    for rule in lark.rules:
        productions[rule.origin.name].append([s.name for s in rule.expansion])
    height = {t.name: 0 for t in lark.terminals}
    changed = True
    while changed:
        changed = False
        for name, expansions in productions.items():
            known = [e for e in expansions if all(s in height for s in e)]
            best = min((1 + max((height[s] for s in e), default=0) for e in known),
                       default=None)
            if best is not None and height.get(name) != best:
                height[name] = best
                changed = True
    return dict(productions), height


def _terminal(name: str, rng: random.Random) -> str:
    if name in TERMINALS:
        return rng.choice(TERMINALS[name])
    pattern = lalr().get_terminal(name).pattern
    assert isinstance(pattern, PatternStr), name
    word = pattern.value
    return word.upper() if rng.random() < 0.5 else word


def derive(symbol: str, rng: random.Random, depth: int = 0) -> list[str]:
    """A random derivation of ``symbol`` as a list of tokens."""
    productions, height = _grammar()
    if symbol not in productions:
        return [_terminal(symbol, rng)]
    expansions = productions[symbol]
    if rng.random() < depth / DEPTH:
        lowest = min(max((height[s] for s in e), default=0) for e in expansions)
        expansions = [e for e in expansions if max((height[s] for s in e), default=0)
                      == lowest]
    expansion = rng.choice(expansions)
    return [token for i, s in enumerate(expansion)
            for token in ([_terminal("FUNCTION", rng)] if expansion[i + 1:i + 2] == ["LPAR"]
                          and s == "NAME" else derive(s, rng, depth + 1))]


def _check(text: str) -> None:
    try:
        module = compile_text(text, "fuzz.epl")
    except RuleError as err:
        assert err.render().startswith("fuzz.epl:")
        return
    if module.input_streams == ("T",):
        n = 12
        tables = {"T": {SEQ: np.arange(n), "k": np.array(["p", "q", "r"] * 4, dtype=object),
                        "a": np.arange(n) % 5, "d": np.linspace(-1, 3, n),
                        "b": np.arange(n) % 2 == 0,
                        "s": np.array(["a%b", "x", "", "it's"] * 3, dtype=object),
                        "ts": np.arange(n) * 20_000_000}}
        output_records(run_reference(module, tables))


# Rules whose shape is fixed and whose expressions are derived: they get past the checker's
# classification of rules, so the expressions themselves are resolved and typed (and, the
# few times they are well typed, evaluated).
TEMPLATES = [
    "SELECT {e} AS c FROM T({e}) WHERE {e};",
    "SELECT k, {e} AS c FROM T#groupwin(k)#length(3) WHERE {e} HAVING {e};",
    "SELECT k, {e} AS c FROM T#groupwin(k)#time(30 sec) GROUP BY k HAVING {e};",
    "SELECT {e} AS c FROM T#lastevent AS LE, T#groupwin(k)#keepall AS TW "
    "WHERE LE.k = TW.k AND {e} HAVING {e};",
    "SELECT x.a AS c, {e} AS f FROM PATTERN [every x=T({e}) -> y=T({e}) WITHIN 1 min] "
    "PARTITION BY k;",
]


SEEDS = st.integers(0, 2**64 - 1)


@SETTINGS
@given(SEEDS)
def test_derived_rules_compile_or_fail_cleanly(seed: int) -> None:
    _check(SCHEMA + " ".join(derive("select_stmt", random.Random(seed))) + ";")


@SETTINGS
@given(st.sampled_from(TEMPLATES), SEEDS)
def test_derived_expressions_compile_and_run_or_fail_cleanly(template: str, seed: int) -> None:
    rng = random.Random(seed)
    _check(SCHEMA + template.replace("{e}", "{}").format(
        *(" ".join(derive("expr", rng)) for _ in range(template.count("{e}")))))


@SETTINGS
@given(SEEDS)
def test_derived_rule_files_compile_or_fail_cleanly(seed: int) -> None:
    _check(" ".join(derive("start", random.Random(seed))))
