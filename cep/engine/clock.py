"""How event time passes through one batch: the watermark, as the engine sees it.

The watermark is a step function of the input log (``cep.io.event_time`` computes it):
after input event e it is ``wm(e)``, the largest timestamp of the events up to e minus
the rule file's lateness (per Kafka partition, the least of the partitions' largest).
It never goes backwards. A batch sees it as :class:`Watermark`: its value before the
batch and the events of the batch at which it rises, with what it rises to. From that
alone, every runner and every engine derives the same answers:

* an event is *late* when its timestamp is below the watermark just before it;
* an event counts at its *effective time* ``max(ts, wm(e))`` (its own timestamp unless
  it is late, then the watermark: time never runs backwards for a key);
* it is processed (*released*) at the first input event whose watermark reaches its
  effective time: itself, unless a lateness lets it wait for the events it may precede;
* a timer with deadline d fires at the first input event whose watermark reaches d (of
  any key: :meth:`Watermark.reach`), and what it completes carries that event's seq.

At the end of a bounded input the watermark goes to +infinity at ``end_seq``, a place
after every input event (the next segment's start), so every pending timer fires there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cep.engine.table import SEQ, Table
from grammar import ir

#: The watermark before any timestamped event, and the time of events without a
#: timestamp: far below any real time, far enough from int64's end that adding a
#: duration to it never overflows.
NO_TIME = -(1 << 62)
#: The watermark at the end of a bounded input: every deadline is reached.
END_OF_TIME = 1 << 62

_EMPTY = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Watermark:
    """The watermark through one batch.

    ``before``: its value before the batch's first event. ``seq``/``wm``: the events of
    the batch at which it rises (increasing seq) and its value after each (increasing).
    ``final``: the input ends after this batch, at ``end_seq``."""

    before: int = NO_TIME
    seq: np.ndarray = field(default_factory=lambda: _EMPTY)
    wm: np.ndarray = field(default_factory=lambda: _EMPTY)
    final: bool = False
    end_seq: int = 0

    @property
    def end(self) -> int:
        """The watermark once the whole batch has been processed."""
        if self.final:
            return END_OF_TIME
        return int(self.wm[-1]) if len(self.wm) else self.before

    @property
    def last(self) -> int:
        """Its value after the batch's last event (the end of input aside)."""
        return int(self.wm[-1]) if len(self.wm) else self.before

    def after(self, seqs: np.ndarray) -> np.ndarray:
        """The watermark just after each event ``seqs`` (its own timestamp counted)."""
        return self._value(np.searchsorted(self.seq, seqs, side="right"))

    def just_before(self, seqs: np.ndarray) -> np.ndarray:
        """The watermark just before each event ``seqs`` arrives."""
        return self._value(np.searchsorted(self.seq, seqs, side="left"))

    def _value(self, rises: np.ndarray) -> np.ndarray:
        values = np.concatenate(([self.before], self.wm)).astype(np.int64)
        return values[rises]

    def reach(self, deadlines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each deadline, whether the watermark reaches it in this batch, and the
        seq of the first event at which it does (``end_seq`` at the end of input)."""
        deadlines = np.asarray(deadlines, dtype=np.int64)
        at = np.searchsorted(self.wm, deadlines, side="left")
        inside = at < len(self.wm)
        seqs = np.where(inside, self.seq[np.minimum(at, max(len(self.seq) - 1, 0))]
                        if len(self.seq) else 0, self.end_seq)
        due = inside | self.final
        return seqs.astype(np.int64), due

    def reach_one(self, deadline: int) -> int | None:
        """:meth:`reach` of one deadline: the seq, or None when not in this batch."""
        at = int(np.searchsorted(self.wm, deadline, side="left"))
        if at < len(self.wm):
            return int(self.seq[at])
        return self.end_seq if self.final else None

    def plain(self) -> dict:
        """As plain values (what a later stage of an INSERT INTO chain gets on Spark)."""
        return {"before": self.before, "seq": self.seq.tolist(), "wm": self.wm.tolist(),
                "final": self.final, "end_seq": self.end_seq}

    @staticmethod
    def from_plain(values: dict) -> Watermark:
        """:meth:`plain`'s values (read from a file: checked to be what it wrote)."""
        seq = np.asarray(values["seq"], dtype=np.int64)
        wm = np.asarray(values["wm"], dtype=np.int64)
        if seq.ndim != 1 or seq.shape != wm.shape:
            raise ValueError("not a watermark")
        return Watermark(int(values["before"]), seq, wm, bool(values["final"]),
                         int(values["end_seq"]))

    def between(self, lo: int, hi: int, final: bool) -> Watermark:
        """The part of this watermark for events in [lo, hi) (a batch of a batch); the
        end of input only where ``final``."""
        a, b = np.searchsorted(self.seq, [lo, hi], side="left")
        before = int(self.wm[a - 1]) if a else self.before
        return Watermark(before, self.seq[a:b], self.wm[a:b], final and self.final,
                         self.end_seq)


def effective_times(seqs: np.ndarray, times: np.ndarray | None, clock: Watermark
                    ) -> np.ndarray:
    """Each event's effective time: its timestamp, or the watermark just after it when
    that is later (a late event, or one without a timestamp, counts at the watermark)."""
    after = clock.after(seqs)
    return after if times is None else np.maximum(times, after)


def release_seqs(seqs: np.ndarray, eff: np.ndarray, clock: Watermark
                 ) -> tuple[np.ndarray, np.ndarray]:
    """For each event, the seq at which it is processed (the first event whose watermark
    reaches its effective time: itself unless a lateness makes it wait) and whether that
    falls in this batch (else the event waits in the engine's state)."""
    ready = eff <= clock.after(seqs)
    later, due = clock.reach(eff)
    return np.where(ready, seqs, later), ready | due


def late_mask(seqs: np.ndarray, times: np.ndarray, clock: Watermark) -> np.ndarray:
    """Which events are late: a timestamp below the watermark just before it arrives."""
    return times < clock.just_before(seqs)


def timed_events(module: ir.CompiledModule, inputs: dict[str, Table]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The seq and timestamp of the input events of streams with a TIMESTAMP, the events
    that may be late (the reference's and the Spark engines' late events alike)."""
    seqs, times = [], []
    for name in module.input_streams:
        table, ts = inputs.get(name), module.streams[name].timestamp
        if table and ts is not None and len(table[SEQ]):
            seqs.append(table[SEQ])
            times.append(table[ts])
    if not seqs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(seqs).astype(np.int64), np.concatenate(times).astype(np.int64)
