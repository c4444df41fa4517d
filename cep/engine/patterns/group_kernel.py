"""Compiled walk of ``every (a -> b [-> c ...]) [WITHIN T]`` over a batch's sorted rows.

``every`` over a followed-by restarts its operand only when the running instance ends,
so one instance runs per key at a time and each key is a short sequential scan: the
step reached, the first bound event's time and the rows bound per slot. Steps may be
``or``s of atoms (several slots per step). One function for every such rule
(``cache=True``: no code is compiled per rule or per batch), imported only by the rules
that use it. The semantics are :mod:`cep.engine.patterns.interpreter`' (see
:mod:`cep.engine.patterns.group_rule`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def scan_group(starts: np.ndarray, ends: np.ndarray, held: np.ndarray, masks: np.ndarray,
               slot_step: np.ndarray, all_of: np.ndarray, n_steps: int, times: np.ndarray,
               step0: np.ndarray, first0: np.ndarray, bound0: np.ndarray, base: int,
               within: int, once: bool):  # pragma: no cover - compiled
    """Walk key g's rows ``starts[g]:ends[g]`` from its state (state row ``held[g]``,
    -1 for none: waiting for the first step), event by event:

    * an instance holding events whose first is ``within`` or more before the event is
      discarded first, and a fresh one sees the event (``within`` < 0: no WITHIN);
    * the event binds the instance's current step if one of that step's slots takes it
      (``masks[slot, row]``; the leftmost such slot, as row ``base + row``; in an
      ``and`` step (``all_of[step]``) the leftmost such slot not bound yet), which
      ends when one slot is bound (``or``) or all are (``and``);
    * ending the last step completes the instance; the next starts after the event.

    With ``once`` (a pattern without ``every``) there is no next instance: a key whose
    instance completed or was discarded is done for good (step -1), its rows skipped.

    Returns per match (at most one per row): its key's g, trigger row and bound rows
    [matches, slots]; and per key its step, first bound event's time and bound rows
    after the batch."""
    n_keys = len(starts)
    n_slots = len(slot_step)
    cap = 0
    for g in range(n_keys):
        cap += ends[g] - starts[g]
    m_key = np.empty(cap, np.int64)
    m_trigger = np.empty(cap, np.int64)
    m_bound = np.full((cap, n_slots), -1, np.int64)
    step = np.zeros(n_keys, np.int64)
    first = np.zeros(n_keys, np.int64)
    bound = np.full((n_keys, n_slots), -1, np.int64)
    found = 0
    for g in range(n_keys):
        s = 0
        f = 0
        nb = 0  # events the instance holds
        p = held[g]
        if p >= 0:
            s = step0[p]
            f = first0[p]
            for j in range(n_slots):
                bound[g, j] = bound0[p, j]
                if bound0[p, j] >= 0:
                    nb += 1
        for r in range(starts[g], ends[g]):
            if s < 0:
                break
            if nb > 0 and within >= 0 and times[r] - f >= within:
                s = -1 if once else 0
                nb = 0
                for j in range(n_slots):
                    bound[g, j] = -1
                if once:
                    break
            taken = -1
            for j in range(n_slots):
                if slot_step[j] == s and masks[j, r] and bound[g, j] < 0:
                    taken = j
                    break
            if taken < 0:
                continue
            bound[g, taken] = base + r
            if nb == 0:
                f = times[r]
            nb += 1
            if all_of[s]:
                ended = True
                for j in range(n_slots):
                    if slot_step[j] == s and bound[g, j] < 0:
                        ended = False
                if not ended:
                    continue
            s += 1
            if s == n_steps:
                m_key[found] = g
                m_trigger[found] = r
                for j in range(n_slots):
                    m_bound[found, j] = bound[g, j]
                    bound[g, j] = -1
                found += 1
                s = -1 if once else 0
                nb = 0
        step[g] = s
        first[g] = f
    return m_key[:found], m_trigger[:found], m_bound[:found], step, first, bound
