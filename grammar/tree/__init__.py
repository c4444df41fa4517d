"""Lark's parse tree to the frozen AST (``grammar.ast``), one module per part of the
language: ``statements`` (CREATE SCHEMA, CREATE VARIABLE, SELECT and its clauses),
``sources`` (streams with their filters and windows, event patterns), ``recognize``
(MATCH_RECOGNIZE's clauses and row patterns), ``expressions`` and ``literals``;
``builder`` joins them into the one transformer ``grammar.parser`` runs. May import
``grammar.ast``, ``grammar.errors``, ``grammar.tokens``, ``grammar.types`` and Lark.
"""
