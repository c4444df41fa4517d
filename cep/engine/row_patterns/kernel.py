"""The row pattern matcher compiled: one numba Pike VM over integer program arrays.

``run_keys`` is one compiled loop of about 490 lines whose threads, labels and aggregate
states are a dozen local arrays: cut into functions it would pass them all at every call.
Its steps (aggregate states, growing the thread arrays) are in
:mod:`cep.engine.row_patterns.kernel_steps`, which numba compiles into it.

Measured gain, rows identical (one core of a 2-core machine shared with other work,
load average 3-4; 100k-event batches, after an untimed warm-up run):

* ``python bench/bench_reference.py --only match_recognize [--interpreter]`` (1M events,
  4,096 keys, ``A B+ C`` WITHIN 10 sec with ``C.v > A.v``; the bench profiles, which
  costs the interpreter more): 26,828 events/s on the interpreter, 1,098,478 on this
  kernel (41×); the window rows of the same session 1,156,842 and 1,877,878;
* ``python bench/bench_match_recognize.py --copies 10`` (``bench/results/
  match_recognize.json``): that rule 49,472 → 1,298,485 events/s (26×); ALL ROWS PER
  MATCH ``A B+`` 73,646 → 979,210 (13×); ten years of flights (3,342,640 events):
  ``A B+ C`` WITHIN 24 hours SKIP PAST LAST ROW 62,692 → 1,242,519 (20×), ``A+ B`` SKIP
  TO NEXT ROW with aggregates 80,290 → 1,373,100 (17×).
* running aggregates in DEFINE (``A B+`` ALL ROWS PER MATCH WITHIN 10 sec, ``B AS
  avg(B.v) > 0.3``, 1M events, 4,096 keys), which ran on the interpreter before: in a
  whole ``bench/bench_match_recognize.py --copies 10`` run at load average 3.8-6.8,
  23,500 → 357,132 events/s (15×; the same rule without the aggregate 354,517 on the
  kernel in that run, the interpreter's FIRST-in-DEFINE shape 20,802); interleaved,
  300k events, load average 7.3: 18,133 → 177,754, 16,535 → 409,561, 20,939 → 375,003
  (10-25×), 0.94-0.97× the kernel's rate on the rule without the aggregate.

The semantics are :mod:`cep.engine.row_patterns.interpreter`'s, step for step (that module is
the oracle the differential test compares this one with): threads of every start in
start order and, within a start, in preference order; a thread that reaches ``match``
records its start's match and ends its less preferred siblings; a start is decided when
no thread of it or of an earlier start runs; AFTER MATCH SKIP after each match; WITHIN
ends the starts whose time ran out before the next row is read, deadline by deadline;
two threads of one start at one instruction are one when the last row of every
variable a later DEFINE reads agrees, and the running state of every aggregate a later
DEFINE compares (Trino's thread equivalence; the interpreter asks for equal positions
of the aggregated variables' rows instead, which implies equal states: both keep, of
threads whose futures are the same, the most preferred, so the matches are the same;
the operator gives patterns whose DEFINEs read more to the interpreter).

The program is plain arrays, so one compiled function (``cache=True``) serves every
rule and no batch compiles code:

* ``pvar[pc]``: the variable a ``var`` instruction consumes (-1 elsewhere), ``pexcl[pc]``
  whether it is inside ``{- -}``, ``pmatch[pc]`` whether it is ``match``;
  ``clo_off``/``clo_pc``: each instruction's closure (the
  ``var``/``match`` instructions reachable without a row, in preference order; ``^``
  ends a path), ``clo_start`` the first instruction's at the partition's first row
  (where ``^`` holds);
  ``reads_last[pc, v]``: whether a DEFINE reachable from pc reads v's last row;
* DEFINE: ``flags[row, v]`` (the conjuncts that read the row and ``PREV`` rows, computed
  column-wise beforehand) and residual conjuncts ``lhs OP LAST(X.f)`` per variable
  (``res_off``), their left sides ``res_lhs[row, k]`` and the fields ``res_col[row, f]``;
  aggregate conjuncts ``AGG OP rhs`` per variable (``ag_off``): the function
  (``ag_fn``: count, sum, avg, min, max), the aggregated field (``ag_col``, a column of
  ``ag_vals``; -1: ``count(*)``), the variables whose rows it takes (``ag_set``), the
  right side per row (``ag_rhs``) or another variable's last row (``ag_nav``,
  ``ag_navf``), and ``reads_agg[pc, k]``: whether a DEFINE reachable from pc compares
  aggregate k.

Each thread carries, per aggregate conjunct, the aggregate's running state over its
rows (:mod:`cep.engine.row_patterns.kernel_steps` says how it is kept exact).

A thread's labels live in an arena of nodes (the ``var`` instruction that took the row,
parent node): forks share their prefix, and a match's labels (and which of its rows
``{- -}`` hides) are read back from its last node when it is decided. A
key's state between calls is arrays (threads, held matches, the arena compacted to the
nodes they reach; the next start to decide, the first row a match may start at, the
match number), handed in and out in CSR form (one segment per key).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cep.engine.row_patterns.kernel_steps import (
    AG_COUNT,
    AG_INEXACT,
    AG_MAX,
    AG_MIN,
    AG_WIDTH,
    SUM_HI,
    chain_sum,
    compare,
    drop_first,
    fold,
    fresh,
    grow1,
    grow2,
    nav_row,
    threads_with_room,
)

#: AFTER MATCH SKIP kinds as the VM numbers them
SKIPS = {"past last row": 0, "to next row": 1, "to current row": 2, "to first": 3,
         "to last": 4}
#: comparison operators of residual conjuncts (``lhs OP nav``)
COMPARES = {"<": 0, "<=": 1, ">": 2, ">=": 3, "=": 4, "!=": 5}
#: how a decided match was decided: by a row, by a WITHIN deadline, by the input's end
BY_ROW, BY_DEADLINE, BY_END = 0, 1, 2


@njit(cache=True, nogil=True)
def run_keys(seg_lo, new_lo, seg_hi, base0, time,
             flags, res_off, res_nav, res_field, res_op, res_lhs, res_lhs_null,
             res_col, res_col_null,
             ag_off, ag_fn, ag_col, ag_set, ag_op, ag_rhs, ag_rhs_null, ag_nav, ag_navf,
             ag_vals, ag_nulls, reads_agg,
             pvar, pmatch, pexcl, clo_off, clo_pc, clo_start, reads_last, n_vars,
             within, skip, skip_set, until, end_of_time, depth,
             th_off, th_start, th_pc, th_len, th_node, th_last,
             fd_off, fd_start, fd_len, fd_node,
             ar_off, ar_var, ar_parent,
             next0, resume0, number0, covered0, unmatched):  # pragma: no cover - compiled
    """Walk every key g's rows ``new_lo[g]:seg_hi[g]`` (its buffered rows are
    ``seg_lo[g]:new_lo[g]``, the first at partition index ``base0[g]``) from its state,
    and then let event time pass to ``until``.

    A thread's aggregate states are rebuilt from its rows when the call starts, and
    folded on with each row it takes.

    Returns the decided matches (key, start index, length, number, how it was decided,
    with ``unmatched`` also the starts in no match that no match covered, length -1,
    the deciding row or the key's last row, the deadline, offset of its labels) with
    their labels, and each key's state after it: threads, held matches and arena (CSR),
    the next start to decide, the first row a match may start at, the match number, the
    first partition index still needed, the next deadline (-1: none), the first row no
    reported match covers."""
    n_keys = len(seg_lo)
    n_rows = len(time)
    # decided matches: at most one per start, a start per row
    m_key = np.empty(n_rows, np.int64)
    m_start = np.empty(n_rows, np.int64)
    m_len = np.empty(n_rows, np.int64)
    m_number = np.empty(n_rows, np.int64)
    m_kind = np.empty(n_rows, np.int64)
    m_row = np.empty(n_rows, np.int64)
    m_deadline = np.empty(n_rows, np.int64)
    m_lab = np.empty(n_rows + 1, np.int64)
    labels = np.empty(max(n_rows, 16), np.int32)
    hidden = np.empty(max(n_rows, 16), np.bool_)
    n_matches = 0
    n_labels = 0
    # the state after the call
    o_th_off = np.zeros(n_keys + 1, np.int64)
    o_th_start = np.empty(16, np.int64)
    o_th_pc = np.empty(16, np.int32)
    o_th_len = np.empty(16, np.int64)
    o_th_node = np.empty(16, np.int64)
    o_th_last = np.empty((16, n_vars), np.int64)
    o_fd_off = np.zeros(n_keys + 1, np.int64)
    o_fd_start = np.empty(16, np.int64)
    o_fd_len = np.empty(16, np.int64)
    o_fd_node = np.empty(16, np.int64)
    o_ar_off = np.zeros(n_keys + 1, np.int64)
    o_ar_var = np.empty(16, np.int32)
    o_ar_parent = np.empty(16, np.int64)
    o_next = np.empty(n_keys, np.int64)
    o_resume = np.empty(n_keys, np.int64)
    o_covered = np.empty(n_keys, np.int64)
    o_keep = np.empty(n_keys, np.int64)
    o_deadline = np.empty(n_keys, np.int64)
    o_number = np.empty(n_keys, np.int64)
    # working arrays, reused from key to key
    # threads: row ``cur`` of these holds the running ones, row ``nx`` those a row
    # moves them to (swapping the two numbers, not the arrays: no reference counting)
    cap = 16
    cur = 0
    nx = 1
    ts_ = np.empty((2, cap), np.int64)
    tp_ = np.empty((2, cap), np.int32)
    tl_ = np.empty((2, cap), np.int64)
    tn_ = np.empty((2, cap), np.int64)
    tlast_ = np.empty((2, cap, n_vars), np.int64)
    n_ag = len(ag_fn)
    tag_ = np.empty((2, cap, n_ag, AG_WIDTH), np.float64)
    # a moving thread's aggregate states with its row taken
    nst = np.empty((n_ag, AG_WIDTH), np.float64)
    chain = np.empty(16, np.int64)  # a loaded thread's variables, row by row
    wa_var = np.empty(64, np.int32)
    wa_parent = np.empty(64, np.int64)
    max_clo = 1
    for pc in range(len(pvar)):
        max_clo = max(max_clo, clo_off[pc + 1] - clo_off[pc])
    first_stops = max(clo_off[1] - clo_off[0], len(clo_start))
    # held matches by start row (-1: none), and the arena's marks, shared by the keys
    f_len = np.full(n_rows, -1, np.int64)
    f_node = np.full(n_rows, -1, np.int64)
    mark = np.zeros(64, np.bool_)
    renum = np.empty(64, np.int64)

    for g in range(n_keys):
        lo = seg_lo[g]
        hi = seg_hi[g]
        base = base0[g]
        # the key's arena
        a0 = ar_off[g]
        n_arena = ar_off[g + 1] - a0
        if n_arena + 16 > len(wa_var):
            wa_var = grow1(wa_var, n_arena + 16)
        if n_arena + 16 > len(wa_parent):
            wa_parent = grow1(wa_parent, n_arena + 16)
        for k in range(n_arena):
            wa_var[k] = ar_var[a0 + k]
            wa_parent[k] = ar_parent[a0 + k]
        # its threads
        t0 = th_off[g]
        n_cur = th_off[g + 1] - t0
        if n_cur + first_stops > cap:
            cap = 2 * (n_cur + first_stops)
            ts_, tp_, tl_, tn_, tlast_, tag_ = threads_with_room(
                ts_, tp_, tl_, tn_, tlast_, tag_, cur, 0, cap)
        for k in range(n_cur):
            ts_[cur, k] = th_start[t0 + k]
            tp_[cur, k] = th_pc[t0 + k]
            tl_[cur, k] = th_len[t0 + k]
            tn_[cur, k] = th_node[t0 + k]
            for x in range(n_vars):
                tlast_[cur, k, x] = th_last[t0 + k, x]
            # its aggregates' states, from its rows in order (they are not part of the
            # key's state)
            if n_ag:
                length = th_len[t0 + k]
                if length > len(chain):
                    chain = np.empty(2 * length, np.int64)
                node = th_node[t0 + k]
                for j in range(length - 1, -1, -1):
                    chain[j] = pvar[wa_var[node]]
                    node = wa_parent[node]
                row0 = th_start[t0 + k] - base + lo
                for a in range(n_ag):
                    fresh(tag_[cur, k, a])
                    c = ag_col[a]
                    if c < 0:
                        continue
                    for j in range(length):
                        if ag_set[a, chain[j]] and not ag_nulls[row0 + j, c]:
                            fold(tag_[cur, k, a], ag_vals[row0 + j, c])
        # its held matches, by start (at the start's row: ``lo - base`` shifts a
        # partition index to its row)
        shift = lo - base
        for k in range(fd_off[g], fd_off[g + 1]):
            f_len[fd_start[k] + shift] = fd_len[k]
            f_node[fd_start[k] + shift] = fd_node[k]
        nxt = next0[g]
        resume = resume0[g]
        covered = covered0[g]
        number = number0[g]
        r = new_lo[g]
        while True:
            # one event: a WITHIN deadline (or the input's end) due before the next row,
            # else the next row
            kind = -1
            deadline = -1
            if n_cur > 0:
                deadline = (time[ts_[cur, 0] - base + lo] + within if within >= 0
                            else end_of_time)
                now = time[r] if r < hi else until
                if deadline <= now:
                    if deadline == end_of_time:
                        n_cur = 0
                        kind = BY_END
                    else:
                        before = ts_[cur, 0] - base + lo
                        while before < r and time[before] <= deadline - within:
                            before += 1
                        cut = 0
                        while cut < n_cur and ts_[cur, cut] < before - lo + base:
                            cut += 1
                        drop_first(ts_, tp_, tl_, tn_, tlast_, tag_, cur, cut, n_cur)
                        n_cur -= cut
                        kind = BY_DEADLINE
            if kind < 0:
                if r >= hi:
                    break
                # feed row r: open its start, then move every thread over it
                need = (n_cur + first_stops) * max_clo
                if need > cap:
                    cap = 2 * need
                    ts_, tp_, tl_, tn_, tlast_, tag_ = threads_with_room(
                        ts_, tp_, tl_, tn_, tlast_, tag_, cur, n_cur, cap)
                i = r - lo + base
                if i >= resume:
                    # the partition's first row may pass ``^`` (clo_start)
                    stops = clo_start if i == 0 else clo_pc
                    q0 = 0 if i == 0 else clo_off[0]
                    q1 = len(clo_start) if i == 0 else clo_off[1]
                    for q in range(q0, q1):
                        pc = stops[q]
                        if pmatch[pc]:
                            f_len[i + shift] = 0
                            f_node[i + shift] = -1
                            break
                        ts_[cur, n_cur] = i
                        tp_[cur, n_cur] = pc
                        tl_[cur, n_cur] = 0
                        tn_[cur, n_cur] = -1
                        for x in range(n_vars):
                            tlast_[cur, n_cur, x] = -1
                        for a in range(n_ag):
                            fresh(tag_[cur, n_cur, a])
                        n_cur += 1
                if n_arena + n_cur > len(wa_var):
                    wa_var = grow1(wa_var, n_arena + n_cur)
                    wa_parent = grow1(wa_parent, n_arena + n_cur)
                n_nxt = 0
                ended = -1
                group = -1
                group_at = 0
                for t in range(n_cur):
                    s = ts_[cur, t]
                    if s == ended:
                        continue
                    pc = tp_[cur, t]
                    v = pvar[pc]
                    ok = flags[r, v]
                    if ok:
                        for k in range(res_off[v], res_off[v + 1]):
                            nav = res_nav[k]
                            at = nav_row(nav, v, r, tlast_[cur, t], s - base + lo)
                            if at < 0:
                                ok = False
                                break
                            f = res_field[k]
                            if (res_col_null[at, f] or res_lhs_null[r, k]
                                    or not compare(res_lhs[r, k], res_op[k],
                                                    res_col[at, f])):
                                ok = False
                                break
                    if ok and n_ag:
                        # the aggregates with row r taken as v, and v's conditions on them
                        for a in range(n_ag):
                            nst[a] = tag_[cur, t, a]
                            c = ag_col[a]
                            if c >= 0 and ag_set[a, v] and not ag_nulls[r, c]:
                                fold(nst[a], ag_vals[r, c])
                        for a in range(ag_off[v], ag_off[v + 1]):
                            c = ag_col[a]
                            cnt = nst[a, AG_COUNT]
                            fn = ag_fn[a]
                            if c < 0:
                                value = float(tl_[cur, t] + 1)  # count(*)
                            elif fn == 0:
                                value = cnt
                            elif cnt == 0.0:
                                ok = False  # NULL: no comparison holds
                                break
                            elif fn <= 2:
                                value = nst[a, SUM_HI]
                                if nst[a, AG_INEXACT] != 0.0:
                                    value = chain_sum(tn_[cur, t], tl_[cur, t],
                                                       s - base + lo, c, ag_set[a], pvar,
                                                       wa_var, wa_parent, ag_vals,
                                                       ag_nulls, ag_vals[r, c],
                                                       ag_set[a, v] and not ag_nulls[r, c])
                                if fn == 2:
                                    value = value / cnt
                            elif fn == 3:
                                value = nst[a, AG_MIN]
                            else:
                                value = nst[a, AG_MAX]
                            nav = ag_nav[a]
                            if nav < 0:
                                if ag_rhs_null[r, a]:
                                    ok = False
                                    break
                                other = ag_rhs[r, a]
                            else:
                                at = nav_row(nav, v, r, tlast_[cur, t], s - base + lo)
                                if at < 0 or res_col_null[at, ag_navf[a]]:
                                    ok = False
                                    break
                                other = res_col[at, ag_navf[a]]
                            if not compare(value, ag_op[a], other):
                                ok = False
                                break
                    if not ok:
                        continue
                    node = n_arena
                    wa_var[node] = pc
                    wa_parent[node] = tn_[cur, t]
                    n_arena += 1
                    grown = tl_[cur, t] + 1
                    for q in range(clo_off[pc + 1], clo_off[pc + 2]):
                        npc = clo_pc[q]
                        if pmatch[npc]:
                            f_len[s + shift] = grown
                            f_node[s + shift] = node
                            ended = s
                            break
                        if s != group:
                            group = s
                            group_at = n_nxt
                        same = False
                        for u in range(group_at, n_nxt):
                            if tp_[nx, u] != npc:
                                continue
                            same = True
                            for x in range(n_vars):
                                if reads_last[npc, x]:
                                    mine = tl_[cur, t] if x == v else tlast_[cur, t, x]
                                    if tlast_[nx, u, x] != mine:
                                        same = False
                                        break
                            for a in range(n_ag):
                                if not same:
                                    break
                                if reads_agg[npc, a] and ag_col[a] >= 0:
                                    if nst[a, AG_INEXACT] != 0.0 or tag_[nx, u, a,
                                                                          AG_INEXACT] != 0.0:
                                        same = False
                                    for z in range(AG_INEXACT):
                                        if tag_[nx, u, a, z] != nst[a, z]:
                                            same = False
                            if same:
                                break
                        if same:
                            continue
                        ts_[nx, n_nxt] = s
                        tp_[nx, n_nxt] = npc
                        tl_[nx, n_nxt] = grown
                        tn_[nx, n_nxt] = node
                        for x in range(n_vars):
                            tlast_[nx, n_nxt, x] = tlast_[cur, t, x]
                        tlast_[nx, n_nxt, v] = tl_[cur, t]
                        for a in range(n_ag):
                            tag_[nx, n_nxt, a] = nst[a]
                        n_nxt += 1
                cur, nx = nx, cur
                n_cur = n_nxt
                kind = BY_ROW
                r += 1
            # decide the starts now decided, in start order
            end = r - lo + base
            while True:
                start = max(nxt, resume)
                if start >= end or (n_cur > 0 and ts_[cur, 0] <= start):
                    break
                nxt = start + 1
                length = f_len[start + shift]
                if length < 0:
                    # a start in no match: with ``unmatched`` its row is reported, when
                    # no reported match covered it (length -1, number 0, no labels)
                    if unmatched and start >= covered:
                        m_key[n_matches] = g
                        m_start[n_matches] = start
                        m_len[n_matches] = -1
                        m_number[n_matches] = 0
                        m_kind[n_matches] = kind
                        m_row[n_matches] = r - 1
                        m_deadline[n_matches] = deadline
                        m_lab[n_matches] = n_labels
                        n_matches += 1
                    continue
                f_len[start + shift] = -1
                number += 1
                m_key[n_matches] = g
                m_start[n_matches] = start
                m_len[n_matches] = length
                m_number[n_matches] = number
                m_kind[n_matches] = kind
                m_row[n_matches] = r - 1
                m_deadline[n_matches] = deadline
                m_lab[n_matches] = n_labels
                if n_labels + length > len(labels):
                    labels = grow1(labels, n_labels + length)
                    hidden = grow1(hidden, n_labels + length)
                node = f_node[start + shift]
                for k in range(length - 1, -1, -1):
                    labels[n_labels + k] = pvar[wa_var[node]]
                    hidden[n_labels + k] = pexcl[wa_var[node]]
                    node = wa_parent[node]
                # AFTER MATCH SKIP
                last = start + length - 1
                if length == 0:
                    again = start + 1
                elif skip == 0:
                    again = last + 1
                elif skip == 1:
                    again = start + 1
                elif skip == 2:
                    again = last
                else:
                    again = start
                    for k in range(length):
                        kk = k if skip == 3 else length - 1 - k
                        if skip_set[labels[n_labels + kk]]:
                            again = start + kk
                            break
                    if again <= start:
                        again = start + 1
                n_labels += length
                n_matches += 1
                covered = max(covered, last + 1)
                resume = max(resume, again)
                cut = 0
                while cut < n_cur and ts_[cur, cut] < again:
                    cut += 1
                if cut:
                    drop_first(ts_, tp_, tl_, tn_, tlast_, tag_, cur, cut, n_cur)
                    n_cur -= cut
                for s in range(start + 1, min(again, end)):
                    f_len[s + shift] = -1
        # the key's state after the call
        end = hi - lo + base
        earliest = end
        if n_cur > 0:
            earliest = ts_[cur, 0]
        for k in range(lo, hi):
            if f_len[k] >= 0:
                earliest = min(earliest, k - shift)
                break
        o_keep[g] = max(base, earliest - depth)
        o_next[g] = nxt
        o_resume[g] = resume
        o_covered[g] = covered
        o_number[g] = number
        if n_cur == 0:
            o_deadline[g] = -1
        elif within >= 0:
            o_deadline[g] = time[ts_[cur, 0] - base + lo] + within
        else:
            o_deadline[g] = end_of_time
        # the arena's nodes still reached, renumbered in order (parents come first)
        if n_arena > len(mark):
            mark = grow1(mark, n_arena)
        if n_arena > len(renum):
            renum = grow1(renum, n_arena)
        mark[:n_arena] = False
        for k in range(n_cur):
            node = tn_[cur, k]
            while node >= 0 and not mark[node]:
                mark[node] = True
                node = wa_parent[node]
        for k in range(lo, hi):
            if f_len[k] >= 0:
                node = f_node[k]
                while node >= 0 and not mark[node]:
                    mark[node] = True
                    node = wa_parent[node]
        kept = 0
        a_out = o_ar_off[g]
        if a_out + n_arena > len(o_ar_var):
            o_ar_var = grow1(o_ar_var, a_out + n_arena)
        if a_out + n_arena > len(o_ar_parent):
            o_ar_parent = grow1(o_ar_parent, a_out + n_arena)
        for k in range(n_arena):
            if mark[k]:
                renum[k] = kept
                o_ar_var[a_out + kept] = wa_var[k]
                parent = wa_parent[k]
                o_ar_parent[a_out + kept] = renum[parent] if parent >= 0 else -1
                kept += 1
        o_ar_off[g + 1] = a_out + kept
        t_out = o_th_off[g]
        if t_out + n_cur > len(o_th_start):
            o_th_start = grow1(o_th_start, t_out + n_cur)
        if t_out + n_cur > len(o_th_pc):
            o_th_pc = grow1(o_th_pc, t_out + n_cur)
        if t_out + n_cur > len(o_th_len):
            o_th_len = grow1(o_th_len, t_out + n_cur)
        if t_out + n_cur > len(o_th_node):
            o_th_node = grow1(o_th_node, t_out + n_cur)
        if t_out + n_cur > o_th_last.shape[0]:
            o_th_last = grow2(o_th_last, t_out + n_cur)
        for k in range(n_cur):
            o_th_start[t_out + k] = ts_[cur, k]
            o_th_pc[t_out + k] = tp_[cur, k]
            o_th_len[t_out + k] = tl_[cur, k]
            o_th_node[t_out + k] = renum[tn_[cur, k]] if tn_[cur, k] >= 0 else -1
            for x in range(n_vars):
                o_th_last[t_out + k, x] = tlast_[cur, k, x]
        o_th_off[g + 1] = t_out + n_cur
        f_out = o_fd_off[g]
        for k in range(lo, hi):
            if f_len[k] >= 0:
                if f_out + 1 > len(o_fd_start):
                    o_fd_start = grow1(o_fd_start, f_out + 1)
                    o_fd_len = grow1(o_fd_len, f_out + 1)
                    o_fd_node = grow1(o_fd_node, f_out + 1)
                o_fd_start[f_out] = k - shift
                o_fd_len[f_out] = f_len[k]
                o_fd_node[f_out] = renum[f_node[k]] if f_node[k] >= 0 else -1
                f_out += 1
        o_fd_off[g + 1] = f_out
    m_lab[n_matches] = n_labels
    return (m_key[:n_matches], m_start[:n_matches], m_len[:n_matches],
            m_number[:n_matches], m_kind[:n_matches], m_row[:n_matches],
            m_deadline[:n_matches], m_lab[:n_matches + 1], labels[:n_labels],
            hidden[:n_labels],
            o_th_off, o_th_start[:o_th_off[n_keys]], o_th_pc[:o_th_off[n_keys]],
            o_th_len[:o_th_off[n_keys]], o_th_node[:o_th_off[n_keys]],
            o_th_last[:o_th_off[n_keys]],
            o_fd_off, o_fd_start[:o_fd_off[n_keys]], o_fd_len[:o_fd_off[n_keys]],
            o_fd_node[:o_fd_off[n_keys]],
            o_ar_off, o_ar_var[:o_ar_off[n_keys]], o_ar_parent[:o_ar_off[n_keys]],
            o_next, o_resume, o_number, o_keep, o_deadline, o_covered)
