"""The rule language's value types and the rules for combining them.

Types are plain strings so they print well in diagnostics: ``int``, ``long``, ``double``,
``boolean``, ``string``, ``timestamp``, plus ``duration`` (time periods, microseconds) and
``null`` (the type of the NULL literal, compatible with everything).
"""

from __future__ import annotations

SCHEMA_TYPES = ("int", "long", "double", "boolean", "string", "timestamp")
NUMERIC = frozenset({"int", "long", "double"})
INTEGRAL = frozenset({"int", "long"})
# durations and timestamps are int64 microseconds: they order like numbers
ORDERED = NUMERIC | {"timestamp", "duration", "string"}

TYPE_ALIASES = {
    "integer": "int",
    "bigint": "long",
    "float": "double",
    "bool": "boolean",
    "varchar": "string",
}


def normalise(type_name: str) -> str | None:
    """The canonical type name for a spelling, or None if it is not a type."""
    t = type_name.lower()
    t = TYPE_ALIASES.get(t, t)
    return t if t in SCHEMA_TYPES else None


def is_numeric(t: str) -> bool:
    return t in NUMERIC or t == "null"


def numeric_result(a: str, b: str) -> str:
    """Result type of ``a op b`` for + - * %: the wider of the two numeric types."""
    if "double" in (a, b):
        return "double"
    if "long" in (a, b):
        return "long"
    return "int"


def comparable(a: str, b: str) -> bool:
    """Whether values of types ``a`` and ``b`` can be compared with = and <."""
    if "null" in (a, b) or a == b:
        return True
    if a in NUMERIC and b in NUMERIC:
        return True
    return {a, b} == {"duration", "long"} or {a, b} == {"duration", "int"}


def unify(a: str, b: str) -> str | None:
    """The common type of two branches (CASE, coalesce, IN lists), or None."""
    if a == "null":
        return b
    if b == "null" or a == b:
        return a
    if a in NUMERIC and b in NUMERIC:
        return numeric_result(a, b)
    return None


def schema_type(t: str) -> str:
    """The schema type of a derived stream's field (an INSERT INTO column, a MEASURES
    value) whose expression has type ``t``: NULL is a string, a duration a long."""
    return {"null": "string", "duration": "long"}.get(t, t)


class WrittenDuration(int):
    """A time period in microseconds that remembers how the rule wrote it (``24 hours``),
    so that ``cep check`` can say it back in the author's words. It is an ``int`` in
    every other respect; arithmetic on it gives a plain ``int``."""

    written: str

    def __new__(cls, microseconds: int, written: str) -> WrittenDuration:
        value = super().__new__(cls, microseconds)
        value.written = written
        return value

    def __getnewargs__(self) -> tuple[int, str]:  # type: ignore[override]
        return int(self), self.written
