"""The tree a rule's ``PATTERN [...]`` becomes, and the walks over it that compiling needs.

:mod:`cep.engine.patterns.rule` builds these nodes from the rule's IR;
:func:`cep.engine.patterns.interpreter.compile_pattern` numbers them, checks them and hands them to
:mod:`cep.engine.patterns.node_runtime`, which makes one runtime object per node. What each
node means is in :mod:`cep.engine.patterns.interpreter`. The nodes are frozen data: a compiled
pattern is shared by every key, and a key's state never refers to them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Union

from cep.engine import codec


class Event(NamedTuple):
    """One input event of a key: global sequence number, timestamp (µs), stream, fields."""

    seq: int
    ts: int
    stream: str
    row: dict[str, object]


Bindings = dict[str, Union[Event, list[Event]]]  # noqa: UP007 -- a runtime alias
Predicate = Callable[[Event, Bindings], bool]


@dataclass(frozen=True)
class Atom:
    """``[tag=]stream(predicate)``: one event of ``stream`` for which the predicate holds."""

    tag: str | None
    stream: str
    predicate: Predicate | None = None
    node_id: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class _Binary:
    """The shape of the binary operators. Each operator is a subclass that adds no field,
    only its type: it inherits the frozen dataclass (fields, equality by class and
    values, repr) and needs no decorator of its own."""

    left: PatternNode
    right: PatternNode
    node_id: int = field(default=-1, compare=False)


class FollowedBy(_Binary):
    """``left -> right``: ``right`` starts after each completion of ``left``."""


class And(_Binary):
    """``left and right``: both complete, in any order."""


class Or(_Binary):
    """``left or right``: either completes."""


@dataclass(frozen=True)
class _Unary:
    """The shape of the prefix operators, subclassed as `_Binary` is."""

    operand: PatternNode
    node_id: int = field(default=-1, compare=False)


class Not(_Unary):
    """``not operand``: only as a direct operand of `And`."""


class Every(_Unary):
    """``every operand``: restart the operand whenever it turns true or false."""


@dataclass(frozen=True)
class Repeat:
    """Esper's match-until: ``[count] operand`` (``high`` EXACT), ``[count:high] operand``
    (``high`` None: no upper bound), each optionally ``until`` another pattern."""

    count: int
    operand: PatternNode
    node_id: int = field(default=-1, compare=False)
    high: int | None = -1  # EXACT: as many as count
    until: PatternNode | None = None

    @property
    def most(self) -> int | None:
        """The completion of the operand that completes the repeat (None: only until)."""
        return self.count if self.high == EXACT else self.high


EXACT = -1


@dataclass(frozen=True)
class Timer:
    """``timer:interval(T)``: completes, binding nothing, once the key's event time has
    passed T after the instance started (see :mod:`cep.engine.patterns.interpreter`)."""

    us: int
    node_id: int = field(default=-1, compare=False)


PatternNode = Union[Atom, FollowedBy, And, Or, Not, Every, Repeat, Timer]  # noqa: UP007

codec.register("pattern.Event", Event)


# --------------------------------------------------------------------------- walks


def children(node: PatternNode) -> tuple[PatternNode, ...]:
    """A node's operands, left to right (a repeat's ``until`` after its operand)."""
    if isinstance(node, Atom | Timer):
        return ()
    if isinstance(node, _Binary):
        return (node.left, node.right)
    if isinstance(node, Repeat) and node.until is not None:
        return (node.operand, node.until)
    return (node.operand,)


def number_nodes(root: PatternNode) -> tuple[PatternNode, tuple[PatternNode, ...]]:
    """The tree with node ids in pre-order, and its nodes by id (raises TypeError on
    anything that is not a pattern node, ValueError on an impossible repeat range)."""
    nodes: list[PatternNode] = []
    numbered = _number(root, [0], nodes)
    return numbered, tuple(nodes)


def _number(node: PatternNode, counter: list[int], nodes: list[PatternNode]) -> PatternNode:
    """Rebuild the tree with node ids in pre-order (ids index ``Pattern.nodes``)."""
    if not isinstance(node, (Atom, FollowedBy, And, Or, Not, Every, Repeat, Timer)):
        raise TypeError(f"not a pattern node: {node!r}")
    node_id = counter[0]
    counter[0] += 1
    nodes.append(node)  # placeholder, replaced below once the children are numbered
    if isinstance(node, Atom | Timer):
        new: PatternNode = dataclasses.replace(node, node_id=node_id)
    elif isinstance(node, _Binary):
        left = _number(node.left, counter, nodes)
        right = _number(node.right, counter, nodes)
        new = dataclasses.replace(node, left=left, right=right, node_id=node_id)
    else:
        if isinstance(node, Repeat) and not _valid_range(node):
            raise ValueError(f"repeat count must be a positive int, got {node.count!r}")
        operand = _number(node.operand, counter, nodes)
        new = dataclasses.replace(node, operand=operand, node_id=node_id)
        if isinstance(node, Repeat) and node.until is not None:
            new = dataclasses.replace(new, until=_number(node.until, counter, nodes))
    nodes[node_id] = new
    return new


def _valid_range(node: Repeat) -> bool:
    """A repeat completes at its ``most``-th iteration or by its until: at least once."""
    if not isinstance(node.count, int) or node.count < 0:
        return False
    if node.high == EXACT:
        return node.count >= 1
    if node.high is None:
        return node.until is not None
    return isinstance(node.high, int) and node.high >= max(node.count, 1)


def flatten(node: PatternNode, kind: type) -> list[PatternNode]:
    """Operands of a chain of one binary operator: ``(a -> b) -> c`` is ``[a, b, c]``."""
    if isinstance(node, kind):
        return flatten(node.left, kind) + flatten(node.right, kind)  # type: ignore[union-attr]
    return [node]


def bound_tags(node: PatternNode, under_not: bool = True) -> list[str]:
    """Tags bound in the subtree (those under a ``not`` only if ``under_not``).

    Raises ValueError on a tag bound twice, which would make bindings ambiguous.
    """
    if isinstance(node, Atom):
        return [node.tag] if node.tag is not None else []
    if isinstance(node, Not) and not under_not:
        return []
    if isinstance(node, Or):
        # Alternatives never bind together, so they may reuse a tag.
        return sorted(set(bound_tags(node.left, under_not))
                      | set(bound_tags(node.right, under_not)))
    found: list[str] = []
    for child in children(node):
        for tag in bound_tags(child, under_not):
            if tag in found:
                raise ValueError(f"pattern tag {tag!r} is bound more than once")
            found.append(tag)
    return found


def describe(node: PatternNode) -> str:
    """Structure of the numbered tree (no predicates): the state fingerprint's input."""
    name = type(node).__name__
    if isinstance(node, Atom):
        return f"{name}#{node.node_id}({node.tag!r},{node.stream!r},{node.predicate is None})"
    if isinstance(node, Timer):
        return f"{name}#{node.node_id}({node.us})"
    extra = f"{node.count}:{node.high}," if isinstance(node, Repeat) else ""
    inner = ",".join(describe(c) for c in children(node))
    return f"{name}#{node.node_id}({extra}{inner})"


def has_timer(node: PatternNode) -> bool:
    """Whether a ``timer:interval`` sits anywhere in the subtree."""
    return isinstance(node, Timer) or any(has_timer(c) for c in children(node))


def starts_with_timer(node: PatternNode) -> bool:
    """Whether the pattern can complete before any event: a timer it starts with."""
    if isinstance(node, Timer):
        return True
    if isinstance(node, FollowedBy):
        return starts_with_timer(node.left)
    if isinstance(node, And | Or):
        return starts_with_timer(node.left) or starts_with_timer(node.right)
    return isinstance(node, Every | Repeat) and starts_with_timer(node.operand)
