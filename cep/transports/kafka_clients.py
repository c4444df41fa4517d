"""Kafka clients kept across calls in one process, keyed by address and settings: the
planner's admin client.

Why: making a librdkafka client costs a connection and a metadata request, and the
planner made two admin clients on every trigger to plan a batch (``partition_ends``).
Spark runs a Python Data Source's planning in one long-lived process, so a client kept
in a module-level pool serves every later trigger there, as Spark's own Kafka connector
keeps its consumers (``spark.kafka.consumer.cache.*``).

Measured gain: the planner's look at a topic took 2.8 ms with new clients and 0.9 ms
with the kept one (``bench/results/kafka_stages.json``, embedded broker on loopback, load
3.9); no change in the whole run's latency could be told from noise at 50,000 or 100,000
events/s (``latency-kafka-kept-clients.json``). It stays for what it spares a real
cluster: two connections and metadata requests per trigger, 20 a second at the default
0.1 s trigger, each a round trip over the network there.

The range reader's consumers are not kept. On the embedded broker over loopback a new
consumer's first record came in 3-4 ms (``bench/bench_kafka_stages.py``), so there was
little to save, and the one whole run with consumers kept in Spark's reused Python
workers (``bench/latency_ab.py``, round r0 of ``latency-kafka-kept-clients.json``) was
slower, not faster: the input tasks' read 1.14 s per batch where the tree before took
0.13 s, p50 4.28 s against 1.17 s at 50,000 events/s. The tree before reached the same
1.14 s in the next round at 100,000 events/s on the loaded machine, so that run does
not pin the slowdown on the kept consumers either; with nothing measured in their
favour, a consumer stays made per read. ``lend`` is generic: a kind of client is kept
where a bench shows the gain.

Safety (what a kept client must not change):

* A client is lent to one caller at a time (:func:`lend`); concurrent callers get
  clients of their own, and at most :data:`IDLE_PER_KEY` wait per key, the rest closed.
* A call that raises drops the client it used (closed, never lent again): a client
  that went bad (a broker gone, a time-out) is rebuilt by the next call, which
  bootstraps anew. A broker restart on another port is another key; keys unused beyond
  :data:`MAX_KEYS` are closed, least recently used first.
* A client made before a ``fork`` is never used in the child (librdkafka's threads do
  not cross a fork): the pool belongs to the process that filled it, and a forked child
  starts an empty one (the inherited clients are left alone, neither closed nor
  destroyed: either would wait for threads the child does not have).
* An admin client holds no position: each call asks the brokers anew.

The transactional producer is not pooled here: the driver's
``TransactionalBatchWriter`` already lives across batches, with its fencing.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from cep.transports.address import KafkaAddress

IDLE_PER_KEY = 2
MAX_KEYS = 8
_LOG = logging.getLogger("cep.kafka")

Key = tuple[str, str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


class Lent:
    """A pooled client and the process that made it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.pid = os.getpid()


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: OrderedDict[Key, list[Lent]] = OrderedDict()
        self.pid = os.getpid()
        self.enabled = True
        self.made = 0  # clients made by this pool (tests and benches read it)
        # a forked child's inherited clients: kept referenced, because destroying one
        # (its destructor joins librdkafka's threads, which did not cross the fork) hangs
        self.orphans: list[list[Lent]] = []

    def take(self, key: Key) -> Lent | None:
        with self.lock:
            self._after_fork()
            if not self.enabled:
                return None
            waiting = self.idle.get(key)
            if not waiting:
                return None
            self.idle.move_to_end(key)
            return waiting.pop()

    def give(self, key: Key, lent: Lent) -> None:
        closing: list[Lent] = []
        with self.lock:
            self._after_fork()
            if not self.enabled or lent.pid != self.pid:
                closing.append(lent)  # made for one call
            else:
                waiting = self.idle.setdefault(key, [])
                self.idle.move_to_end(key)
                waiting.append(lent)
                closing.extend(waiting[:-IDLE_PER_KEY])
                del waiting[:-IDLE_PER_KEY]
                while len(self.idle) > MAX_KEYS:
                    _old, dropped = self.idle.popitem(last=False)
                    closing.extend(dropped)
        for old in closing:
            _close(old)

    def clear(self) -> None:
        with self.lock:
            self._after_fork()
            closing = [lent for waiting in self.idle.values() for lent in waiting]
            self.idle.clear()
        for lent in closing:
            _close(lent)

    def _after_fork(self) -> None:
        if self.pid != os.getpid():  # a forked child: the parent's clients are not ours
            self.orphans.extend(self.idle.values())
            self.idle = OrderedDict()
            self.pid = os.getpid()


_POOL = _Pool()
atexit.register(lambda: _POOL.clear())  # a process that exits closes what it kept


def key_of(kind: str, address: KafkaAddress, settings: dict[str, Any]) -> Key:
    """What makes two clients interchangeable: kind, bootstrap, the address's options and
    the caller's settings (callables, which each client gets its own of, left out)."""
    return (kind, address.bootstrap,
            tuple(sorted((str(k), str(v)) for k, v in address.options.items())),
            tuple(sorted((str(k), repr(v)) for k, v in settings.items() if not callable(v))))


@contextlib.contextmanager
def lend(kind: str, address: KafkaAddress, settings: dict[str, Any],
         make: Callable[[dict[str, Any]], Any]) -> Iterator[Lent]:
    """A client of ``kind`` for ``address`` with ``settings``: a kept one if one waits,
    else ``make(config)``. It goes back to the pool when the block ends normally, and is
    closed when the block raises."""
    key = key_of(kind, address, settings)
    lent = _POOL.take(key)
    if lent is None:
        lent = Lent(make(address.client_config(**settings)))
        _POOL.made += 1
    try:
        yield lent
    except BaseException:
        _close(lent)
        raise
    _POOL.give(key, lent)


def _close(lent: Lent) -> None:
    if lent.pid != os.getpid():  # made before a fork: its threads live in the parent
        _POOL.orphans.append([lent])
        return
    close = getattr(lent.client, "close", None)
    if close is None:  # an AdminClient has no close(): dropping it destroys it
        return
    try:
        close()
    except Exception as exc:  # a client that went bad may fail to close; it is dropped
        _LOG.debug("closing a Kafka client: %s", exc)


def made() -> int:
    """How many clients this process's pool has made (for tests and benches)."""
    return _POOL.made


def close_all() -> None:
    """Close every kept client (a process about to exit, a test that restarts brokers)."""
    _POOL.clear()


@contextlib.contextmanager
def kept(on: bool = True) -> Iterator[None]:
    """Within the block, keep clients across calls (``on``) or make one per call, as
    before the pool (benches compare both). Clients kept before the block wait, unused,
    until it ends."""
    with _POOL.lock:
        was, _POOL.enabled = _POOL.enabled, on
    try:
        yield
    finally:
        with _POOL.lock:
            _POOL.enabled = was
