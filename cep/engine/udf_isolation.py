"""User functions called outside the job's process, with a time limit per call: a
function that hangs, or that ends its own process (``os._exit``, a segfault in an
extension), costs the records it was called on (dead letters, ``udf_error``), never
the run.

Measured cost (bench/bench_udf.py: 1M events, one stateless rule each, 5 interleaved
rounds of whole processes isolated / in-process (``--udf-timeout 0``), the best of each;
2 CPUs shared with other jobs, load average 10.8 at the start and 6.8 at the end;
bench/results/udf.json): the function's own call over 1M values took 0.162 s isolated
against 0.157 s in-process for a cheap scalar function (1.03x), and 0.033 s against
0.001 s for a vectorised one (+32 ms: the arguments and results pickled through the
pipe, about 32 ns a value); raising on 22 records, 0.322 against 0.385 s (scalar) and
0.075 against 0.031 s (vectorised). A round-trip for one value costs about 0.16 ms
(median of 200, same load). Whole rules moved by no more than the noise at that load:
the control row without a user function came out 0.85x, the scalar rule 0.69x, the
vectorised 0.80x, in batches of 10,000 events 1.17x. A tick per call, tried first, made
the cheap scalar call 2.4x; hence the chunks below.

Design (and why)
    * **A child worker process per Python process** (the driver of a local run, each
      Spark Python worker), started lazily at the first call of an isolated function:
      ``python -c`` of :func:`cep.engine.udf_worker.child_main` through ``subprocess``
      with two pipes. Not ``fork``: the parent holds threads (Spark's, py4j's) and the
      job's state, and a forked copy of either is not safe. Not ``multiprocessing``: its ``spawn``
      re-imports the parent's ``__main__`` (pytest, a user's script, PySpark's
      worker), and a plain child is simpler to kill and to read an exit status from.
      The child gets the parent's ``sys.path`` (so the code archive and the files
      Spark shipped are found) and each function's place (for a file Spark ships after
      the child started: a later run's, a deployed change's), imports each function's
      module the first time it is asked for it (a ``--udf`` file by its path, under the
      module name the parent gave it; any other module by name), and never unpickles
      anything but what its parent sends it down the pipe. Its standard output goes
      to standard error, so a function's ``print`` cannot garble the pipe; it ends
      when the pipe closes or its parent is gone (a kill -9 of the job's process group
      kills it too).
    * **A batch of calls per round-trip**: the expression evaluator already calls a
      function once per batch's values (``cep.engine.expr``); the child gets the
      argument arrays, evaluates them as the job's process did before (the same
      ``UserFunction``: a raising value is caught there, a vectorised function split
      into halves), and sends back the values, the failed mask and the messages.
      Pickling a batch both ways is the price of isolation; a round-trip per value
      would be far more.
    * **The time limit is per call of the user's function**: the child ticks a counter
      in a page of shared memory (an unlinked file both map) at each call of a
      vectorised function, and at each chunk of calls of a scalar one, writing the
      chunk's rows there too. A chunk starts at one row and doubles while it takes
      less than 1/50 of the limit (halves when it takes more), so the ticks come at
      least about as often as the calls would for any function near the limit, while
      a cheap function pays one tick per many calls (a tick per call doubled a cheap
      function's cost). The parent waits for the answer while the counter moves; a
      call (or chunk) that has not returned ``timeout`` seconds after the counter last
      moved is a hang (seen between 1 and 1.25 times the limit). A vectorised
      function's call covers its batch's values. Importing a function's module in the
      child (and the child's own start) has a limit of its own
      (:data:`IMPORT_LIMIT`), and a module that cannot be imported there, or that
      ends the child on import, stops the run in one line (the job's own process
      imported it: that is not a record's fault).
    * **Finding the record**: when the child hangs or dies, it is killed (SIGKILL) and
      the next call starts a new one. For a scalar function, the chunk it was on holds
      the culprit: the rows before and after the chunk are asked again as before, and
      the chunk's rows a row per chunk, so the culprit is found on the second
      misbehaviour (two limits for a hang; a chunk of one row needs no second). For a
      vectorised function, the batch is bisected (halves asked again, recursively)
      down to the values that hang or kill alone: k bad values in n cost about
      2·k·log2(n) round-trips, each bad probe a limit or a restart. Every other value
      gets its result. A value that hung or killed is remembered for the process (per
      function and arguments), so a rule that evaluates it again in a later batch (a
      window's rows, a filter and a SELECT) fails it at once.
    * **Reasons**: ``f() timed out after 5s`` and ``f() ended its process (exit code
      1)`` / ``(signal 11, SIGSEGV)``, as a raising function's ``f() raised ...``
      (``cep.engine.udf_errors.reason``).
    * **What stays in the job's process**: a function the child cannot find again
      (defined in ``__main__``, in a function's body: a closure, a lambda made in a
      function), which Spark's workers refuse anyway, and every function when the
      limit is 0 (``--udf-timeout 0``: no isolation, the fastest, and a hang or an
      exit stops the run as before).
    * **Exactness**: kill -9 and restart replay batches in new processes: the child,
      its memory of bad values and the dead letters already written are handled as a
      raising function's (``cep.spark.output.udf_seen``). A time limit is wall-clock time: a
      call near the limit on a loaded machine may time out in one run and not in
      another; the default leaves a wide margin.

The limit is process-wide (:func:`configure`): the local runner sets it for its run,
and a Spark task sets it from its ``UdfShipment`` (``cep.engine.udf.shipment``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import mmap
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cep.engine.table import DTYPES, PLACEHOLDERS

if TYPE_CHECKING:
    from cep.engine.functions import UserFunction

#: Seconds one call of a user function may take (``--udf-timeout``, ``RunConfig``).
DEFAULT_TIMEOUT = 10.0
#: Seconds the child may take to import a function's module (loading a model, say).
IMPORT_LIMIT = 300.0
#: Values remembered per function as hanging or ending the process.
REMEMBERED = 10_000

TIMED_OUT = "timed out after"
ENDED = "ended its process"

_timeout = DEFAULT_TIMEOUT


class UdfIsolationError(Exception):
    """The child cannot run a function the job's process has (one line)."""


def configure(timeout: float | None) -> None:
    """Set this process's limit per call (seconds; 0: call functions in-process)."""
    global _timeout
    if timeout is not None:
        if timeout < 0:
            raise ValueError(f"the user function time-out must be >= 0, got {timeout}")
        _timeout = float(timeout)


def timeout() -> float:
    return _timeout


@contextlib.contextmanager
def configured(limit: float | None) -> Iterator[None]:
    """The limit ``limit`` while the block runs (a local run's)."""
    before = _timeout
    configure(limit)
    try:
        yield
    finally:
        configure(before)


# ------------------------------------------------------------------ which functions


@dataclass(frozen=True)
class Target:
    """A function as the child finds it again: its module (and that module's file when
    it is a single-file module, as ``--udf`` files are), its qualified name, and its
    signature."""

    name: str
    module: str
    file: str | None
    root: str | None  # where its top-level package was found (on the child's sys.path)
    qualname: str
    arg_types: tuple[str, ...]
    returns: str
    vectorized: bool


_TARGETS: dict[int, tuple[Any, Target | None]] = {}


def target_of(spec: UserFunction) -> Target | None:
    """Where the child finds ``spec``'s function, or None (it runs in-process)."""
    known = _TARGETS.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    fn = spec.fn
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", "") or ""
    found: Target | None = None
    loaded = sys.modules.get(module) if module else None
    if loaded is not None and module != "__main__" and "<locals>" not in qualname:
        file = getattr(loaded, "__file__", None)
        single = "." not in module and not hasattr(loaded, "__path__") and file
        found = Target(spec.name, module, str(file) if single else None,
                       _root(module), qualname, spec.arg_types, spec.returns,
                       spec.vectorized)
    _TARGETS[id(spec)] = (spec, found)
    return found


def _root(module: str) -> str | None:
    """The ``sys.path`` entry ``module``'s top-level package was imported from (a
    directory, or a zip Spark shipped after the child started), or None."""
    top = sys.modules.get(module.split(".")[0])
    places = list(getattr(top, "__path__", []))
    origin = places[0] if places else getattr(top, "__file__", None)
    return os.path.dirname(origin) if origin else None


# ------------------------------------------------------------------ the parent's side


class _Hung(Exception):
    def __init__(self, seconds: float, loading: bool, span: tuple[int, int]) -> None:
        super().__init__(seconds)
        self.seconds, self.loading, self.span = seconds, loading, span


class _Died(Exception):
    def __init__(self, status: int | None, loading: bool, span: tuple[int, int]) -> None:
        super().__init__(status)
        self.status, self.loading, self.span = status, loading, span


# the cells: a counter the child ticks at each call (of a vectorised function) or chunk
# of calls (of a scalar one), and the rows [start, stop) of the chunk it is on; start
# may instead be one of these
LOADING = -1  # the child starts or imports a module
BETWEEN = -2  # not in a scalar function's chunk
#: A scalar function's chunks grow (doubling, up to MAX_CHUNK rows) while one takes
#: less than the limit / CHUNK_SHARE, and shrink when one takes more.
CHUNK_SHARE = 50
MAX_CHUNK = 1 << 16


class _Child:
    """One worker process, its pipes and its shared cells (calls, row)."""

    def __init__(self) -> None:
        self.shared = tempfile.TemporaryFile()  # noqa: SIM115 (the child's lifetime)
        self.shared.truncate(mmap.PAGESIZE)
        self.memory = mmap.mmap(self.shared.fileno(), mmap.PAGESIZE)
        self.cells = (ctypes.c_int64 * 3).from_buffer(self.memory)
        self.cells[1] = LOADING  # starting: Python and numpy, then the first module
        self.fresh = True
        path = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
        env = {**os.environ, "PYTHONPATH": path, "CEP_UDF_CELLS_FD":
               str(self.shared.fileno())}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from cep.engine.udf_worker import child_main; "
             "child_main()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            pass_fds=(self.shared.fileno(),), close_fds=True)
        self.pid = os.getpid()

    def ask(self, target: Target, args: tuple[Any, ...], limit: float,
            single: bool) -> tuple:
        """The child's answer for ``target`` over ``args`` (``single``: a scalar
        function's chunks one row each); raises _Hung or _Died."""
        if not self.fresh:
            self.cells[1] = BETWEEN
        self.fresh = False
        payload = pickle.dumps((target, args, limit, single),
                               protocol=pickle.HIGHEST_PROTOCOL)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(struct.pack("<Q", len(payload)))
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._dead() from None
        fd = self.proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        calls, moved = self.cells[0], time.monotonic()
        while True:
            loading = self.cells[1] == LOADING
            allowed = IMPORT_LIMIT if loading else limit
            if poller.poll(max(1, int(limit * 250))):  # a quarter of a call's limit, ms
                break
            now = time.monotonic()
            if self.cells[0] != calls:
                calls, moved = self.cells[0], now
            elif now - moved >= allowed:
                span = self.span()
                self.kill()
                raise _Hung(allowed, loading, span)
        head = self.proc.stdout.read(8)
        if len(head) < 8:
            raise self._dead()
        (size,) = struct.unpack("<Q", head)
        body = self.proc.stdout.read(size)
        if len(body) < size:
            raise self._dead()
        return pickle.loads(body)

    def span(self) -> tuple[int, int]:
        """The rows [start, stop) of the scalar function's chunk the child is on (start
        LOADING or BETWEEN: none)."""
        return int(self.cells[1]), int(self.cells[2])

    def _dead(self) -> _Died:
        span = self.span()
        self.kill()
        return _Died(self.proc.returncode, span[0] == LOADING, span)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def close(self) -> None:
        if self.pid == os.getpid():
            self.kill()


_child: _Child | None = None
_lock = threading.Lock()
_BAD: dict[Target, dict[tuple, str]] = {}  # values that hung or killed, per function


def _ask(target: Target, args: tuple[Any, ...], limit: float, single: bool = False
         ) -> tuple:
    global _child
    if _child is None or not _child.alive():
        if _child is not None:
            _child.close()
        _child = _Child()
    child = _child
    try:
        answer = child.ask(target, args, limit, single)
    except (_Hung, _Died):
        _child = None
        raise
    if answer[0] == "unavailable":
        raise UdfIsolationError(f"function {target.name}(): {answer[1]}")
    return answer


@atexit.register
def _close_child() -> None:
    if _child is not None:
        _child.close()


def _ended(status: int | None) -> str:
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "unknown"
        return f"{ENDED} (signal {-status}, {name})"
    return f"{ENDED} (exit code {status})"


def call(spec: UserFunction, args: tuple[Any, ...]
         ) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """``spec.call(*args)``, run in the child under the time limit when the function
    can run there (in-process otherwise): the values, a mask of the failed positions
    (None: none) and their messages, in order; a value on which the function hung or
    ended its process is failed with that reason."""
    limit = _timeout
    target = target_of(spec) if limit > 0 else None
    if target is None:
        return spec.call(*args)
    n = next((len(a) for a in args if isinstance(a, np.ndarray) and a.ndim), None)
    with _lock:
        if n is None:  # constant arguments: one value for every row
            out, failed, messages = _solve_constant(spec, target, args, limit)
            if failed is None:
                return out, None, []
            return out.reshape(()), np.ones((), dtype=bool), messages
        return _solve(spec, target, args, n, limit)


def _rows(args: tuple[Any, ...], n: int) -> list[tuple]:
    columns = [a.tolist() if isinstance(a, np.ndarray) and a.ndim else [a] * n
               for a in args]
    return list(zip(*columns, strict=True))


def _solve(spec: UserFunction, target: Target, args: tuple[Any, ...], n: int,
           limit: float) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    dtype = DTYPES[spec.returns]
    out = np.full(n, PLACEHOLDERS[spec.returns], dtype=dtype)
    failures: dict[int, str] = {}
    todo = np.arange(n)
    bad = _BAD.get(target)
    if bad:
        rows = _rows(args, n)
        known = [i for i, row in enumerate(rows) if row in bad]
        for i in known:
            failures[i] = bad[rows[i]]
        todo = np.setdiff1d(todo, known)
    _fill(spec, target, args, todo, limit, out, failures)
    if not failures:
        return out, None, []
    failed = np.zeros(n, dtype=bool)
    failed[list(failures)] = True
    return out, failed, [failures[i] for i in sorted(failures)]


def _take(args: tuple[Any, ...], rows: np.ndarray | None) -> tuple[Any, ...]:
    if rows is None:
        return args
    return tuple(a[rows] if isinstance(a, np.ndarray) and a.ndim else a for a in args)


def _fill(spec: UserFunction, target: Target, args: tuple[Any, ...], rows: np.ndarray,
          limit: float, out: np.ndarray, failures: dict[int, str],
          single: bool = False) -> None:
    """Fill ``out[rows]`` (and ``failures``), narrowing down where the child hangs or
    dies: to the chunk a scalar function was on (asked again a row per chunk), or by
    halves (a vectorised function)."""
    if not len(rows):
        return
    try:
        _, values, failed, messages = _ask(target, _take(args, rows), limit, single)
    except _Hung as hung:
        reason, (start, stop) = f"{TIMED_OUT} {hung.seconds:g}s", hung.span
        if hung.loading:
            raise _not_started(target, reason) from None
    except _Died as died:
        reason, (start, stop) = _ended(died.status), died.span
        if died.loading:
            raise _not_started(target, reason) from None
    else:
        out[rows] = values
        if failed is not None:
            for i, message in zip(rows[failed].tolist(), messages, strict=True):
                failures[i] = message
        return
    if len(rows) == 1 or (not target.vectorized and start >= 0 and stop - start == 1):
        culprit = 0 if len(rows) == 1 else start
        failures[int(rows[culprit])] = reason
        _remember(target, _rows(_take(args, rows[culprit:culprit + 1]), 1)[0], reason)
        _fill(spec, target, args, rows[:culprit], limit, out, failures)
        _fill(spec, target, args, rows[culprit + 1:], limit, out, failures)
    elif not target.vectorized and 0 <= start < stop <= len(rows):
        _fill(spec, target, args, rows[:start], limit, out, failures)
        _fill(spec, target, args, rows[start:stop], limit, out, failures, single=True)
        _fill(spec, target, args, rows[stop:], limit, out, failures)
    else:
        mid = len(rows) // 2
        _fill(spec, target, args, rows[:mid], limit, out, failures)
        _fill(spec, target, args, rows[mid:], limit, out, failures)


def _solve_constant(spec: UserFunction, target: Target, args: tuple[Any, ...],
                    limit: float) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """Constant arguments: one call, failed as a whole."""
    bad = _BAD.get(target, {})
    key = tuple(args)
    if key in bad:
        return (np.array(PLACEHOLDERS[spec.returns], dtype=DTYPES[spec.returns]),
                np.ones((), dtype=bool), [bad[key]])
    try:
        _, values, failed, messages = _ask(target, args, limit)
        return values, failed, messages
    except (_Hung, _Died) as err:
        reason = (f"{TIMED_OUT} {err.seconds:g}s" if isinstance(err, _Hung)
                  else _ended(err.status))
        if err.loading:
            raise _not_started(target, reason) from None
        _remember(target, key, reason)
        return (np.array(PLACEHOLDERS[spec.returns], dtype=DTYPES[spec.returns]),
                np.ones((), dtype=bool), [reason])


def _not_started(target: Target, reason: str) -> UdfIsolationError:
    """The child could not start or import ``target``'s module: the run stops (the
    job's own process imported it, so no record is at fault)."""
    return UdfIsolationError(f"function {target.name}(): starting the isolated worker "
                             f"and importing its module {target.module!r} there {reason}")


def _remember(target: Target, row: tuple, reason: str) -> None:
    bad = _BAD.setdefault(target, {})
    if len(bad) < REMEMBERED:
        bad[row] = reason
