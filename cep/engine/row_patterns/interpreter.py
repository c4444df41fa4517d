"""SQL:2016 row pattern matching over one partition's rows, one row at a time.

A Pike VM over a :class:`~cep.engine.row_patterns.program.Program`, run for every start
row of the partition at once (Trino runs it once per start; the answers are the same).
The state of one partition is plain data (a dict, see :func:`new_state`):

* ``threads``: ``[start, pc, labels]`` in start order and, within a start, in preference
  order; ``labels`` names the variable of each row from ``start`` on;
* ``found``: per start, the most preferred complete match found so far (its labels);
* ``resume``: the first row that may start a match (AFTER MATCH SKIP moves it).

The rules, in SQL:2016's terms (and Trino's):

* a start's match is its most preferred one: when a thread completes, the threads of its
  start that are less preferred die; the match is *held* while a more preferred thread
  of that start still runs (a greedy ``A+`` may take the next row too) and decided when
  none is left: the next row extends none of them, WITHIN ends them, or the input ends;
* matches are decided in start order: a start waits while an earlier one runs; then
  AFTER MATCH SKIP drops the starts before the next allowed one (PAST LAST ROW: after the
  match's last row; TO NEXT ROW: after its first; TO CURRENT ROW: its last row; after an
  empty match always the next row);
* of two threads of one start at one instruction the less preferred is dropped only when
  nothing a later DEFINE reads tells them apart (the program's ``reads``).

Why it stays beside the compiled matcher (``cep.engine.row_patterns.kernel``, about 20x
faster): it runs the rules that matcher does not take (docs/esper.md lists them, with
their measured rates), and it is the oracle the kernel's differential test
(tests/engine/test_match_recognize_kernel.py) compares it with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cep.engine.row_patterns.program import Program, Reads

Thread = list  # [start, pc, labels, excluded positions]


@dataclass(frozen=True)
class Decided:
    """A start decided: its match's labels and the positions ``{- -}`` excluded (labels
    None: the start's row is in no match, reported WITH UNMATCHED ROWS only), and the
    match's number in its partition (from 1)."""

    start: int
    labels: list[str] | None
    excluded: list[int]
    number: int


def new_state() -> dict:
    """A partition before its first row: ``rows``/``base`` are the operator's buffer;
    ``next`` is the first start not decided yet, ``covered`` the first row after every
    reported match, ``number`` how many matches were reported."""
    return {"rows": [], "base": 0, "threads": [], "found": {}, "resume": 0, "next": 0,
            "covered": 0, "number": 0}


def open_start(program: Program, state: dict, start: int) -> None:
    """Let row ``start`` begin a match (before it is read), if skipping allows: its
    threads wait at the program's first variables; a ``match`` reachable first is an
    empty match (less preferred paths then die)."""
    if start < state["resume"]:
        return
    threads = state["threads"]
    for pc in program.stops(0, at_start=start == 0):
        if program.is_match(pc):
            state["found"][start] = ([], [])
            return
        threads.append([start, pc, [], []])


def advance(program: Program, state: dict, passed: list[bool]) -> None:
    """Move every thread over the next row: ``passed[n]`` says whether thread n's
    variable accepts it. A thread that reaches ``match`` records its start's match and
    ends its less preferred siblings."""
    found = state["found"]
    kept: list[Thread] = []
    at: dict[tuple[int, int], list[list[str]]] = {}
    ended = None  # the start whose remaining (less preferred) threads die
    names, ops, reads = program.vars, program.ops, program.reads
    for (start, pc, labels, excluded), ok in zip(state["threads"], passed, strict=True):
        var = names[pc]
        if not ok or start == ended or not var:
            continue  # refused, less preferred than a match, or waiting for the end
        grown = [*labels, var]
        if ops[pc][2]:  # inside {- -}
            excluded = [*excluded, len(labels)]
        for npc in (program.stops(pc + 1, at_start=False) if program.anchored
                    else program.closures[pc + 1]):
            if ops[npc][0] == "match":
                found[start] = (grown, excluded)
                ended = start
                break
            rivals = at.get((start, npc))
            if rivals is None:
                at[(start, npc)] = [grown]
            elif any(_equivalent(reads[npc], grown, other) for other in rivals):
                continue
            else:
                rivals.append(grown)
            kept.append([start, npc, grown, excluded])
    state["threads"] = kept


def _equivalent(reads: Reads, one: list[str], other: list[str]) -> bool:
    """Whether two threads of one start at one instruction give every later DEFINE the
    same rows (and labels, where it reads them)."""
    last, every, whole = reads
    if whole:
        return one == other
    return (all(last_index(one, var) == last_index(other, var) for var in last)
            and all(_positions(one, var) == _positions(other, var) for var in every))


def last_index(labels: list[str], var: str) -> int:
    """The position of ``var``'s last row in ``labels`` (-1: none)."""
    for k in range(len(labels) - 1, -1, -1):
        if labels[k] == var:
            return k
    return -1


def _positions(labels: list[str], var: str) -> list[int]:
    return [k for k, label in enumerate(labels) if label == var]


def end_input(program: Program, state: dict, before: float = math.inf) -> None:
    """The input has ended, and the starts before row ``before`` stop (all of them, or
    those whose WITHIN runs out after the input's end): their threads waiting at ``$``
    go on to a match if they can (the first of each start in preference order: any is
    preferred to what the start found)."""
    found = state["found"]
    done: set[int] = set()
    for start, pc, labels, excluded in state["threads"]:
        if start >= before or start in done or program.var(pc):
            continue
        if any(program.is_match(npc) for npc in program.stops(pc + 1, False, True)):
            found[start] = (labels, excluded)
            done.add(start)
    end_starts(state, before)


def end_starts(state: dict, before: float) -> None:
    """Stop the threads of the starts before row ``before`` (their WITHIN ran out, or
    the input ended): what those starts found so far is their match."""
    state["threads"] = [t for t in state["threads"] if t[0] >= before]


def decide(state: dict, skip: str, skip_to: tuple[str, ...] = (),
           until: float = math.inf) -> list[Decided]:
    """The starts now decided, in start order (those in no match too), before row
    ``until`` (a later start waits: its report needs rows after its match); applies
    AFTER MATCH SKIP after each match. ``skip_to`` are the variables of SKIP TO
    FIRST/LAST (one, or a SUBSET's): their first/last row is where the next match may
    start (the next row when the match has no such row or it is the match's first: the
    standard's error, which a stream cannot stop at)."""
    out = []
    threads, found = state["threads"], state["found"]
    end = min(state["base"] + len(state["rows"]), until)  # the next row to arrive
    while True:
        start = max(state["next"], state["resume"])
        if start >= end or (threads and threads[0][0] <= start):
            break  # no row yet, or the start (a more preferred thread of it) still runs
        state["next"] = start + 1
        if start not in found:
            if start >= state["covered"]:
                out.append(Decided(start, None, [], 0))
            continue
        labels, excluded = found.pop(start)
        state["number"] += 1
        out.append(Decided(start, labels, excluded, state["number"]))
        last = start + len(labels) - 1
        state["covered"] = max(state["covered"], last + 1)
        resume = _resume(skip, skip_to, start, labels)
        state["resume"] = max(state["resume"], resume)
        threads = [t for t in threads if t[0] >= resume]
        for s in [s for s in found if s < resume]:
            del found[s]
    state["threads"] = threads
    return out


def _resume(skip: str, skip_to: tuple[str, ...], start: int, labels: list[str]) -> int:
    """The first row that may start the next match."""
    if not labels:
        return start + 1  # after an empty match, always the next row
    last = start + len(labels) - 1
    if skip == "past last row":
        return last + 1
    if skip == "to next row":
        return start + 1
    if skip == "to current row":
        return last
    where = [k for k, label in enumerate(labels) if label in skip_to]
    at = start + (where[0] if skip == "to first" else where[-1]) if where else start
    return at if at > start else start + 1


def earliest_start(state: dict) -> int | None:
    """The first row still needed by a running thread, a held match or an undecided
    start (None: none)."""
    starts = [t[0] for t in state["threads"][:1]] + list(state["found"])
    return min(starts) if starts else None
