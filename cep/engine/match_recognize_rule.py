"""MATCH_RECOGNIZE per partition key: a priority-ordered NFA over each key's rows.

The row pattern is compiled to a small program (``var V`` consumes a row that satisfies
V's DEFINE, ``split`` tries its first branch first, ``jmp``, ``match``). Each key runs the
program as a Pike VM: threads carry their start row and the rows assigned to each
variable so far, in preference order (greedy quantifiers prefer one more row, reluctant
ones one fewer, alternatives the left one; of two threads reaching the same program point
from the same start only the preferred one is kept). Semantics, in SQL:2016's terms:

* every row may start a match (the first row after the last match's skip point and on);
* a start's match is the first complete one in row order (it ends at the earliest row
  where some match from that start completes; preference picks among those ending
  there), so ``A B+`` ends at its first B: a greedy quantifier only decides between
  matches ending on the same row;
* matches are reported in start order: a complete match waits while an earlier start
  may still complete; then AFTER MATCH SKIP applies: PAST LAST ROW (default) drops the
  starts up to the match's last row, TO NEXT ROW those up to its first, TO CURRENT ROW
  those before its last;
* WITHIN T drops a start once event time reaches its row's time + T (the watermark, or
  a later row of the key, whichever comes first: a timer);
* a match is reported at the row that resolves it, with that row's seq and ts, or, when
  a start's WITHIN running out resolves it, at the deadline (its time) and the first
  input event whose watermark reaches it; a start still undecided at the end of a
  bounded input reports nothing (unless WITHIN, or the state time-to-live, ends it).

DEFINE conditions are evaluated for all threads waiting on one variable at once. A key's
state is plain data (its buffered rows as dicts, threads as lists, found matches) and
moves with the key.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from cep.engine.clock import Watermark
from cep.engine.event_rows import Row, as_column, field_values, rows_of
from cep.engine.expr import Col, Env, collect_nodes, evaluate, truth
from cep.engine.output import TIMER, Stamps, build_output, empty_output
from cep.engine.table import (
    KEY,
    NULL_SUFFIX,
    RELEASE,
    SEQ,
    SUB,
    TIME,
    Table,
    factorize,
    nrows,
    take,
)
from cep.engine.timers import TimerIndex
from cep.engine.windows import PerKeyState
from grammar import ir

# a match found: its key, the row that resolved it (None: a WITHIN deadline did), the
# seq it is reported at and its time (-1 and the deadline for a deadline), its rows
Found = tuple[object, Row | None, int, int, list[list]]


def compile_program(pattern: ir.RPattern) -> list[tuple]:
    """The instructions of a row pattern, ending with ``("match",)``."""
    prog: list[tuple | None] = []

    def split(a: int, b: int, greedy: bool) -> tuple:
        return ("split", a, b) if greedy else ("split", b, a)

    def emit(node: ir.RPattern) -> None:
        if node.kind == "var":
            prog.append(("var", node.name))
        elif node.kind == "seq":
            for item in node.items:
                emit(item)
        elif node.kind == "alt":
            jumps = []
            for item in node.items[:-1]:
                at = len(prog)
                prog.append(None)
                emit(item)
                jumps.append(len(prog))
                prog.append(None)
                prog[at] = ("split", at + 1, len(prog))
            emit(node.items[-1])
            for at in jumps:
                prog[at] = ("jmp", len(prog))
        else:
            item = node.items[0]
            for _ in range(node.low):
                emit(item)
            if node.high is None:
                loop = len(prog)
                prog.append(None)
                emit(item)
                prog.append(("jmp", loop))
                prog[loop] = split(loop + 1, len(prog), node.greedy)
            else:
                holes = []
                for _ in range(node.high - node.low):
                    holes.append(len(prog))
                    prog.append(None)
                    emit(item)
                for at in holes:
                    prog[at] = split(at + 1, len(prog), node.greedy)

    emit(pattern)
    prog.append(("match",))
    return prog  # type: ignore[return-value]


def closure(prog: list[tuple], pc: int) -> list[int]:
    """The ``var``/``match`` instructions reachable from ``pc`` without a row, in
    preference order."""
    out: list[int] = []
    seen: set[int] = set()
    stack = [pc]
    while stack:
        at = stack.pop()
        if at in seen:
            continue
        seen.add(at)
        ins = prog[at]
        if ins[0] == "jmp":
            stack.append(ins[1])
        elif ins[0] == "split":
            stack.extend((ins[2], ins[1]))  # the first branch is popped first
        else:
            out.append(at)
    return out


class MatchRecognizeOperator(PerKeyState):
    """Runs one :class:`ir.MatchRecognizeRule` for all keys of an engine."""

    def __init__(self, rule: ir.MatchRecognizeRule, stream: ir.StreamDef) -> None:
        self.rule = rule
        self.stream = stream
        self.prog = compile_program(rule.pattern)
        self.closures = [closure(self.prog, pc) for pc in range(len(self.prog))]
        self.defines = dict(rule.defines)
        self.refs = {var: sorted({(r.qualifier, r.name) for r in collect_nodes([cond],
                                                                            ir.FieldRef)})
                     for var, cond in self.defines.items()}
        self.types = dict(stream.fields)
        self.states: dict[object, dict] = {}
        self.timers = TimerIndex()  # each key's next WITHIN deadline
        # DEFINEs that read only the candidate row and earlier rows: evaluated for a whole
        # batch at once (with how many earlier rows of the key they need)
        self.local = {var: max([int(q[6:]) for q, _ in refs if q.startswith("__prev")],
                               default=0)
                      for var, refs in self.refs.items()
                      if all(q == var or q.startswith("__prev") for q, _ in refs)}

    # ---- processing

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's rows, key by key in processing order, and the WITHIN deadlines
        the watermark reaches for every key that has one."""
        rows_table = tables[self.rule.stream]
        env = Env(nrows(rows_table))
        env.bind_table("", rows_table)
        rows_table = take(rows_table, truth(self.rule.filter, env))
        flags = self._local_flags(rows_table)
        by_key: dict[object, list[tuple[Row, int]]] = {}
        for key, row, release in _rows_by_key(rows_table, self.stream, flags):
            by_key.setdefault(key, []).append((row, release))
        due = [k for k in self.timers.due(clock.end) if k not in by_key]
        found: list[Found] = []
        for key in [*by_key, *due]:
            state = self.states.get(key) or {"rows": [], "base": 0, "threads": [],
                                             "found": {}, "resume": 0}
            for row, release in by_key.get(key, ()):
                found.extend(self._expire(key, state, row[TIME], clock))  # type: ignore[arg-type]
                for assign in self._feed(state, row):
                    found.append((key, row, release, -1, self._assigned(state, assign)))
                self._trim(state)
            found.extend(self._expire(key, state, clock.end, clock))
            self._settle(key, state)
        return self._output(found) if found else empty_output()

    def due_keys(self, until: int) -> list:
        return self.timers.due(until)

    def _assigned(self, state: dict, assign: list[list]) -> list[list]:
        return [[state["rows"][i - state["base"]], v] for i, v in assign]

    def _expire(self, key: object, state: dict, until: int, clock: Watermark) -> list[Found]:
        """Let event time pass to ``until``: deadline by deadline, drop the starts whose
        WITHIN ran out, and report the matches that waited on them."""
        out: list[Found] = []
        while (deadline := self._next_deadline(state)) is not None and deadline <= until:
            within, base, rows = self.rule.within_us, state["base"], state["rows"]
            state["threads"] = [t for t in state["threads"]
                                if rows[t[0] - base][TIME] + within > deadline]
            seq = clock.reach_one(deadline)
            out.extend((key, None, seq, deadline, self._assigned(state, assign))  # type: ignore[misc]
                       for assign in self._resolve(state))
            self._trim(state)
        return out

    def _next_deadline(self, state: dict) -> int | None:
        """When the earliest start still running runs out of its WITHIN (None: never)."""
        if self.rule.within_us is None or not state["threads"]:
            return None
        first = min(t[0] for t in state["threads"]) - state["base"]
        return state["rows"][first][TIME] + self.rule.within_us  # type: ignore[operator]

    def _settle(self, key: object, state: dict) -> None:
        """Keep the key's state and next deadline, or let the key go when nothing of it
        is left (no rows kept, no start running, no match waiting): a fresh state then
        behaves the same."""
        if state["rows"] or state["threads"] or state["found"]:
            self.states[key] = state
            self.timers.set(key, self._next_deadline(state))
        else:
            self.states.pop(key, None)
            self.timers.set(key, None)

    def _feed(self, state: dict, row: Row) -> list[list]:
        """Add the key's next row, once :meth:`_expire` has brought the key to its time;
        the matches it resolves (their row assignments)."""
        rows = state["rows"]
        rows.append(row)
        i = state["base"] + len(rows) - 1
        threads = state["threads"]
        if i >= state["resume"]:
            threads.extend([i, pc, []] for pc in self.closures[0] if self.prog[pc][0] == "var")
        found = state["found"]
        passed = self._defines(state, threads, i)
        nxt: list[list] = []
        seen: set[tuple[int, int]] = set()
        for (start, pc, assign), ok in zip(threads, passed, strict=True):
            if not ok or start in found:
                continue
            var = self.prog[pc][1]
            extended = [*assign, [i, var]]
            for npc in self.closures[pc + 1]:
                if self.prog[npc][0] == "match":
                    found.setdefault(start, extended)
                elif (start, npc) not in seen:
                    seen.add((start, npc))
                    nxt.append([start, npc, extended])
        state["threads"] = [t for t in nxt if t[0] not in found]
        return self._resolve(state)

    def _defines(self, state: dict, threads: list[list], i: int) -> list[bool]:
        """Whether each thread's variable accepts row i (all threads of one variable in
        one vectorised evaluation)."""
        passed = [True] * len(threads)
        by_var: dict[str, list[int]] = {}
        for n, (_, pc, _) in enumerate(threads):
            by_var.setdefault(self.prog[pc][1], []).append(n)
        row = state["rows"][-1]
        for var, members in by_var.items():
            cond = self.defines.get(var)
            if cond is None:
                continue  # an undefined variable accepts every row
            known = row.get(f"__ok_{var}")
            if known is not None:  # precomputed for the batch (see _local_flags)
                for n in members:
                    passed[n] = known
                continue
            env = Env(len(members))
            for qual, name in self.refs[var]:
                values = [self._value(state, threads[n][2], qual, name, var, row, i)
                          for n in members]
                env.columns[(qual, name)] = as_column(values, self.types[name])
            for n, ok in zip(members, truth(cond, env).tolist(), strict=True):
                passed[n] = ok
        return passed

    def _local_flags(self, table: Table) -> dict[str, np.ndarray]:
        """For each DEFINE that reads only the candidate row and ``prev`` rows, its value
        on every row of the batch (None where prev reaches before the key's first row of
        the batch: those rows are judged one by one against the key's buffered rows)."""
        n = nrows(table)
        if not self.local or n == 0:
            return {}
        codes = factorize(table[KEY])
        order = np.lexsort((table[SUB], table[SEQ], table[TIME], codes))
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        rank = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
        out = {}
        for var, depth in self.local.items():
            env = Env(n)
            for qual, name in self.refs[var]:
                values = table[name][order]
                nulls = table.get(name + NULL_SUFFIX)
                nulls = nulls[order] if nulls is not None else np.zeros(n, dtype=bool)
                back = 0 if qual == var else int(qual[6:])
                at = np.maximum(np.arange(n) - back, 0)
                env.columns[(qual, name)] = Col(values[at], nulls[at] | (rank < back))
            flag = np.empty(n, dtype=object)
            flag[order] = np.where(rank >= depth, truth(self.defines[var], env), None)
            out[f"__ok_{var}"] = flag
        return out

    def _value(self, state: dict, assign: list[list], qual: str, name: str, var: str,
               row: Row, i: int) -> object:
        if qual == var:
            return row.get(name)
        if qual.startswith("__prev"):
            j = i - int(qual[6:]) - state["base"]
            return state["rows"][j].get(name) if j >= 0 else None
        for index, v in reversed(assign):
            if v == qual:
                return state["rows"][index - state["base"]].get(name)
        return None

    def _resolve(self, state: dict) -> list[list]:
        """Report complete matches in start order, applying AFTER MATCH SKIP."""
        out = []
        threads, found = state["threads"], state["found"]
        while found:
            first = min(found)
            if any(t[0] < first for t in threads):
                break  # an earlier start may still match
            assign = found.pop(first)
            out.append(assign)
            last = assign[-1][0]
            resume = {"past last row": last + 1, "to next row": first + 1,
                      "to current row": last}[self.rule.skip]
            state["resume"] = max(state["resume"], resume)
            threads = [t for t in threads if t[0] >= resume]
            for start in [s for s in found if s < resume]:
                del found[start]
        state["threads"] = threads
        return out

    def _trim(self, state: dict) -> None:
        """Drop buffered rows no thread, pending match or prev() can reach."""
        i = state["base"] + len(state["rows"])  # the next row's index
        keep_from = min([t[0] for t in state["threads"]] + list(state["found"])
                        + [i - self.rule.prev_depth])
        drop = keep_from - state["base"]
        if drop > 0:
            del state["rows"][:drop]
            state["base"] = keep_from

    # ---- output

    def _output(self, found: list[Found]) -> Table:
        rule = self.rule
        m = len(found)
        env = Env(m)
        aggs: dict[ir.Agg, Col] = {}
        assigns = [assign for *_, assign in found]
        for agg in collect_nodes([c.expr for c in rule.measures], ir.Agg):
            aggs[agg] = _aggregate(agg, assigns, self.types)
        refs = {(r.qualifier, r.name) for r in collect_nodes(
            [c.expr for c in rule.measures], ir.FieldRef)}
        for qual, name in refs:
            values = [_last(assign, qual, name) for assign in assigns]
            env.columns[(qual, name)] = as_column(values, self.types[name])
        measures = Env(m)
        for column in rule.measures:
            measures.columns[("", column.name)] = evaluate(column.expr, env, aggs)
        values = [(c.name, c.expr.type, evaluate(c.expr, measures)) for c in rule.columns]
        keys = np.empty(m, dtype=object)
        keys[:] = [key for key, *_ in found]
        return build_output(rule.name, keys, *self._stamps(found), values)

    def _stamps(self, found: list[Found]) -> tuple[Stamps, Col | None]:
        """Each match's place in the reference order and time: the resolving row's, or
        the deadline's that resolved it."""
        ts_field = self.stream.timestamp
        seq, at, origin, ts = [], [], [], []
        for _, row, release, deadline, _ in found:
            if row is None:
                seq.append(release)
                at.append(2 * deadline)
                origin.append(TIMER)
                ts.append(deadline)
            else:
                seq.append(release)
                at.append(2 * row[TIME] + 1)  # type: ignore[operator]
                origin.append(row[SEQ])
                ts.append(row[ts_field] if ts_field else 0)
        stamps = Stamps(*(np.array(v, dtype=np.int64) for v in (seq, at, origin)))
        return stamps, Col(np.array(ts, dtype=np.int64)) if ts_field else None

    # ---- per-key state

    def keys(self) -> set:
        return set(self.states)

    def export(self, keys: list) -> dict[object, object]:
        for key in keys:
            self.timers.set(key, None)
        return {k: self.states.pop(k) for k in keys if k in self.states}

    def import_states(self, states: dict[object, object]) -> None:
        self.states.update(states)  # type: ignore[arg-type]
        for key, state in states.items():
            self.timers.set(key, self._next_deadline(state))  # type: ignore[arg-type]

    def snapshot(self) -> object:
        return [[k, s] for k, s in self.states.items()]

    def restore(self, state: object) -> None:
        self.states = {}
        self.timers = TimerIndex()
        self.import_states({k: s for k, s in state})  # type: ignore[union-attr]


def _rows_by_key(table: Table, stream: ir.StreamDef, flags: dict[str, np.ndarray]
                 ) -> Iterable[tuple[object, Row, int]]:
    """The batch's rows as (key, dict with the fields, ``__seq``, ``__time`` and
    precomputed DEFINE flags, the seq it is processed at), in per-key processing order."""
    order = np.lexsort((table[SUB], table[SEQ], table[TIME]))
    columns: dict[str, list] = {SEQ: table[SEQ][order].tolist(),
                                TIME: table[TIME][order].tolist()}
    columns.update({name: flag[order].tolist() for name, flag in flags.items()})
    columns.update({name: field_values(table, name, order) for name, _ in stream.fields})
    return zip(table[KEY][order].tolist(), rows_of(columns), table[RELEASE][order].tolist(),
               strict=True)


def _last(assign: list[list], var: str, name: str) -> object:
    for row, v in reversed(assign):
        if v == var:
            return row.get(name)
    return None


def _aggregate(agg: ir.Agg, matches: list[list[list]], types: dict[str, str]) -> Col:
    """One aggregate per match over its variable's rows (NULLs skipped)."""
    out = []
    for assign in matches:
        if agg.arg is None:
            out.append(len(assign))
            continue
        ref = agg.arg
        values = [row.get(ref.name) for row, v in assign if v == ref.qualifier]  # type: ignore[union-attr]
        values = [x for x in values if x is not None]
        out.append(_reduce(agg.name, values))
    return as_column(out, agg.type)


def _reduce(name: str, values: list) -> object:
    if name == "count":
        return len(values)
    if not values:
        return None
    if name == "first":
        return values[0]
    if name == "last":
        return values[-1]
    if name in ("min", "max"):
        return min(values) if name == "min" else max(values)
    total = math.fsum(values) if isinstance(values[0], float) else sum(values)
    if name == "sum":
        return total
    if name == "avg":
        return total / len(values)
    if len(values) < 2:  # stddev (sample)
        return None
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1))
