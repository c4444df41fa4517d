"""The whole machine's busy CPU seconds over time, for the speedup bench's machine bound.

Why: on the emulated cluster (``cep bench --nodes``) the nodes' cgroups say what the
nodes did, but the driver (Python and its JVM), the embedded MongoDB server and Spark's
master share the same cores outside any quota. What a run costs the machine per event
then bounds how far more nodes can raise its rate: no layout of nodes gets more than the
machine's cores out of it (``bench/bench_speedup.py``). The kernel's own counters
(``/proc/stat``) are read, sampled in a thread so that the CPU between two moments the
run reports (its first and its last batch's commit) can be told.

The counters count every process: a figure is the run's only where nothing else ran
beside it (the load averages in each result file say whether something did).
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from pathlib import Path

STAT = Path("/proc/stat")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user, nice, system, irq, softirq, steal (not idle, iowait)


def busy_seconds(stat: Path = STAT) -> float | None:
    """CPU seconds all the machine's cores spent busy since boot (None: no /proc/stat)."""
    try:
        first = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    return sum(values[i] for i in BUSY_FIELDS if i < len(values)) / TICKS


class MachineCpu:
    """Samples :func:`busy_seconds` every ``interval`` seconds while open (``with``);
    :meth:`between` gives the busy seconds between two wall-clock times (``time.time``),
    interpolated between the samples around them."""

    def __init__(self, interval: float = 0.1, stat: Path = STAT) -> None:
        self.interval, self.stat = interval, stat
        self.times: list[float] = []
        self.busy: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="machine-cpu", daemon=True)

    def __enter__(self) -> MachineCpu:
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()

    def _take(self) -> None:
        busy = busy_seconds(self.stat)
        if busy is not None:
            self.times.append(time.time())
            self.busy.append(busy)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def at(self, when: float) -> float | None:
        """Busy seconds since boot at ``when`` (None outside the sampled span)."""
        if len(self.times) < 2 or not self.times[0] <= when <= self.times[-1]:
            return None
        i = max(bisect.bisect_left(self.times, when), 1)
        t0, t1 = self.times[i - 1], self.times[i]
        b0, b1 = self.busy[i - 1], self.busy[i]
        return b0 + (b1 - b0) * ((when - t0) / (t1 - t0) if t1 > t0 else 1.0)

    def between(self, start: float, end: float) -> float | None:
        """The machine's busy CPU seconds from ``start`` to ``end`` (None if unsampled)."""
        a, b = self.at(start), self.at(end)
        return None if a is None or b is None else round(b - a, 3)
