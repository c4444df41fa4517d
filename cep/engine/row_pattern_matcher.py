"""SQL:2016 row pattern matching over one partition's rows, one row at a time.

A Pike VM over a :class:`~cep.engine.row_pattern_program.Program`, run for every start
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
"""

from __future__ import annotations

from cep.engine.row_pattern_program import Program

Thread = list  # [start, pc, labels]


def new_state() -> dict:
    """A partition before its first row: ``rows``/``base`` are the operator's buffer."""
    return {"rows": [], "base": 0, "threads": [], "found": {}, "resume": 0}


def open_start(program: Program, state: dict, start: int) -> None:
    """Let row ``start`` begin a match (before it is read), if skipping allows: its
    threads wait at the program's first variables; a ``match`` reachable first is an
    empty match (less preferred paths then die)."""
    if start < state["resume"]:
        return
    threads = state["threads"]
    for pc in program.closures[0]:
        if program.is_match(pc):
            state["found"][start] = []
            return
        threads.append([start, pc, []])


def advance(program: Program, state: dict, passed: list[bool]) -> None:
    """Move every thread over the next row: ``passed[n]`` says whether thread n's
    variable accepts it. A thread that reaches ``match`` records its start's match and
    ends its less preferred siblings."""
    found = state["found"]
    kept: list[Thread] = []
    at: dict[tuple[int, int], list[list[str]]] = {}
    ended = None  # the start whose remaining (less preferred) threads die
    for (start, pc, labels), ok in zip(state["threads"], passed, strict=True):
        if not ok or start == ended:
            continue
        grown = [*labels, program.var(pc)]
        for npc in program.closures[pc + 1]:
            if program.is_match(npc):
                found[start] = grown
                ended = start
                break
            rivals = at.setdefault((start, npc), [])
            if any(_equivalent(program.reads[npc], grown, other) for other in rivals):
                continue
            rivals.append(grown)
            kept.append([start, npc, grown])
    state["threads"] = kept


def _equivalent(reads: tuple[str, ...], one: list[str], other: list[str]) -> bool:
    """Whether two threads of one start at one instruction give every later DEFINE the
    same rows (each variable it reads has its last row at the same place)."""
    return all(last_index(one, var) == last_index(other, var) for var in reads)


def last_index(labels: list[str], var: str) -> int:
    """The position of ``var``'s last row in ``labels`` (-1: none)."""
    for k in range(len(labels) - 1, -1, -1):
        if labels[k] == var:
            return k
    return -1


def end_starts(state: dict, before: float) -> None:
    """Stop the threads of the starts before row ``before`` (their WITHIN ran out, or
    the input ended): what those starts found so far is their match."""
    state["threads"] = [t for t in state["threads"] if t[0] >= before]


def decide(state: dict, skip: str) -> list[tuple[int, list[str]]]:
    """The matches now decided, in start order, as (start, labels); applies AFTER MATCH
    SKIP to the starts after each."""
    out = []
    threads, found = state["threads"], state["found"]
    while found:
        first = min(found)
        if threads and threads[0][0] <= first:
            break  # an earlier start, or a more preferred thread of this one, still runs
        labels = found.pop(first)
        out.append((first, labels))
        last = first + len(labels) - 1
        if not labels:
            resume = first + 1
        else:
            resume = {"past last row": last + 1, "to next row": first + 1,
                      "to current row": last}[skip]
        state["resume"] = max(state["resume"], resume)
        threads = [t for t in threads if t[0] >= resume]
        for start in [s for s in found if s < resume]:
            del found[start]
    state["threads"] = threads
    return out


def earliest_start(state: dict) -> int | None:
    """The first row still needed by a running thread or a held match (None: none)."""
    starts = [t[0] for t in state["threads"][:1]] + list(state["found"])
    return min(starts) if starts else None
