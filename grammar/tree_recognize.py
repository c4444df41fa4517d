"""The tree builder's MATCH_RECOGNIZE: its clauses and its row patterns.

Part of :mod:`grammar.tree_builder`. The clauses come up as
:class:`~grammar.tree_statements.Clause` values and are read by kind where the source is
built; a row pattern is a tree of :class:`grammar.ast.RowPattern` nodes.
"""

from __future__ import annotations

from lark import Token, v_args
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from grammar import ast
from grammar.errors import Pos
from grammar.tokens import match_pos, token_pos
from grammar.tree_literals import whole_number
from grammar.tree_sources import Filter, split_alias
from grammar.tree_statements import Clause


@v_args(meta=True)
class RecognizeRules(Transformer_NonRecursive):
    """MATCH_RECOGNIZE sources, their clauses and row patterns."""

    def recognize_source(self, meta: Meta, children: list) -> ast.RecognizeSource:
        children, alias = split_alias(children)
        stream, *rest = children
        parts = {c.kind: c.value for c in rest if isinstance(c, Clause)}
        filters = [c.expr for c in rest if isinstance(c, Filter)]
        skip, skip_to = parts.get("skip", ("past last row", None))  # type: ignore[misc]
        rows, empty = parts.get("rows", ("one", "show"))  # type: ignore[misc]
        patterns = [c for c in rest if isinstance(c, ast.RowPattern)]
        return ast.RecognizeSource(
            stream=str(stream), filter=filters[0] if filters else None,
            partition_by=parts.get("partition_by", ()), measures=parts.get("measures", ()),
            skip=skip, pattern=patterns[0] if patterns else ast.RowPattern(
                "empty", match_pos(meta)),
            within=parts.get("within"), defines=parts["defines"], alias=alias,
            pos=match_pos(meta), skip_to=skip_to, rows=rows, empty=empty,
            subsets=parts.get("subsets", ()))

    def mr_partition(self, meta: Meta, children: list) -> Clause:
        return Clause("partition_by", tuple(children))

    def mr_measures(self, meta: Meta, children: list) -> Clause:
        return Clause("measures", tuple(children))

    def mr_measure(self, meta: Meta, children: list) -> tuple:
        semantics = None
        if len(children) == 3:
            semantics, children = children[0], children[1:]
        return children[0], str(children[1]), match_pos(meta), semantics

    def mr_semantics(self, meta: Meta, children: list) -> str:
        return str(children[0]).lower()

    def mr_one_row(self, meta: Meta, children: list) -> Clause:
        return Clause("rows", ("one", "show"))

    def mr_all_rows(self, meta: Meta, children: list) -> Clause:
        return Clause("rows", ("all", children[0] if children else "show"))

    def mr_empty(self, meta: Meta, children: list) -> str:
        word = str(children[0]).lower()
        return "unmatched" if word == "with" else word

    def mr_after(self, meta: Meta, children: list) -> Clause:
        return Clause("skip", children[0])

    def mr_skip(self, meta: Meta, children: list) -> tuple[str, tuple[str, Pos] | None]:
        words = [str(c).lower() for c in children]
        last = children[-1]
        if isinstance(last, Token) and last.type == "NAME":
            kind = "to first" if words[1] == "first" else "to last"
            return kind, (str(last), token_pos(last))
        return " ".join(words), None

    def mr_subset(self, meta: Meta, children: list) -> Clause:
        return Clause("subsets", tuple(children))

    def mr_union(self, meta: Meta, children: list) -> tuple:
        name, *members = children
        return str(name), tuple(str(m) for m in members), token_pos(name)

    def mr_within(self, meta: Meta, children: list) -> Clause:
        return Clause("within", children[0])

    def mr_define(self, meta: Meta, children: list) -> Clause:
        return Clause("defines", tuple(children))

    def mr_def(self, meta: Meta, children: list) -> tuple:
        return str(children[0]), children[1], token_pos(children[0])

    def mr_alt(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        return ast.RowPattern("alt", match_pos(meta), items=tuple(children))

    def mr_seq(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        return ast.RowPattern("seq", match_pos(meta), items=tuple(children))

    def mr_item(self, meta: Meta, children: list) -> ast.RowPattern:
        if len(children) == 1:
            return children[0]
        item, (low, high, greedy) = children
        return ast.RowPattern("repeat", match_pos(meta), items=(item,), low=low, high=high,
                              greedy=greedy)

    def mr_var(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("var", match_pos(meta), name=str(children[0]))

    def mr_empty_pattern(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("empty", match_pos(meta))

    def mr_exclude(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("exclude", match_pos(meta), items=(children[0],))

    def mr_start_anchor(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("start", match_pos(meta))

    def mr_end_anchor(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("end", match_pos(meta))

    def mr_permute(self, meta: Meta, children: list) -> ast.RowPattern:
        return ast.RowPattern("permute", match_pos(meta), items=tuple(children))

    def mr_quantifier(self, meta: Meta, children: list) -> tuple:
        low, high = children[0]
        return low, high, len(children) == 1

    def mr_count(self, meta: Meta, children: list) -> tuple[int, int | None]:
        texts = [str(c) for c in children]
        if texts[0] in ("*", "+", "?"):
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[texts[0]]
        if texts == ["{", ",", "}"]:  # {,}: as *
            return 0, None
        numbers = [whole_number(c, "a repetition bound", 0) for c in children
                   if c.type == "NUMBER"]
        if len(texts) == 3:  # {n}
            return numbers[0], numbers[0]
        if texts[1] == ",":  # {,m}
            return 0, numbers[0]
        if texts[2] == "," and texts[3] == "}":  # {n,}
            return numbers[0], None
        return numbers[0], numbers[1]
