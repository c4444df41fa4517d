"""Scalar functions callable from rules: built-ins, the text UDFs and user UDFs.

The language knows each function's name, arity and typing rule (its signature,
:mod:`grammar.signatures`), which the checker uses; this module pairs each signature with
the vectorised ``impl`` the expression compiler calls at run time (:func:`lookup`).

Calling convention (what ``impl`` may assume)
    * Arguments are equal-length 1-D numpy arrays in the engine's representation
      (int/long/timestamp → int64, double → float64, boolean → bool, string → object of
      ``str``), or plain Python scalars for constant arguments.
    * Nulls never reach ``impl``: the compiler masks them (null in → null out). The
      slots behind a mask hold placeholders (0, 0.0, False, ""), so every function
      accepts any value of its argument types without raising.
    * The result is a numpy array of the result type's dtype, as long as the array
      arguments; if every argument is a scalar it is a 0-d array (it broadcasts).

Semantics chosen (and why)
    * ``substr(s, start[, len])``: 1-based; the characters at positions
      ``[start, start + len)`` that exist (PostgreSQL's rule, so ``substr('hello', 0, 3)``
      is ``'he'``); a negative ``len`` gives ``''`` rather than an error, because a
      placeholder must not fail a batch.
    * ``round(x[, d])``: half away from zero at ``d`` decimal digits (SQL ``ROUND``; Java's
      ``Math.round`` rounds -2.5 to -2, which surprises people writing rules). Integers
      stay integers; negative ``d`` rounds to tens, hundreds, …; for doubles the scaling by
      ``10**d`` is binary floating point (``round(2.675, 2)`` is 2.67).
    * ``floor``/``ceil`` keep doubles as doubles (Java ``Math.floor``).
    * ``sqrt``, ``exp``, ``ln``, ``log10``, ``power`` always return double; outside their
      domain ``impl`` returns NaN or ±Infinity like Java (no warning, no error), because
      it cannot return a null; ``cep.engine.expr`` turns non-finite doubles into NULL.
    * ``concat`` formats non-strings as Esper/Java would for booleans (``true``) and
      integers, and doubles with Python's shortest round-trip ``repr`` (``1.5``, ``1e+20``,
      ``NaN``, ``Infinity``); a timestamp argument is formatted as its int64 microseconds.
    * ``replace(s, '', b)`` returns ``s`` (SQL), not Python's insert-between-every-char.
    * ``trim`` strips Unicode whitespace at both ends; ``length`` counts code points.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from cep.engine.table import DTYPES, PLACEHOLDERS, repeated
from grammar import signatures
from grammar.signatures import BUILTIN_NAMES, BUILTINS, TYPES, Signature

__all__ = ["BUILTIN_NAMES", "FUNCTIONS", "TYPES", "ScalarFunction", "UserFunction", "lookup",
           "register_udf", "text_module"]


@dataclass(frozen=True)
class ScalarFunction(Signature):
    """A function rules can call: its signature and its vectorised implementation."""

    impl: Callable[..., np.ndarray]

    @classmethod
    def of(cls, signature: Signature, impl: Callable[..., np.ndarray]) -> ScalarFunction:
        return cls(signature.name, signature.min_args, signature.max_args,
                   signature.result_type, impl)


# ---------------------------------------------------------------- vectorising helpers


def _length(args: tuple[Any, ...]) -> int | None:
    """Length of the first array argument, or None when all arguments are scalars."""
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim:
            return len(a)
    return None


def _columns(args: tuple[Any, ...]) -> tuple[int | None, list[Any]]:
    """Each argument as an iterable of Python values (scalars repeated)."""
    n = _length(args)
    if n is None:
        return None, [(a,) for a in args]
    return n, [a.tolist() if isinstance(a, np.ndarray) else repeat(a, n) for a in args]


def _map(fn: Callable[..., Any], dtype: Any, *args: Any) -> np.ndarray:
    """Apply a Python function element-wise over broadcast arguments."""
    n, cols = _columns(args)
    if n is None:
        return np.array(fn(*args), dtype=dtype)
    if dtype is object:
        out = np.empty(n, dtype=object)
        out[:] = list(map(fn, *cols))
        return out
    return np.fromiter(map(fn, *cols), dtype=dtype, count=n)


# ---------------------------------------------------------------- string functions


def _substr(s: str, start: int, length: int | None = None) -> str:
    begin = max(start - 1, 0)
    if length is None:
        return s[begin:]
    return s[begin : max(start - 1 + length, begin)]


def _replace(s: str, a: str, b: str) -> str:
    return s.replace(a, b) if a else s


def _format_float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def _as_strings(a: Any) -> Any:
    """One concat argument as strings (an object array, or a scalar str)."""
    if isinstance(a, np.ndarray):
        if a.dtype == object:
            return a
        if a.dtype == np.bool_:
            return np.where(a, "true", "false").astype(object)
        if np.issubdtype(a.dtype, np.floating):
            return np.array([_format_float(v) for v in a.tolist()], dtype=object)
        return np.array([str(v) for v in a.tolist()], dtype=object)
    if isinstance(a, bool | np.bool_):
        return "true" if a else "false"
    if isinstance(a, float | np.floating):
        return _format_float(float(a))
    return str(a)


def _concat(*args: Any) -> np.ndarray:
    parts = [_as_strings(a) for a in args]
    n, cols = _columns(tuple(parts))
    if n is None:
        return np.array("".join(parts), dtype=object)
    out = np.empty(n, dtype=object)
    out[:] = ["".join(row) for row in zip(*cols, strict=True)]
    return out


def _string_fn(fn: Callable[..., Any], dtype: Any) -> Callable[..., np.ndarray]:
    def impl(*args: Any) -> np.ndarray:
        return _map(fn, dtype, *args)

    return impl


# ---------------------------------------------------------------- math functions


def _is_int(x: Any) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.integer)


def _round(x: Any, digits: Any = 0) -> np.ndarray:
    x = np.asarray(x)
    d = np.asarray(digits, dtype=np.int64)
    if _is_int(x):
        x = x.astype(np.int64)
        p = np.power(np.int64(10), np.clip(-d, 0, 18))
        mag = (np.abs(x) + p // 2) // p * p
        return np.where(x < 0, -mag, mag)
    x = x.astype(np.float64)
    scale = np.power(10.0, d.astype(np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        y = x * scale
        a = np.abs(y)
        f = np.floor(a)
        r = np.copysign(f + (a - f >= 0.5), y) / scale + 0.0  # + 0.0: no -0.0
    # already integral at this scale (or inf/nan): rounding changes nothing
    return np.where(np.isfinite(y) & (a < 2.0**52), r, x)


def _keep_ints(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any], np.ndarray]:
    """floor/ceil: integers are already integral; doubles go through ``fn``."""

    def impl(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return x.astype(np.int64) if _is_int(x) else fn(x.astype(np.float64))

    return impl


def _to_double(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Double-valued math with Java's NaN/Infinity instead of warnings."""

    def impl(*args: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(np.asarray(a, dtype=np.float64) for a in args)))

    return impl


def _abs(x: Any) -> np.ndarray:
    return np.abs(np.asarray(x))


def _sign(x: Any) -> np.ndarray:
    return np.sign(np.asarray(x))


# ---------------------------------------------------------------- text UDFs


def text_module() -> types.ModuleType:
    """:mod:`cep.engine.text`, imported on first use: its compiled kernels (numba,
    scipy) take about 0.2 s to import in every Python process Spark starts, and only
    rules that call a text function need them."""
    from cep.engine import text

    return text


def _similarity(a: Any, b: Any) -> np.ndarray:
    out = text_module().similarity(a, b)
    return out.reshape(()) if _length((a, b)) is None else out


def _lsh_bucket(s: Any, n: Any) -> np.ndarray:
    if _length((s,)) is None:
        if _length((n,)) is None:
            return text_module().lsh_bucket(s, n).reshape(())
        s = repeated(s, len(n))  # np.full would cut a trailing NUL off the text
    return text_module().lsh_bucket(s, n)


# ---------------------------------------------------------------- the registry

_IMPLS: dict[str, Callable[..., np.ndarray]] = {
    "lower": _string_fn(str.lower, object),
    "upper": _string_fn(str.upper, object),
    "trim": _string_fn(str.strip, object),
    "length": _string_fn(len, np.int64),
    "substr": _string_fn(_substr, object),
    "concat": _concat,
    "replace": _string_fn(_replace, object),
    "startswith": _string_fn(str.startswith, np.bool_),
    "endswith": _string_fn(str.endswith, np.bool_),
    "contains": _string_fn(str.__contains__, np.bool_),
    "abs": _abs,
    "sign": _sign,
    "round": _round,
    "floor": _keep_ints(np.floor),
    "ceil": _keep_ints(np.ceil),
    "sqrt": _to_double(np.sqrt),
    "exp": _to_double(np.exp),
    "ln": _to_double(np.log),
    "log10": _to_double(np.log10),
    "power": _to_double(np.power),
    "similarity": _similarity,
    "lsh_bucket": _lsh_bucket,
}


def _builtins() -> dict[str, ScalarFunction]:
    """Each built-in signature of the language with its implementation here."""
    if set(_IMPLS) != BUILTIN_NAMES:
        raise RuntimeError("built-in signatures and implementations differ: "
                           f"{sorted(set(_IMPLS) ^ BUILTIN_NAMES)}")
    return {name: ScalarFunction.of(BUILTINS[name], impl) for name, impl in _IMPLS.items()}


FUNCTIONS: dict[str, ScalarFunction] = _builtins()


def lookup(name: str) -> ScalarFunction | None:
    """The function called ``name`` (case-insensitive), or None."""
    return FUNCTIONS.get(name.lower())


# ---------------------------------------------------------------- user UDFs


@dataclass(frozen=True)
class UserFunction(ScalarFunction):
    """A user's Python function (:func:`register_udf`): besides ``impl`` (which raises
    what ``fn`` raises), :meth:`call` finds the values on which ``fn`` raises, so that
    only their records become dead letters (``cep.engine.udf_errors``)."""

    fn: Callable[..., Any]
    arg_types: tuple[str, ...]
    returns: str  # the result type's name (``result_type`` is the typing rule)
    vectorized: bool

    def call(self, *args: Any) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
        """``fn`` over the arguments: the values (placeholders where it raised), a mask
        of the positions where it raised (None: nowhere) and their messages, in order.

        One call over the whole batch first, so a function that does not raise costs
        nothing more. If it raises, a scalar function is called value by value; a
        vectorised one on halves, recursively, down to the values that raise alone:
        k bad values in n cost about 2·k·log2(n) calls."""
        try:
            return self.impl(*args), None, []
        except Exception as err:  # any error of the user's code is a dead letter
            first = err
        n = _length(args)
        if n is None:  # constant arguments: every row has the one value that raised
            return (np.array(PLACEHOLDERS[self.returns], dtype=DTYPES[self.returns]),
                    np.ones((), dtype=bool), [_message(first)])
        failures: dict[int, str] = {}
        if self.vectorized:
            out = np.full(n, PLACEHOLDERS[self.returns], dtype=DTYPES[self.returns])
            self._halves(args, 0, n, out, failures)
        else:
            out = self._one_by_one(args, failures)
        failed = np.zeros(n, dtype=bool)
        failed[list(failures)] = True
        return out, failed, [failures[i] for i in sorted(failures)]

    def _one_by_one(self, args: tuple[Any, ...], failures: dict[int, str]) -> np.ndarray:
        """A scalar ``fn`` called value by value (Python values, as ``impl`` passes
        them), each call's exception kept; so is a result the result type cannot hold."""
        converted = tuple(np.asarray(a, dtype=DTYPES[t]) if isinstance(a, np.ndarray) else a
                          for a, t in zip(args, self.arg_types, strict=True))
        _, columns = _columns(converted)
        placeholder = PLACEHOLDERS[self.returns]
        values: list[Any] = []
        for i, row in enumerate(zip(*columns, strict=True)):
            try:
                values.append(self.fn(*row))
            except Exception as err:  # the user's code: a dead letter
                failures[i] = _message(err)
                values.append(placeholder)
        dtype = DTYPES[self.returns]
        boxed = np.empty(len(values), dtype=object)
        boxed[:] = values
        try:
            return boxed.astype(dtype)
        except (TypeError, ValueError):  # some result is not of the result type
            out = np.full(len(values), placeholder, dtype=dtype)
            for i, value in enumerate(values):
                try:
                    out[i] = value
                except (TypeError, ValueError) as err:
                    failures[i] = _message(err)
            return out

    def _halves(self, args: tuple[Any, ...], lo: int, hi: int, out: np.ndarray,
                failures: dict[int, str]) -> None:
        """Fill ``out[lo:hi]``, splitting the range where ``fn`` raises."""
        part = tuple(a[lo:hi] if isinstance(a, np.ndarray) and a.ndim else a for a in args)
        try:
            out[lo:hi] = self.impl(*part)
            return
        except Exception as err:  # the user's code: a dead letter
            if hi - lo == 1:
                failures[lo] = _message(err)
                return
        mid = (lo + hi) // 2
        self._halves(args, lo, mid, out, failures)
        self._halves(args, mid, hi, out, failures)


def _message(err: BaseException) -> str:
    """The exception as a dead letter's reason names it: its type and message."""
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _user_impl(fn: Callable[..., Any], arg_types: list[str], result_type: str,
               vectorized: bool) -> Callable[..., np.ndarray]:
    """``fn`` as an ``impl``: arguments converted to the parameter types, the result to
    the result type, as many values as rows (a vectorised ``fn`` that returns another
    number raises, and is split like one that raised)."""
    dtypes = [DTYPES[t] for t in arg_types]
    out_dtype = DTYPES[result_type]
    ufunc = None if vectorized else np.frompyfunc(fn, len(arg_types), 1)

    def impl(*args: Any) -> np.ndarray:
        conv = [
            np.asarray(a, dtype=dt) if isinstance(a, np.ndarray) else a
            for a, dt in zip(args, dtypes, strict=True)
        ]
        out = np.asarray(fn(*conv) if ufunc is None else ufunc(*conv))
        n = _length(args)
        if n is not None and out.ndim and out.shape != (n,):  # one value broadcasts
            raise ValueError(f"returned {out.size} value(s) for {n} row(s)")
        if n is not None and not out.ndim:
            out = np.full(n, out.item())
        return out.astype(out_dtype, copy=False)

    return impl


def register_udf(
    name: str,
    fn: Callable[..., Any],
    arg_types: list[str],
    result_type: str,
    *,
    vectorized: bool = False,
) -> None:
    """Make the Python function ``fn`` callable from rules as ``name(...)``.

    ``arg_types`` fixes the arity and the parameter types (an int argument widens to a
    long or double parameter: it is converted before the call). With ``vectorized=True``
    ``fn`` receives numpy arrays / scalars as described in the module docstring and
    returns an array as long as its array arguments (the fast form: one call per batch);
    otherwise it is called once per value with Python values. Either way the result is
    converted to ``result_type``'s dtype. ``fn`` is called only on rows whose arguments
    are all non-NULL (a NULL argument gives NULL), and where it raises the value is NULL
    and the record a dead letter of kind ``udf_error`` (``cep.engine.udf_errors``).

    Registering an existing UDF name replaces it; built-in names are refused. On Spark
    the function's module is imported in every Python worker before rules run
    (``cep.engine.udf.shipment``): register functions defined in a module (``cep run
    --udf FILE.py``, or an importable module of yours), not in ``__main__``.
    """
    signature = signatures.udf_signature(name, arg_types, result_type)
    impl = _user_impl(fn, arg_types, result_type, vectorized)
    signatures.register(signature)
    FUNCTIONS[signature.name] = UserFunction(
        signature.name, signature.min_args, signature.max_args, signature.result_type,
        impl, fn, tuple(arg_types), result_type, vectorized)
