"""Where a user function's failures go: a record on which a function raised, hung or
ended its process (``cep.engine.udf_isolation``) is a dead letter with the reason,
never the end of a run.

The expression compiler (``cep.engine.expr``) calls a user function on a batch's
values; when the function raises on some of them, their values are NULL (as Esper
returns null from a single-row function that threw) and the failures are reported here
with the seq of the record each value was computed for. Whoever runs rules, the
reference runner or a Spark task, collects them around its work (:func:`collecting`)
and writes them as dead letters of kind ``udf_error`` (``cep.io.udf_letters``).

A failure reported outside any :func:`collecting` block goes to a process-wide list
that nobody writes out (engines built by hand, tests): it still never raises.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class UdfFailure:
    """A function that raised on one record: the record's seq (-1: an evaluation that
    does not know its rows' records, ``expr.Env.seq``), the function and the message."""

    seq: int
    function: str
    message: str


_OUTSIDE: list[UdfFailure] = []  # failures reported outside any collecting block
_OUTSIDE_LIMIT = 10_000
_current: ContextVar[list[UdfFailure] | None] = ContextVar("udf_failures", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[UdfFailure]]:
    """Collect the failures reported while the block runs (in a list it fills)."""
    found: list[UdfFailure] = []
    token = _current.set(found)
    try:
        yield found
    finally:
        _current.reset(token)


def report(function: str, seqs: np.ndarray | None, messages: list[str]) -> None:
    """``function`` raised on the records ``seqs`` (one message each; None: unknown)."""
    found = _current.get()
    if found is None:
        found = _OUTSIDE
        if len(found) > _OUTSIDE_LIMIT:
            del found[: len(found) - _OUTSIDE_LIMIT]
    order = seqs.tolist() if seqs is not None else [-1] * len(messages)
    found.extend(UdfFailure(int(s), function, m) for s, m in zip(order, messages, strict=True))


#: how an isolated function's misbehaviour begins its message (``udf_isolation``)
ISOLATION_VERBS = ("timed out after", "ended its process")


def reason(failure: UdfFailure) -> str:
    """A dead letter's reason: ``f() raised ValueError: ...``, ``f() timed out after
    10s`` or ``f() ended its process (exit code 1)``."""
    if failure.message.startswith(ISOLATION_VERBS):
        return f"{failure.function}() {failure.message}"
    return f"{failure.function}() raised {failure.message}"


def distinct(failures: list[UdfFailure]) -> list[UdfFailure]:
    """Each (record, function) once, in seq order: a value evaluated twice for the same
    record (a filter and a SELECT calling the same function) is one dead letter."""
    first: dict[tuple[int, str], UdfFailure] = {}
    for failure in failures:
        first.setdefault((failure.seq, failure.function), failure)
    return sorted(first.values(), key=lambda f: (f.seq, f.function))
