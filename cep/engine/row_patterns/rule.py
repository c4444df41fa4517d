"""MATCH_RECOGNIZE per partition key: the operator around the row pattern matcher.

The pattern is a program (``cep.engine.row_patterns.program``) that a matcher runs over
each key's rows in their processing order (``cep.engine.row_patterns.interpreter``, which
states SQL:2016's rules: the most preferred match from each start, held while a more
preferred thread may still grow it, decided in start order, AFTER MATCH SKIP). This
module feeds it: it evaluates DEFINE conditions (for all threads waiting on one
variable at once, or for the whole batch when a condition reads only the row and
``prev`` rows), buffers each key's rows, turns each decided start into output rows (one
per match, or with ALL ROWS PER MATCH one per row of it, and the rows in no match WITH
UNMATCHED ROWS), computes their MEASURES (``cep.engine.row_patterns.measures``) and
stamps them:

* a match is reported at the row that decides it (the row no preferred thread could
  take, or its own last row when nothing could follow), with that row's seq and ts;
* WITHIN T ends a start once event time reaches its row's time + T (the watermark, or a
  later row of the key, whichever comes first: a timer); a match it decides is reported
  at the deadline (its time) and the first input event whose watermark reaches it;
* without WITHIN a key whose threads still run has a timer at the end of the input
  (``END_OF_TIME``): at the end of a bounded input its held match is decided and
  reported at the input's end (``end_seq``) with the time of the key's last row. On an
  unbounded run such a match waits for a row that decides it;
* a rule whose DEFINEs read up to k rows after the one they navigate from
  (``NEXT(A.price, k)``) runs the key's matcher k rows behind its input: a row waits in
  the key's state (``ahead``) until the key's k-th row after it arrives, is then fed,
  and what feeding it decides is reported at the arriving row; at the end of a bounded
  input the waiting rows are fed (NEXT past the key's last row reads NULL) and what they
  decide is reported at the input's end. A WITHIN deadline that a waiting row could
  still be in time for is not reached before that row is fed (event time passes only
  to the first waiting row's time), so a start ends as it would over the whole input;
  what the deadline decides is reported where the row is fed (the arriving row, or the
  input's end), wherever the watermark passed it.

A key's state is plain data (its buffered rows as dicts, threads as lists, held
matches, the match number, the rows waiting for their lookahead) and moves with the
key. Rules the compiled matcher takes
(:mod:`cep.engine.row_patterns.plan` decides, once) run there instead
(:mod:`cep.engine.row_patterns.compiled`), their state arrays; this module's
interpreter stays for the others and as the semantics the kernel is tested against.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable

import numpy as np

from cep.engine.clock import END_OF_TIME, Watermark
from cep.engine.codec import StateFormatError
from cep.engine.event_rows import Row, as_column, field_values, rows_of
from cep.engine.expr import Col, Env, collect_nodes, evaluate, truth
from cep.engine.keyed import PerKeyState
from cep.engine.output import TIMER, Stamps, build_output, empty_output
from cep.engine.row_patterns import interpreter as matcher
from cep.engine.row_patterns.compiled import KernelOperator
from cep.engine.row_patterns.measures import MatchRow, aggregate, first_waiting, measure_value
from cep.engine.row_patterns.navigation import position
from cep.engine.row_patterns.navigation import reads as nav_reads
from cep.engine.row_patterns.plan import plan
from cep.engine.row_patterns.program import build_program
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
from grammar import ir
from grammar.row_nav import ALL, CLASSIFIER, MATCH, Nav, aggregate_rows

# an output row: its key, the seq it is reported at, its place in the reference order
# (``at`` and ``origin``, see cep.engine.output: the deciding row's, or TIMER when a WITHIN
# deadline or the end of the input decided it), its time, and the row's content
Out = tuple[object, int, int, int, int, "MatchRow"]
#: where a row is reported: the seq, ``at``, ``origin`` and ts of an :data:`Out`
Stamp = tuple[int, int, int, int]
#: ``at`` of a match the end of the input decides: after every timer's
END_AT = (1 << 63) - 1


class MatchRecognizeOperator(PerKeyState):
    """Runs one :class:`ir.MatchRecognizeRule` for all keys of an engine: on the
    compiled matcher (:mod:`cep.engine.row_patterns.compiled`) when its plan admits the
    rule, decided here once (``kernel``: None, and why not in ``interpreted``), else on
    this module's interpreter."""

    #: whether rules the kernel admits run on it (False: every rule on the interpreter,
    #: what the differential tests and the benchmark's before figure compare with)
    use_kernel = True

    def __init__(self, rule: ir.MatchRecognizeRule, stream: ir.StreamDef,
                 kernel: bool = True) -> None:
        """``kernel`` False runs the rule on the interpreter even where the kernel would
        take it (the engine passes ``engine.kernels_on()``: ``CEP_INTERPRET``)."""
        self.rule = rule
        self.stream = stream
        self.defines = dict(rule.defines)
        self.refs = {var: sorted({(r.qualifier, r.name) for r in _outside_aggregates(cond)})
                     for var, cond in self.defines.items()}
        self.navs = {q: Nav.parse(q) for refs in self.refs.values() for q, _ in refs}
        self.groups = {**{v: (v,) for v in rule.variables}, **dict(rule.unions)}
        self.program = build_program(rule.pattern, {
            var: _define_reads(refs, collect_nodes([cond], ir.Agg), self.groups)
            for (var, refs), cond in zip(self.refs.items(), self.defines.values(),
                                         strict=True)})
        self.types = {**dict(stream.fields), CLASSIFIER: "string"}
        self.skip_to = self.groups.get(rule.skip_var, ()) if rule.skip_var else ()
        self.states: dict[object, dict] = {}
        self.timers = TimerIndex()  # each key's next WITHIN deadline (or the input's end)
        # DEFINEs that read only the candidate row and the key's rows n before or after
        # it: evaluated for a whole batch at once (with how many rows of the key before
        # and after it they need)
        self.aggs = {var: collect_nodes([cond], ir.Agg) for var, cond in self.defines.items()}
        self.local = {var: (_around(refs, "__prev"), _around(refs, "__next"))
                      for var, refs in self.refs.items()
                      if all(q == var or q.startswith(("__prev", "__next")) for q, _ in refs)
                      and not self.aggs[var]}
        measure_refs = collect_nodes([c.expr for c in rule.measures], ir.FieldRef)
        # a key's state stays while it has a match number to continue
        self.numbered = any(r.qualifier == MATCH for r in measure_refs)
        # with ^ a key's state stays, so that its rows keep their places (0: its first)
        self.anchored = any(op[0] == "start" for op in self.program.ops)
        # how far PREV in MEASURES reads before a match's first row
        navs = [Nav.parse(r.qualifier) for r in measure_refs]
        self.measure_depth = max([0, *(-n.physical for n in navs if n is not None)])
        # how far NEXT in MEASURES reads after a match's last row: its report waits for
        # those rows of the key (or the input's end)
        self.next_depth = max([0, *(n.physical for n in navs if n is not None)])
        # how far NEXT in DEFINE reads after the row it navigates from (at most the
        # candidate row): a row is fed to the matcher once that many rows follow it
        self.lookahead = max([0, *(n.physical for n in self.navs.values() if n is not None),
                              *(_around(refs, "__next") for refs in self.refs.values())])
        kernel_plan = plan(rule, self.program, self.groups, dict(stream.fields))
        self.kernel: KernelOperator | None = None
        self.interpreted = kernel_plan if isinstance(kernel_plan, str) else ""
        if kernel and self.use_kernel and not isinstance(kernel_plan, str):
            self.kernel = KernelOperator(rule, stream, kernel_plan, self.groups,
                                         self.numbered)

    # ---- processing

    def process(self, tables: dict[str, Table], clock: Watermark) -> Table:
        """The batch's rows, key by key in processing order, and the WITHIN deadlines
        (and at the end of a bounded input, the input's end) the watermark reaches for
        every key that has one."""
        if self.kernel is not None:
            return self.kernel.process(tables, clock)
        rows_table = tables[self.rule.stream]
        env = Env(nrows(rows_table))
        env.bind_table("", rows_table)
        rows_table = take(rows_table, truth(self.rule.filter, env))
        flags = self._local_flags(rows_table)
        by_key: dict[object, list[tuple[Row, int]]] = {}
        for key, row, release in _rows_by_key(rows_table, self.stream, flags):
            by_key.setdefault(key, []).append((row, release))
        due = [k for k in self.timers.due(clock.end) if k not in by_key]
        out: list[Out] = []
        for key in [*by_key, *due]:
            state = self.states.get(key) or self._new_state()
            for row, release in by_key.get(key, ()):
                ts = row[self.stream.timestamp] if self.stream.timestamp else 0
                stamp = (release, 2 * row[TIME] + 1, row[SEQ], ts)  # type: ignore[operator]
                out.extend(self._arrive(key, state, row, stamp, clock))  # type: ignore[arg-type]
            if clock.final and state.get("ahead"):
                out.extend(self._flush(key, state, clock))
            out.extend(self._expire(key, state, self._reachable(state, clock.end), clock))
            self._settle(key, state)
        return self._output(out) if out else empty_output()

    def _new_state(self) -> dict:
        """A key before its first row (with a list for the rows waiting for their
        lookahead, when a DEFINE reads NEXT)."""
        state = matcher.new_state()
        if self.lookahead:
            state["ahead"] = []
        return state

    def _arrive(self, key: object, state: dict, row: Row, stamp: Stamp, clock: Watermark
                ) -> list[Out]:
        """The key's next row: event time passes to it (as far as no waiting row could
        still be in time for a start), then it is fed, or it waits for the rows NEXT
        reads after it and feeds the row that waited longest, if its lookahead is here
        now (what that decides, deadlines included, is reported at this row)."""
        out = self._expire(key, state, self._reachable(state, row[TIME]), clock)  # type: ignore[arg-type]
        if not self.lookahead:
            return out + self._step(key, state, row, stamp, clock, None)
        ahead = state["ahead"]
        ahead.append(row)
        while len(ahead) > self.lookahead:
            out.extend(self._step(key, state, ahead.pop(0), stamp, clock, stamp))
        return out + self._expire(key, state, ahead[0][TIME], clock, stamp)  # type: ignore[arg-type]

    def _flush(self, key: object, state: dict, clock: Watermark) -> list[Out]:
        """At the end of a bounded input: feed the rows still waiting for their
        lookahead (NEXT past the key's last row reads NULL), then let the key's time pass
        to the end; what that decides is reported at the input's end, with the time of
        the key's last row. The WITHIN deadlines passed after the first waiting row's
        time are reached here too, not where the watermark reached them: the key's time
        could not pass that row before it was fed, and which batch an earlier event fell
        in must not tell where a match is reported."""
        ahead = state["ahead"]
        ts = ahead[-1].get(self.stream.timestamp or "", 0)
        stamp = (clock.end_seq, END_AT, TIMER, ts)
        out: list[Out] = []
        while ahead:
            out.extend(self._step(key, state, ahead.pop(0), stamp, clock, stamp))  # type: ignore[arg-type]
        return out + self._expire(key, state, END_OF_TIME, clock, stamp)  # type: ignore[arg-type]

    def _step(self, key: object, state: dict, row: Row, stamp: Stamp, clock: Watermark,
              expire_stamp: Stamp | None) -> list[Out]:
        """Feed one row to the key's matcher, once event time has passed to its time
        (the deadlines it passes reported at ``expire_stamp``, or as timers when None),
        and report what it decides at ``stamp``."""
        out = self._expire(key, state, row[TIME], clock, expire_stamp)  # type: ignore[arg-type]
        self._feed(state, row)
        out.extend((key, *stamp, m) for m in self._decide(state))  # type: ignore[misc]
        self._trim(state)
        return out

    @staticmethod
    def _reachable(state: dict, until: int) -> int:
        """How far event time may pass for the key now: to ``until``, but not past the
        time of a row that waits for its lookahead (a start it could still extend must
        not run out of WITHIN before it is fed)."""
        ahead = state.get("ahead")
        return min(until, ahead[0][TIME]) if ahead else until  # type: ignore[type-var]

    def due_keys(self, until: int) -> list:
        if self.kernel is not None:
            return self.kernel.due_keys(until)
        return self.timers.due(until)

    def _decide(self, state: dict, ended: bool = False) -> list[MatchRow]:
        """The output rows of the starts now decided (see :class:`MatchRow`); none yet
        while a decided match lacks the rows NEXT reads after it, unless the input
        ``ended`` (those after it wait too)."""
        out: list[MatchRow] = []
        until = math.inf
        if self.next_depth and not ended:
            until = first_waiting(state, self.rule.skip, self.skip_to, self.next_depth)
        rows, base = state["rows"], state["base"]
        every = self.rule.rows == "all"
        for d in matcher.decide(state, self.rule.skip, self.skip_to, until):
            at = d.start - base
            if d.labels is None:
                if every and self.rule.empty == "unmatched":
                    out.append(MatchRow([rows[at]], 0, None, 0, 0, rows[at]))
                continue
            lo = max(at - self.measure_depth, 0)
            end = at + len(d.labels) + self.next_depth
            # the rows NEXT reads past the match may still wait for their own lookahead
            match = rows[lo:end] + state.get("ahead", [])[:max(end - len(rows), 0)]
            before = at - lo
            if not every:
                out.append(MatchRow(match, before, d.labels, d.number, len(d.labels) - 1,
                                    rows[at]))
            elif not d.labels:
                if self.rule.empty != "omit":
                    out.append(MatchRow(match, before, d.labels, d.number, -1, rows[at]))
            else:
                hidden = set(d.excluded)
                out.extend(MatchRow(match, before, d.labels, d.number, k, match[before + k])
                           for k in range(len(d.labels)) if k not in hidden)
        return out

    def _expire(self, key: object, state: dict, until: int, clock: Watermark,
                stamp: Stamp | None = None) -> list[Out]:
        """Let event time pass to ``until``: deadline by deadline, end the starts whose
        WITHIN ran out (every start at the end of the input), and report the matches
        that waited on them: at the deadline (a timer), or at ``stamp`` when the
        deadline was reached while rows it could not pass waited for their lookahead."""
        out: list[Out] = []
        while (deadline := self._next_deadline(state)) is not None and deadline <= until:
            seq = clock.reach_one(deadline)
            # a match waiting for the rows NEXT reads after it is reported at the input's
            # end (END_OF_TIME), even when a WITHIN after the input's end decided it
            ended = deadline == END_OF_TIME
            if ended:  # the input's end: no row can extend a match
                matcher.end_input(self.program, state)
                at, ts = END_AT, state["rows"][-1].get(self.stream.timestamp or "", 0)
            else:
                before = self._first_in_time(state, deadline)
                if clock.final and deadline > clock.last:  # WITHIN ends after the input
                    matcher.end_input(self.program, state, before)
                else:
                    matcher.end_starts(state, before)
                at, ts = 2 * deadline, deadline
            place = (seq, at, TIMER, ts) if stamp is None else stamp
            out.extend((key, *place, m)  # type: ignore[misc]
                       for m in self._decide(state, ended))
            self._trim(state)
        return out

    def _first_in_time(self, state: dict, deadline: int) -> int:
        """The first row whose WITHIN has not run out at ``deadline`` (rows come in time
        order, so the starts that ran out are those before it)."""
        return state["base"] + bisect.bisect_right(
            state["rows"], deadline - self.rule.within_us,  # type: ignore[operator]
            key=lambda row: row[TIME])

    def _next_deadline(self, state: dict) -> int | None:
        """When the earliest start still running runs out of its WITHIN; without WITHIN
        the input's end (a running thread may still make or grow a match until then);
        the input's end too for a decided match waiting for the rows NEXT reads after
        it; None when no thread runs and no match waits."""
        if not state["threads"]:
            return END_OF_TIME if state["found"] else None
        if self.rule.within_us is None:
            return END_OF_TIME
        first = state["threads"][0][0] - state["base"]
        return state["rows"][first][TIME] + self.rule.within_us  # type: ignore[operator]

    def _timer(self, state: dict) -> int | None:
        """When the key needs a visit without a row of its own: its next deadline; with
        rows waiting for their lookahead only the input's end (every deadline they do
        not block was reached when the last of them arrived)."""
        return END_OF_TIME if state.get("ahead") else self._next_deadline(state)

    def _settle(self, key: object, state: dict) -> None:
        """Keep the key's state and next deadline, or let the key go when nothing of it
        is left (no rows kept or waiting, no start running, no match waiting, no match
        number to continue, no row place that ``^`` counts from): a fresh state then
        behaves the same."""
        if (state["rows"] or state.get("ahead") or state["threads"] or state["found"]
                or (self.numbered and state["number"]) or (self.anchored and state["next"])):
            self.states[key] = state
            self.timers.set(key, self._timer(state))
        else:
            self.states.pop(key, None)
            self.timers.set(key, None)

    def _feed(self, state: dict, row: Row) -> None:
        """Add the key's next row, once :meth:`_expire` has brought the key to its time,
        and move the key's threads over it."""
        rows = state["rows"]
        rows.append(row)
        i = state["base"] + len(rows) - 1
        matcher.open_start(self.program, state, i)
        matcher.advance(self.program, state, self._defines(state, state["threads"], i))

    def _defines(self, state: dict, threads: list[list], i: int) -> list[bool]:
        """Whether each thread's variable accepts row i (all threads of one variable in
        one vectorised evaluation)."""
        passed = [True] * len(threads)
        by_var: dict[str, list[int]] = {}
        names = self.program.vars
        for n, thread in enumerate(threads):
            by_var.setdefault(names[thread[1]], []).append(n)
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
            env = Env(len(members), seq=np.full(len(members), row[SEQ], np.int64))  # row i's
            for qual, name in self.refs[var]:
                values = [self._value(state, threads[n], qual, name, var, i)
                          for n in members]
                env.columns[(qual, name)] = as_column(values, self.types[name])
            aggs = {agg: self._running_aggregate(state, [threads[n] for n in members],
                                                 agg, var)
                    for agg in self.aggs[var]}
            for n, ok in zip(members, truth(cond, env, aggs).tolist(), strict=True):
                passed[n] = ok
        return passed

    def _local_flags(self, table: Table) -> dict[str, np.ndarray]:
        """For each DEFINE that reads only the candidate row and the rows n before and
        after it (``__prev{n}``, ``__next{n}``), its value on every row of the batch
        (None where it reaches before the key's first row of the batch or past its last:
        those rows are judged one by one against the key's buffered and waiting
        rows)."""
        n = nrows(table)
        if not self.local or n == 0:
            return {}
        codes = factorize(table[KEY])
        order = np.lexsort((table[SUB], table[SEQ], table[TIME], codes))
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        sizes = np.diff(np.append(starts, n))
        rank = np.arange(n) - np.repeat(starts, sizes)
        rest = np.repeat(sizes, sizes) - rank - 1  # the key's rows after each in the batch
        out = {}
        for var, (depth, ahead) in self.local.items():
            env = Env(n, seq=table[SEQ][order])
            for qual, name in self.refs[var]:
                values = table[name][order]
                nulls = table.get(name + NULL_SUFFIX)
                nulls = nulls[order] if nulls is not None else np.zeros(n, dtype=bool)
                step = 0 if qual == var else int(qual[6:])
                if qual.startswith("__prev"):
                    at, outside = np.maximum(np.arange(n) - step, 0), rank < step
                else:
                    at, outside = np.minimum(np.arange(n) + step, n - 1), rest < step
                env.columns[(qual, name)] = Col(values[at], nulls[at] | outside)
            flag = np.empty(n, dtype=object)
            flag[order] = np.where((rank >= depth) & (rest >= ahead),
                                   truth(self.defines[var], env), None)
            out[f"__ok_{var}"] = flag
        return out

    def _value(self, state: dict, thread: list, qual: str, name: str, var: str, i: int
               ) -> object:
        """What ``qual.name`` reads in ``var``'s DEFINE for ``thread`` at row i: the row
        itself, the partition's row n before, or the row a navigation names (the
        candidate row is the current one, labelled ``var``; physical offsets reach back
        into the partition, never past the candidate)."""
        rows, base = state["rows"], state["base"]
        if qual == var:
            return rows[i - base].get(name)
        if qual.startswith("__prev"):
            j = i - int(qual[6:]) - base
            return rows[j].get(name) if j >= 0 else None
        if qual.startswith("__next"):
            return _after(state, i + int(qual[6:]), name)
        nav = self.navs[qual]
        start, _, labels, _ = thread
        labels = [*labels, var]
        at = position(nav, labels, len(labels) - 1)  # type: ignore[arg-type]
        if at is None:
            return None
        if name == CLASSIFIER:  # rows past the candidate have no label yet
            return labels[at] if 0 <= at < len(labels) else None
        j = start + at - base
        if j < 0:
            return None
        return rows[j].get(name) if j < len(rows) else _after(state, start + at, name)

    def _running_aggregate(self, state: dict, threads: list[list], agg: ir.Agg, var: str
                           ) -> Col:
        """An aggregate in ``var``'s DEFINE for each thread: over the thread's rows so far
        and the candidate row (labelled ``var``)."""
        rows = state["rows"]
        content = []
        for start, _, labels, _ in threads:
            at = start - state["base"]
            labels = [*labels, var]
            content.append(MatchRow(rows[at:at + len(labels)], 0, labels, 0,
                                    len(labels) - 1, rows[-1]))
        return aggregate(agg, content, False, self.groups)

    def _trim(self, state: dict) -> None:
        """Drop buffered rows no thread, held match or navigation can reach."""
        i = state["base"] + len(state["rows"])  # the next row's index
        earliest = matcher.earliest_start(state)
        depth = max(self.rule.prev_depth, self.measure_depth)
        keep_from = i - depth if earliest is None else min(earliest, i) - depth
        drop = keep_from - state["base"]
        if drop > 0:
            del state["rows"][:drop]
            state["base"] = keep_from

    # ---- output

    def _output(self, out: list[Out]) -> Table:
        rule = self.rule
        m = len(out)
        content = [o[5] for o in out]
        made_at = np.array([o[1] for o in out], dtype=np.int64)  # the rows' seq (stamps)
        env = Env(m, seq=made_at)
        exprs = [c.expr for c in rule.measures]
        # FINAL is in an aggregate's argument (grammar.row_nav.final_qualifier)
        aggs = {column.name: {agg: aggregate(agg, content, False, self.groups)
                              for agg in collect_nodes([column.expr], ir.Agg)}
                for column in rule.measures}
        for ref in collect_nodes(exprs, ir.FieldRef):
            if (ref.qualifier, ref.name) not in env.columns:
                values = [measure_value(ref, c) for c in content]
                env.columns[(ref.qualifier, ref.name)] = as_column(values, ref.type)
        measures = Env(m, seq=made_at)
        if rule.rows == "all":
            for name, _ in self.stream.fields:
                measures.columns[("", name)] = as_column([c.row.get(name) for c in content],
                                                         self.types[name])
        for column in rule.measures:
            measures.columns[("", column.name)] = evaluate(column.expr, env,
                                                           aggs[column.name])
        values = [(c.name, c.expr.type, evaluate(c.expr, measures)) for c in rule.columns]
        keys = np.empty(m, dtype=object)
        keys[:] = [o[0] for o in out]
        seq, at, origin, ts = (np.array(v, dtype=np.int64) for v in zip(
            *[o[1:5] for o in out], strict=True))
        stamps = Stamps(seq, at, origin)
        return build_output(rule.name, keys, stamps,
                            Col(ts) if self.stream.timestamp else None, values)

    # ---- per-key state

    def keys(self) -> set:
        if self.kernel is not None:
            return self.kernel.keys()
        return set(self.states)

    def export(self, keys: list) -> dict[object, object]:
        if self.kernel is not None:
            return self.kernel.export(keys)
        for key in keys:
            self.timers.set(key, None)
        return {k: self.states.pop(k) for k in keys if k in self.states}

    def import_states(self, states: dict[object, object]) -> None:
        if self.kernel is not None:
            self.kernel.import_states(states)
            return
        for state in states.values():
            if not isinstance(state, dict) or set(state) - {"ahead"} != set(matcher.new_state()):
                # a key's state from the matcher before SQL:2016's rules (issue 43):
                # its threads mean other matches, and cannot be carried on
                raise StateFormatError("MATCH_RECOGNIZE state of another layout (an older "
                                       "cep): start from a new checkpoint")
            if self.lookahead:
                state.setdefault("ahead", [])  # (a state from before NEXT in DEFINE)
        self.states.update(states)  # type: ignore[arg-type]
        for key, state in states.items():
            self.timers.set(key, self._timer(state))  # type: ignore[arg-type]

    def snapshot(self) -> object:
        if self.kernel is not None:
            return self.kernel.snapshot()
        return [[k, s] for k, s in self.states.items()]

    def restore(self, state: object) -> None:
        if self.kernel is not None:
            self.kernel.restore(state)
            return
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


def _around(refs: list[tuple[str, str]], prefix: str) -> int:
    """How many rows before (``__prev``) or after (``__next``) the candidate a DEFINE
    reading ``refs`` reads directly."""
    return max([int(q[6:]) for q, _ in refs if q.startswith(prefix)], default=0)


def _after(state: dict, j: int, name: str) -> object:
    """Field ``name`` of the key's row j at or after the first row not yet fed: a row
    waiting for its own lookahead (none past the key's last row, at the input's end)."""
    ahead = state.get("ahead", [])
    k = j - state["base"] - len(state["rows"])
    return ahead[k].get(name) if k < len(ahead) else None


def _outside_aggregates(expr: ir.TExpr) -> list[ir.FieldRef]:
    """The field references of an expression that no aggregate's argument holds."""
    return [n for n in collect_nodes([expr], (ir.FieldRef, ir.Agg))
            if isinstance(n, ir.FieldRef)]


def _define_reads(refs: list[tuple[str, str]], aggs: list[ir.Agg],
                  groups: dict[str, tuple[str, ...]]
                  ) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """What a DEFINE reading ``refs`` and aggregating ``aggs`` reads of a thread's
    labels (see ``program.Reads``); an aggregate over one variable reads all
    of its rows, one over every row (or ``count(*)``) none in particular, unless its
    arguments read each row's label (``max(CLASSIFIER())``): then every label."""
    last: set[str] = set()
    every: set[str] = set()
    whole = False
    for agg in aggs:
        if agg.arg is None:
            continue
        rows, _ = aggregate_rows(agg)
        every.update(groups.get(rows, ()))
        whole = whole or (rows == ALL and any(
            ref.name == CLASSIFIER for ref in collect_nodes([agg.arg, agg.by], ir.FieldRef)))
    for qual, name in refs:
        nav = Nav.parse(qual)
        if nav is None:
            continue
        var_last, var_every, var_whole = nav_reads(nav, name, CLASSIFIER)
        last.update(var_last)
        every.update(var_every)
        whole = whole or var_whole
    return tuple(sorted(last)), tuple(sorted(every)), whole
