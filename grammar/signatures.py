"""The scalar functions rules may call, as the language sees them: name, arity, typing.

The checker resolves a call by name with :func:`lookup` and asks the signature for its
result type (``result_type(arg_types)``, which raises ``TypeError`` with a message for
people when the arguments do not fit, e.g. "argument 1 must be string, got int"; the
checker prefixes the function name). What a function computes lives in the engine
(``cep.engine.functions``), which pairs each signature here with its implementation;
a user UDF is registered there too, and its signature lands here through :func:`register`,
so that rules can call it.

Type names are the schema types ``int, long, double, boolean, string, timestamp`` plus
``null`` (the type of the NULL literal), which every parameter accepts. Numeric
parameters take int, long or double; a function that keeps its argument's type
(``abs``, ``sign``, ``floor``, ``ceil``, ``round``) returns ``null`` for a null argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

TYPES = ("int", "long", "double", "boolean", "string", "timestamp")
_NUMERIC = ("int", "long", "double")
_INTEGER = ("int", "long")
_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*")
VARIADIC = 1 << 16  # max_args of functions taking any number of arguments


@dataclass(frozen=True)
class Signature:
    """A function rules can call: its name, arity and typing rule."""

    name: str
    min_args: int
    max_args: int
    result_type: Callable[[list[str]], str]


# ---------------------------------------------------------------- typing helpers


def _check_arity(lo: int, hi: int, types: list[str]) -> None:
    n = len(types)
    if lo <= n <= hi:
        return
    if lo == hi:
        want = f"{lo} argument{'s' if lo != 1 else ''}"
    elif hi == VARIADIC:
        want = f"at least {lo} argument{'s' if lo != 1 else ''}"
    else:
        want = f"{lo} to {hi} arguments"
    raise TypeError(f"takes {want}, got {n}")


def _check_arg(i: int, got: str, allowed: tuple[str, ...]) -> None:
    if got != "null" and got not in allowed:
        raise TypeError(f"argument {i + 1} must be {' or '.join(allowed)}, got {got}")


def _typing(
    params: list[tuple[str, ...]], optional: int, result: str | Callable[..., str]
) -> Callable[[list[str]], str]:
    """A ``result_type`` for fixed parameters (the last ``optional`` may be omitted).

    ``result`` is a type name, or a function of the argument types for type-preserving
    functions.
    """

    def result_type(types: list[str]) -> str:
        _check_arity(len(params) - optional, len(params), types)
        for i, (got, allowed) in enumerate(zip(types, params, strict=False)):
            _check_arg(i, got, allowed)
        return result if isinstance(result, str) else result(types)

    return result_type


def _same_as_first(types: list[str]) -> str:
    return types[0]


def _concat_type(types: list[str]) -> str:
    _check_arity(1, VARIADIC, types)
    for i, t in enumerate(types):
        _check_arg(i, t, (*TYPES, "null"))
    return "string"


def _fixed(name: str, params: list[tuple[str, ...]], optional: int,
           result: str | Callable[..., str]) -> Signature:
    return Signature(name, len(params) - optional, len(params), _typing(params, optional, result))


# ---------------------------------------------------------------- the built-ins

_S, _N, _I = ("string",), _NUMERIC, _INTEGER

BUILTINS: dict[str, Signature] = {s.name: s for s in (
    _fixed("lower", [_S], 0, "string"),
    _fixed("upper", [_S], 0, "string"),
    _fixed("trim", [_S], 0, "string"),
    _fixed("length", [_S], 0, "int"),
    _fixed("substr", [_S, _I, _I], 1, "string"),
    Signature("concat", 1, VARIADIC, _concat_type),
    _fixed("replace", [_S, _S, _S], 0, "string"),
    _fixed("startswith", [_S, _S], 0, "boolean"),
    _fixed("endswith", [_S, _S], 0, "boolean"),
    _fixed("contains", [_S, _S], 0, "boolean"),
    _fixed("abs", [_N], 0, _same_as_first),
    _fixed("sign", [_N], 0, _same_as_first),
    _fixed("round", [_N, _I], 1, _same_as_first),
    _fixed("floor", [_N], 0, _same_as_first),
    _fixed("ceil", [_N], 0, _same_as_first),
    _fixed("sqrt", [_N], 0, "double"),
    _fixed("exp", [_N], 0, "double"),
    _fixed("ln", [_N], 0, "double"),
    _fixed("log10", [_N], 0, "double"),
    _fixed("power", [_N, _N], 0, "double"),
    _fixed("similarity", [_S, _S], 0, "double"),
    _fixed("lsh_bucket", [_S, _I], 0, "int"),
)}
BUILTIN_NAMES = frozenset(BUILTINS)

#: Every function rules may call: the built-ins and the UDFs registered so far.
SIGNATURES: dict[str, Signature] = dict(BUILTINS)


def lookup(name: str) -> Signature | None:
    """The signature of the function called ``name`` (case-insensitive), or None."""
    return SIGNATURES.get(name.lower())


# ---------------------------------------------------------------- user UDFs

_ACCEPTS: dict[str, tuple[str, ...]] = {
    "int": ("int",),
    "long": ("int", "long"),
    "double": _NUMERIC,
    "boolean": ("boolean",),
    "string": ("string",),
    "timestamp": ("timestamp",),
}


def udf_signature(name: str, arg_types: list[str], result_type: str) -> Signature:
    """The signature of a user function, or ValueError saying why it cannot be one.

    ``arg_types`` fixes the arity and the parameter types (an int argument widens to a
    long or double parameter). The name is lower-cased; built-in names are refused.
    """
    key = name.lower()
    if not _NAME_RE.fullmatch(key):
        raise ValueError(f"UDF name {name!r} is not an identifier")
    if key in BUILTIN_NAMES:
        raise ValueError(f"{key}() is a built-in function and cannot be redefined")
    for t in (*arg_types, result_type):
        if t not in TYPES:
            raise ValueError(f"unknown type {t!r} in UDF {key}(); types are {', '.join(TYPES)}")
    params = [_ACCEPTS[t] for t in arg_types]
    return Signature(key, len(arg_types), len(arg_types), _typing(params, 0, result_type))


def register(signature: Signature) -> None:
    """Make a UDF's signature callable from rules (replacing one of the same name)."""
    SIGNATURES[signature.name] = signature
