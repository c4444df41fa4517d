"""The tree builder: Lark's parse tree → the frozen nodes of :mod:`grammar.ast`.

A transformer whose method names are the grammar's rule aliases, run bottom-up without
recursion (so tree depth never meets Python's recursion limit). Besides building nodes
it makes the checks a grammar cannot express well: window kinds, namespaces and arity,
type names, the ranges of numbers and time periods, string escapes. Numbers and strings
are decoded here, never evaluated as Python.

The rules come in parts, one module each, joined into one transformer here:
:mod:`grammar.tree_statements` (schemas, variables, SELECT and its clauses),
:mod:`grammar.tree_sources` (streams, filters, windows, event patterns),
:mod:`grammar.tree_recognize` (MATCH_RECOGNIZE), :mod:`grammar.tree_expressions`
(expressions), and :mod:`grammar.tree_literals` (tokens decoded into values), which
the others share.
"""

from __future__ import annotations

from lark import Tree
from lark.exceptions import VisitError

from grammar import ast
from grammar.tree_expressions import ExpressionRules
from grammar.tree_recognize import RecognizeRules
from grammar.tree_sources import SourceRules
from grammar.tree_statements import StatementRules


def build(tree: Tree) -> list[ast.Statement]:
    """The statements of a parse tree. Lark wraps whatever a transformer method raises in
    VisitError; unwrapping lets RuleError (and any bug, with its own type) through as is."""
    try:
        return _Builder().transform(tree)
    except VisitError as err:
        raise err.orig_exc from None


class _Builder(StatementRules, SourceRules, RecognizeRules, ExpressionRules):
    """Bottom-up construction of the AST; method names are the grammar's rule aliases.

    Non-recursive (each part is a ``Transformer_NonRecursive``), so that tree depth never
    meets Python's recursion limit here. Each part carries its own ``v_args(meta=True)``:
    Lark applies it to the methods a class defines, not to those it inherits.
    """
