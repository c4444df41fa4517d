"""Where each schema field is read from in a record: its ``FROM`` paths.

``user string FROM 'user.screen_name', 'user'`` reads ``record["user"]["screen_name"]``
when the record has it, else ``record["user"]``: the first path with a (non-null) value
wins, and a value of the wrong type on that path is the record's error even if a later
path would fit. A path absent from a record (a key missing, ``null``, or a step that is
not an object) is skipped; a field none of whose paths has a value is NULL. Without
FROM a field's path is its own name. The paths' syntax is the language's
(:mod:`grammar.path_syntax`); this module reads what they name.

For pyarrow's JSON reader the paths become one explicit schema: a struct for each
object a path descends into (holding only the keys some path needs), a plain type
where a path ends. A key used both ways (``'user.screen_name'`` and ``'user'``) takes
the shape the chunk's first record shows; a chunk mixing shapes fails in pyarrow and
is read line by line, so the shape guess costs speed, never correctness.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from grammar import ir
from grammar.path_syntax import split_path

_ARROW = {
    "int": pa.int64(),
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}
ABSENT = object()  # what :func:`lookup` returns for a path a record does not have


@dataclass(frozen=True)
class FieldPaths:
    """One schema field with the paths it is read from and its timestamp format."""

    name: str
    type: str
    paths: tuple[tuple[str, ...], ...]
    format: str | None = None

    @property
    def columns(self) -> list[str]:
        """The top-level names the paths start at (CSV and Parquet columns), in order."""
        return list(dict.fromkeys(keys[0] for keys in self.paths))


def field_paths(stream: ir.StreamDef) -> list[FieldPaths]:
    """The fields of ``stream`` with their paths, in schema order."""
    out = []
    for name, ftype in stream.fields:
        source = stream.source(name)
        paths = tuple(split_path(p) for p in source.paths)
        out.append(FieldPaths(name, ftype.lower(), paths, source.format))
    return out


def lookup(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value at ``keys`` in a parsed JSON object, or :data:`ABSENT` (``None`` for a
    JSON null)."""
    value: Any = obj
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return ABSENT
        value = value[key]
    return value


@dataclass
class _Node:
    """A key of the path tree: the field types of paths ending here, the keys below it,
    and whether a path first uses it as an object (decides an unknown shape)."""

    leaf: list[str] = field(default_factory=list)
    kids: dict[str, _Node] = field(default_factory=dict)
    object_first: bool | None = None


def _tree(fields: list[FieldPaths]) -> _Node:
    root = _Node()
    for f in fields:
        for keys in f.paths:
            node = root
            for depth, key in enumerate(keys):
                node = node.kids.setdefault(key, _Node())
                last = depth == len(keys) - 1
                if node.object_first is None:
                    node.object_first = not last
                if last:
                    node.leaf.append(f.type)
    return root


def _arrow_type(node: _Node, peek: Any) -> pa.DataType:
    as_object = bool(node.kids) and (
        not node.leaf or isinstance(peek, dict) or (peek is None and bool(node.object_first))
    )
    if as_object:
        inner = peek if isinstance(peek, dict) else {}
        return pa.struct([(k, _arrow_type(kid, inner.get(k))) for k, kid in node.kids.items()])
    if node.leaf[0] == "timestamp":
        numeric = isinstance(peek, int | float) and not isinstance(peek, bool)
        return pa.float64() if numeric else pa.string()
    return _ARROW[node.leaf[0]]


def arrow_schema(fields: list[FieldPaths], peek: Any) -> pa.Schema:
    """The explicit pyarrow schema reading every path; ``peek`` (a chunk's first record,
    if it parsed) decides shapes the paths leave open and a timestamp's number/string."""
    root = _tree(fields)
    first = peek if isinstance(peek, dict) else {}
    return pa.schema([(k, _arrow_type(node, first.get(k))) for k, node in root.kids.items()])


def select(table: pa.Table, keys: tuple[str, ...]) -> pa.Array | None:
    """The column at ``keys`` (struct fields followed; a null object gives nulls), or None
    if the table does not have it (no such column, or a step that is not a struct)."""
    if keys[0] not in table.column_names:
        return None
    arr = table.column(keys[0]).combine_chunks()
    for key in keys[1:]:
        if not pa.types.is_struct(arr.type) or arr.type.get_field_index(key) < 0:
            return None
        arr = pc.struct_field(arr, key)
    return arr
