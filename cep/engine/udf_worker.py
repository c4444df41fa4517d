"""The worker process of isolated user functions (``cep.engine.udf_isolation``): it
imports the functions a job calls and answers (function, arguments) requests from its
parent on a pipe, ticking a counter in a page of memory the parent watches, so that a
call that hangs or ends this process costs the parent one record, not the job.
Started by the parent as ``python -c`` of :func:`child_main`; split from the parent's
side, which never imports it.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import struct
import sys
import threading
import time
from typing import Any

import numpy as np

from cep.engine.table import DTYPES
from cep.engine.udf_isolation import BETWEEN, CHUNK_SHARE, LOADING, MAX_CHUNK, Target


def child_main() -> None:
    """The worker: answer (target, args) requests on standard input until it closes."""
    requests = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    answers = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # a function's print goes to standard error, not down the pipe
    shared = int(os.environ.pop("CEP_UDF_CELLS_FD"))
    memory = mmap.mmap(shared, mmap.PAGESIZE)
    cells = (ctypes.c_int64 * 3).from_buffer(memory)
    parent = os.getppid()

    def watch() -> None:  # a parent gone (kill -9): end, even with a call hung
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    loaded: dict[Target, Any] = {}
    while True:
        head = requests.read(8)
        if len(head) < 8:
            return
        (size,) = struct.unpack("<Q", head)
        target, args, limit, single = pickle.loads(requests.read(size))
        function = loaded.get(target)
        if function is None:
            cells[1] = LOADING
            try:
                function = _load(target, cells)
            except Exception as err:  # the user's module, in this process
                cells[1] = BETWEEN
                _send(answers, ("unavailable", f"{type(err).__name__}: {err}"))
                continue
            loaded[target] = function
            cells[0] += 1
            cells[1] = BETWEEN
        _send(answers, ("ok", *_evaluate(function, target, args, cells, limit, single)))


def _send(answers: Any, message: tuple) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    answers.write(struct.pack("<Q", len(payload)))
    answers.write(payload)
    answers.flush()


def _load(target: Target, cells: Any) -> Any:
    """The function of ``target`` in this process, as a UserFunction whose calls tick
    the shared counter."""
    import importlib
    import importlib.util

    from cep.engine.functions import FUNCTIONS, UserFunction, _user_impl

    if target.root is not None and target.root not in sys.path:
        sys.path.insert(0, target.root)
    if target.module in sys.modules:
        module = sys.modules[target.module]
    elif target.file is not None:  # as cep.engine.udf.files loaded it in the parent
        spec = importlib.util.spec_from_file_location(target.module, target.file)
        assert spec is not None and spec.loader is not None  # a .py file has one
        module = importlib.util.module_from_spec(spec)
        sys.modules[target.module] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target.module)
    fn = module
    for part in target.qualname.split("."):
        fn = getattr(fn, part, None) if not part.startswith("<") else None
        if fn is None:
            break
    if not callable(fn):
        registered = FUNCTIONS.get(target.name)
        if not isinstance(registered, UserFunction):
            raise LookupError(f"{target.qualname!r} is not a name of module "
                              f"{target.module!r}, and importing it did not register "
                              f"{target.name}()")
        fn = registered.fn
    user = fn

    def ticking(*values: Any) -> Any:  # a vectorised function's call: one per batch
        cells[0] += 1
        return user(*values)

    called = ticking if target.vectorized else user  # a scalar one's chunks tick
    impl = _user_impl(called, list(target.arg_types), target.returns, target.vectorized)
    return UserFunction(target.name, len(target.arg_types), len(target.arg_types),
                        target.returns, impl, called, target.arg_types, target.returns,
                        target.vectorized)


def _evaluate(function: Any, target: Target, args: tuple[Any, ...], cells: Any,
              limit: float, single: bool
              ) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """What ``UserFunction.call`` gives. A scalar function over arrays is called in
    chunks of rows (``np.frompyfunc``, value by value where one raised), each chunk
    written in the cells and ticked before it runs: a chunk grows while it takes a small
    share of the limit, so the ticks come about as often as with a tick per call, at a
    fraction of the cost, and a hung or dead call is known to be in its chunk."""
    n = next((len(a) for a in args if isinstance(a, np.ndarray) and a.ndim), None)
    if target.vectorized or n is None:
        with np.errstate(all="ignore"):
            cells[0] += 1  # a scalar function on constants: its one call
            return function.call(*args)
    out = np.empty(n, dtype=DTYPES[function.returns])
    failures: dict[int, str] = {}
    size, start, budget = 1, 0, limit / CHUNK_SHARE
    while start < n:
        stop = min(n, start + size)
        cells[1], cells[2] = start, stop
        cells[0] += 1
        began = time.perf_counter()
        part = tuple(a[start:stop] if isinstance(a, np.ndarray) and a.ndim else a
                     for a in args)
        try:
            out[start:stop] = function.impl(*part)
        except Exception:  # the user's code: the values that raise, value by value
            found: dict[int, str] = {}
            out[start:stop] = function._one_by_one(part, found)
            failures.update((start + i, message) for i, message in found.items())
        if not single:
            took = time.perf_counter() - began
            size = min(size * 2, MAX_CHUNK) if took < budget else max(1, size // 2)
        start = stop
    cells[1] = BETWEEN
    if not failures:
        return out, None, []
    failed = np.zeros(n, dtype=bool)
    failed[list(failures)] = True
    return out, failed, [failures[i] for i in sorted(failures)]
