"""Scalar functions and the UDF registry (cep.engine.functions)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

from cep.engine import functions
from cep.engine.functions import FUNCTIONS, TYPES, lookup, register_udf


def call(name: str, *args: object) -> np.ndarray:
    fn = lookup(name)
    assert fn is not None
    return fn.impl(*args)


def objs(*xs: str) -> np.ndarray:
    return np.array(xs, dtype=object)


@pytest.fixture
def udfs() -> Iterator[None]:
    """Remove UDFs a test registered."""
    before = set(FUNCTIONS)
    yield
    for name in set(FUNCTIONS) - before:
        del FUNCTIONS[name]


# ---------------------------------------------------------------- registry and typing


def test_builtins_are_registered_lower_case() -> None:
    expected = {
        "lower", "upper", "length", "trim", "substr", "concat", "replace", "startswith",
        "endswith", "contains", "abs", "round", "floor", "ceil", "sqrt", "exp", "ln",
        "log10", "power", "sign", "similarity", "lsh_bucket",
    }  # fmt: skip
    assert expected == set(functions.BUILTIN_NAMES)
    assert lookup("LOWER") is FUNCTIONS["lower"]
    assert lookup("nope") is None
    for name in ("coalesce", "case", "cast"):  # the compiler's business
        assert lookup(name) is None


@pytest.mark.parametrize(
    ("name", "args", "result"),
    [
        ("lower", ["string"], "string"),
        ("length", ["string"], "int"),
        ("substr", ["string", "int"], "string"),
        ("substr", ["string", "long", "int"], "string"),
        ("concat", ["string", "int", "double", "boolean", "timestamp"], "string"),
        ("concat", ["null"], "string"),
        ("startswith", ["string", "string"], "boolean"),
        ("abs", ["int"], "int"),
        ("abs", ["long"], "long"),
        ("abs", ["double"], "double"),
        ("abs", ["null"], "null"),
        ("round", ["double"], "double"),
        ("round", ["double", "int"], "double"),
        ("round", ["long", "int"], "long"),
        ("floor", ["double"], "double"),
        ("ceil", ["int"], "int"),
        ("sign", ["double"], "double"),
        ("sqrt", ["int"], "double"),
        ("power", ["int", "double"], "double"),
        ("ln", ["null"], "double"),
        ("similarity", ["string", "string"], "double"),
        ("lsh_bucket", ["string", "int"], "int"),
        ("lsh_bucket", ["string", "long"], "int"),
    ],
)
def test_result_types(name: str, args: list[str], result: str) -> None:
    assert FUNCTIONS[name].result_type(args) == result


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("lower", ["int"], "argument 1 must be string, got int"),
        ("abs", ["string"], "argument 1 must be int or long or double, got string"),
        ("sqrt", ["timestamp"], "argument 1 must be int or long or double, got timestamp"),
        ("substr", ["string", "double"], "argument 2 must be int or long, got double"),
        ("substr", ["string"], "takes 2 to 3 arguments, got 1"),
        ("lower", [], "takes 1 argument, got 0"),
        ("concat", [], "takes at least 1 argument, got 0"),
        ("similarity", ["string", "int"], "argument 2 must be string, got int"),
        ("lsh_bucket", ["string", "double"], "argument 2 must be int or long, got double"),
    ],
)
def test_type_errors_say_what_is_wrong(name: str, args: list[str], message: str) -> None:
    with pytest.raises(TypeError) as err:
        FUNCTIONS[name].result_type(args)
    assert str(err.value) == message


def test_arity_fields() -> None:
    assert (FUNCTIONS["substr"].min_args, FUNCTIONS["substr"].max_args) == (2, 3)
    assert (FUNCTIONS["round"].min_args, FUNCTIONS["round"].max_args) == (1, 2)
    assert FUNCTIONS["concat"].min_args == 1 and FUNCTIONS["concat"].max_args > 100


# ---------------------------------------------------------------- string functions


def test_string_functions() -> None:
    s = objs("  Hello World ", "", "abc")
    assert call("lower", s).tolist() == ["  hello world ", "", "abc"]
    assert call("upper", s).tolist() == ["  HELLO WORLD ", "", "ABC"]
    assert call("trim", s).tolist() == ["Hello World", "", "abc"]
    assert call("length", s).tolist() == [14, 0, 3]
    assert call("length", s).dtype == np.int64
    assert call("lower", s).dtype == object
    assert call("replace", s, "l", "L").tolist() == ["  HeLLo WorLd ", "", "abc"]
    assert call("replace", objs("abc"), "", "x").tolist() == ["abc"]  # SQL, not Python
    assert call("startswith", s, "  H").tolist() == [True, False, False]
    assert call("endswith", s, objs(" ", "", "bc")).tolist() == [True, True, True]
    assert call("contains", s, "b").tolist() == [False, False, True]
    assert call("contains", s, "b").dtype == np.bool_


@pytest.mark.parametrize(
    ("start", "length", "expected"),
    [
        (1, None, "hello"),
        (2, None, "ello"),
        (2, 3, "ell"),
        (0, 3, "he"),  # positions 0, 1, 2: only 1 and 2 exist
        (-2, 3, ""),
        (-2, 5, "he"),
        (4, 10, "lo"),
        (9, 2, ""),
        (2, 0, ""),
        (2, -1, ""),  # negative length: empty, never an error
    ],
)
def test_substr_is_one_based_sql(start: int, length: int | None, expected: str) -> None:
    args = (objs("hello"), start) if length is None else (objs("hello"), start, length)
    assert call("substr", *args).tolist() == [expected]


def test_substr_with_array_positions() -> None:
    out = call("substr", objs("abcdef", "xyz"), np.array([2, 1]), np.array([2, 5]))
    assert out.tolist() == ["bc", "xyz"]


def test_concat_formats_values() -> None:
    out = call(
        "concat",
        objs("a", "b"),
        np.array([1, -2]),
        "|",
        np.array([1.5, np.nan]),
        np.array([True, False]),
        np.array([1e20, np.inf]),
    )
    assert out.tolist() == ["a1|1.5true1e+20", "b-2|NaNfalseInfinity"]
    assert call("concat", objs("x")).tolist() == ["x"]


# ---------------------------------------------------------------- math functions


def test_round_half_away_from_zero() -> None:
    x = np.array([2.5, -2.5, 0.5, -0.5, 1.4999999999999998, 0.49999999999999994, 3.0, -0.4])
    assert call("round", x).tolist() == [3.0, -3.0, 1.0, -1.0, 1.0, 0.0, 3.0, 0.0]
    assert np.signbit(call("round", np.array([-0.4]))).tolist() == [False]  # no -0.0
    assert call("round", np.array([1.25, -1.25, 2.675]), 1).tolist() == [1.3, -1.3, 2.7]
    assert call("round", np.array([1234.5678]), np.array([2])).tolist() == [1234.57]
    assert call("round", np.array([1250.0]), -2).tolist() == [1300.0]
    big = np.array([2.0**60 + 2048, np.inf, np.nan])
    assert np.array_equal(call("round", big, 3), big, equal_nan=True)


def test_round_integers_stay_integers() -> None:
    x = np.array([1234, -15, 15, 7], dtype=np.int64)
    assert call("round", x).tolist() == [1234, -15, 15, 7]
    assert call("round", x).dtype == np.int64
    assert call("round", x, -1).tolist() == [1230, -20, 20, 10]
    assert call("round", x, np.array([-2, 0, 1, -1])).tolist() == [1200, -15, 15, 10]


def test_math_functions() -> None:
    x = np.array([-2.5, 0.0, 4.0])
    i = np.array([-3, 0, 4], dtype=np.int64)
    assert call("abs", x).tolist() == [2.5, 0.0, 4.0]
    assert call("abs", i).dtype == np.int64
    assert call("floor", x).tolist() == [-3.0, 0.0, 4.0]
    assert call("ceil", x).tolist() == [-2.0, 0.0, 4.0]
    assert call("floor", i).tolist() == [-3, 0, 4] and call("floor", i).dtype == np.int64
    assert call("sign", x).tolist() == [-1.0, 0.0, 1.0]
    assert call("sign", i).tolist() == [-1, 0, 1]
    assert call("sqrt", i[2:]).tolist() == [2.0]
    assert call("exp", np.array([0])).tolist() == [1.0]
    assert call("log10", np.array([1000])).tolist() == [3.0]
    assert call("power", np.array([2, 2]), np.array([10, -1])).tolist() == [1024.0, 0.5]


def test_bad_domains_give_nan_or_inf_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(call("sqrt", np.array([-1.0]))[0])
        assert call("ln", np.array([0]))[0] == -np.inf
        assert np.isnan(call("ln", np.array([-1]))[0])
        assert call("power", np.array([0]), np.array([-1]))[0] == np.inf
        assert call("exp", np.array([1000.0]))[0] == np.inf


# ---------------------------------------------------------------- calling convention


PLACEHOLDER_ARGS = {
    "int": np.zeros(3, dtype=np.int64),
    "long": np.zeros(3, dtype=np.int64),
    "double": np.zeros(3),
    "boolean": np.zeros(3, dtype=bool),
    "string": np.array(["", "", ""], dtype=object),
    "timestamp": np.zeros(3, dtype=np.int64),
}
SIGNATURES = {
    "lower": ["string"], "upper": ["string"], "trim": ["string"], "length": ["string"],
    "substr": ["string", "int", "int"], "concat": ["string", "double", "boolean"],
    "replace": ["string", "string", "string"], "startswith": ["string", "string"],
    "endswith": ["string", "string"], "contains": ["string", "string"],
    "abs": ["int"], "round": ["double", "int"], "floor": ["double"], "ceil": ["double"],
    "sqrt": ["double"], "exp": ["double"], "ln": ["int"], "log10": ["double"],
    "power": ["int", "int"], "sign": ["long"], "similarity": ["string", "string"],
    "lsh_bucket": ["string", "int"],
}  # fmt: skip
DTYPES = {"int": np.int64, "long": np.int64, "double": np.float64, "boolean": np.bool_}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_placeholders_never_raise_and_dtypes_match(name: str) -> None:
    """Nulls reach impl as placeholders (0, 0.0, False, ""): no error, right dtype/length."""
    types = SIGNATURES[name]
    fn = FUNCTIONS[name]
    result_type = fn.result_type(types)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn.impl(*(PLACEHOLDER_ARGS[t] for t in types))
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    assert out.dtype == DTYPES.get(result_type, object)


def test_all_scalar_arguments_give_a_0d_array() -> None:
    assert call("upper", "ab").shape == ()
    assert call("upper", "ab").item() == "AB"
    assert call("concat", "a", 1).item() == "a1"
    assert call("abs", -3).item() == 3
    assert call("similarity", "a b", "a b").item() == 1.0
    assert call("lsh_bucket", "a b", 16).shape == ()
    assert call("lsh_bucket", "a b", np.array([16, 16])).shape == (2,)


def test_text_udfs_through_the_registry() -> None:
    a = objs("the cat sat", "a a b")
    b = objs("the cat sat", "a b b")
    assert call("similarity", a, b).tolist() == [1.0, 0.8]
    buckets = call("lsh_bucket", a, 4096)
    assert buckets.dtype == np.int64 and ((buckets >= 0) & (buckets < 4096)).all()
    assert call("lsh_bucket", a, np.array([4096, 4096])).tolist() == buckets.tolist()


# ---------------------------------------------------------------- UDFs


@pytest.mark.usefixtures("udfs")
def test_register_a_python_udf() -> None:
    register_udf("Reverse", lambda s: s[::-1], ["string"], "string")
    fn = lookup("reverse")
    assert fn is not None and (fn.min_args, fn.max_args) == (1, 1)
    assert fn.result_type(["string"]) == "string"
    assert fn.result_type(["null"]) == "string"
    with pytest.raises(TypeError, match="argument 1 must be string, got int"):
        fn.result_type(["int"])
    with pytest.raises(TypeError, match="takes 1 argument, got 2"):
        fn.result_type(["string", "string"])
    out = fn.impl(objs("abc", ""))
    assert out.tolist() == ["cba", ""] and out.dtype == object


@pytest.mark.usefixtures("udfs")
def test_udf_arguments_widen_and_results_convert() -> None:
    seen = []

    def half(x: float) -> float:
        seen.append(type(x))
        return x / 2

    register_udf("half", half, ["double"], "double")
    fn = FUNCTIONS["half"]
    assert fn.result_type(["int"]) == "double"  # int widens to a double parameter
    out = fn.impl(np.array([1, 3], dtype=np.int64))
    assert out.tolist() == [0.5, 1.5] and out.dtype == np.float64
    assert seen == [float, float]  # Python values, already converted

    register_udf("is_big", lambda x: x > 10, ["long"], "boolean")
    assert FUNCTIONS["is_big"].impl(np.array([5, 50])).dtype == np.bool_
    assert FUNCTIONS["is_big"].result_type(["int"]) == "boolean"


@pytest.mark.usefixtures("udfs")
def test_vectorised_udf_and_replacement() -> None:
    register_udf("twice", lambda x: x * 2, ["long"], "long", vectorized=True)
    assert FUNCTIONS["twice"].impl(np.array([1, 2])).tolist() == [2, 4]
    register_udf("twice", lambda x: x + x + 1, ["long"], "long", vectorized=True)
    assert FUNCTIONS["twice"].impl(np.array([1, 2])).tolist() == [3, 5]


@pytest.mark.usefixtures("udfs")
def test_udf_registration_errors() -> None:
    with pytest.raises(ValueError, match="built-in"):
        register_udf("LOWER", str.lower, ["string"], "string")
    with pytest.raises(ValueError, match="unknown type 'float'"):
        register_udf("f", float, ["float"], "double")
    with pytest.raises(ValueError, match="not an identifier"):
        register_udf("my-udf", str, ["string"], "string")
    assert set(TYPES) == {"int", "long", "double", "boolean", "string", "timestamp"}
