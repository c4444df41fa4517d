"""User functions that raise: only the failing values are NULL and only their records
dead letters (``cep.engine.functions.UserFunction.call``, ``cep.engine.udf_errors``),
and ``--udf`` files (``cep.engine.udf.files``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.udf_sample import FAILING, RULES, UDF_TEXT, letters, module_name

from cep.engine.functions import FUNCTIONS, UserFunction, register_udf
from cep.engine.udf.files import UdfFileError, load_udf_files
from cep.engine.udf.shipment import UdfShipError, called_functions, shipment_for
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text
from grammar.errors import RuleError

DATA = Path(__file__).parent.parent / "data"


def _raising_on(bad: set[int], calls: list[int]):
    def fn(x: np.ndarray) -> np.ndarray:
        calls.append(len(x))
        hit = [v for v in x.tolist() if v in bad]
        if hit:
            raise ValueError(f"bad {hit[0]}")
        return x * 3

    return fn


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=200), st.sets(st.integers(0, 30)),
       st.booleans())
def test_only_the_values_a_function_raises_on_fail(values, bad, vectorized):
    """Differential: the result of ``call`` equals the function applied value by value,
    with exactly the values it raises on marked failed, each with its own message."""
    calls: list[int] = []
    fn = _raising_on(bad, calls)

    def scalar(v: int) -> int:
        return int(fn(np.array([v]))[0])

    register_udf("triple_or_fail", fn if vectorized else scalar, ["long"], "long",
                 vectorized=vectorized)
    spec = FUNCTIONS["triple_or_fail"]
    assert isinstance(spec, UserFunction)
    args = np.array(values, dtype=np.int64)
    out, failed, messages = spec.call(args)
    expected_failed = np.isin(args, list(bad))
    if not expected_failed.any():
        assert failed is None and messages == []
    else:
        assert failed is not None and failed.tolist() == expected_failed.tolist()
        assert messages == [f"ValueError: bad {v}" for v in args[expected_failed].tolist()]
    assert out[~expected_failed].tolist() == (args[~expected_failed] * 3).tolist()
    if vectorized:  # halves: about 2·k·log2(n) calls for k failing values, not n
        k = int(expected_failed.sum())
        assert len(calls) <= 1 + 2 * k * (int(np.log2(len(values))) + 2)
    del FUNCTIONS["triple_or_fail"]


def test_a_function_is_never_called_on_nulls_and_a_null_is_no_failure():
    seen: list[list] = []

    def fn(x: np.ndarray) -> np.ndarray:
        seen.append(x.tolist())
        if (x == 0).any():
            raise ZeroDivisionError("zero")
        return 1.0 / x

    register_udf("inverse_vec", fn, ["double"], "double", vectorized=True)
    module = compile_text("CREATE SCHEMA S (k string, x double, ts timestamp) TIMESTAMP ts;\n"
                          "@Name('r') SELECT k, inverse_vec(x) AS y FROM S;", "<t>")
    from cep.engine.derive import derive_streams
    from cep.engine.table import SEQ
    from cep.engine.udf_errors import collecting

    table = {SEQ: np.array([10, 20, 30]), "k": np.array(["a", "b", "c"], dtype=object),
             "x": np.array([2.0, 0.0, 4.0]), "x__null": np.array([False, True, False]),
             "ts": np.array([1, 2, 3])}
    with collecting() as failures:
        _, stateless = derive_streams(module, {"S": table})
    assert seen == [[2.0, 4.0]] and failures == []  # the NULL's placeholder 0.0: unseen
    assert len(stateless[0]["seq"]) == 3


def _udf_file(folder: Path, stem: str, exact: bool = False) -> Path:
    """support.udf_sample's functions in a file of ``folder`` whose module name no other
    test imports (``stem`` and a random suffix; ``exact``: ``stem`` itself)."""
    path = folder / f"{stem if exact else module_name(stem)}.py"
    path.write_text(UDF_TEXT)
    return path


def test_local_runner_dead_letters_exactly_the_failing_records(tmp_path):
    load_udf_files([_udf_file(tmp_path, "udfs_local_sample")])
    module = compile_text(RULES, "loud.epl")
    dead = tmp_path / "dead.jsonl"
    result = run(module, RunConfig(str(DATA / "tweets_small.jsonl"), runner="local",
                                   output=Output(collect=True), dead_letter=str(dead),
                                   batch_size=7))  # batches: a window re-evaluates
    assert letters(dead) == FAILING
    assert result.totals["udf_failures"] == sum(map(len, FAILING.values()))
    records = result.records
    assert records is not None
    loud = {r["seq"]: r for r in records if r["rule"] == "loud"}
    assert loud[504]["loud"] is None and loud[504]["score"] is not None  # only shout failed
    assert loud[667]["score"] is None and loud[667]["loud"] is not None
    assert loud[0]["loud"] == "EARTHQUAKE HITS THE NORTHERN COAST BUILDINGS LIVE!"
    assert loud[0]["u"] == "u" and loud[0]["rt2"] == 22
    first = json.loads(dead.read_text().splitlines()[0])
    assert first["source"].endswith("tweets_small.jsonl")
    assert json.loads(first["record"])["id"] == 1003


def test_udf_files_load_and_refuse_in_one_line(tmp_path):
    first = _udf_file(tmp_path, "udfs_load_sample")
    loaded = load_udf_files([first])
    assert [f.module for f in loaded] == [first.stem]
    assert set(loaded[0].functions) == {"shout", "score", "initial", "twice"}
    with pytest.raises(UdfFileError, match=r"^.*nothere\.py: no such file$"):
        load_udf_files([tmp_path / "nothere.py"])
    broken = tmp_path / "udfs_broken.py"
    broken.write_text("import math\n\nx = 1 / 0\n")
    with pytest.raises(UdfFileError) as err:
        load_udf_files([broken])
    assert str(err.value) == (f"{broken}:3: importing it raised ZeroDivisionError: "
                              "division by zero")
    assert "\n" not in str(err.value)
    other = tmp_path / "sub"
    other.mkdir()
    twin = _udf_file(other, first.stem, exact=True)
    with pytest.raises(UdfFileError, match="already imported"):
        load_udf_files([twin])


def test_a_rule_calling_an_unregistered_function_names_its_place():
    with pytest.raises(RuleError) as err:
        compile_text("CREATE SCHEMA S (k string, ts timestamp) TIMESTAMP ts;\n"
                     "SELECT k, nowhere_fn(k) AS y FROM S;\n", "rules.epl")
    assert str(err.value).startswith("rules.epl:2:11:")


def test_the_shipment_names_the_called_functions_modules(tmp_path):
    ship = _udf_file(tmp_path, "udfs_ship_sample")
    load_udf_files([ship])
    module = compile_text(RULES, "loud.epl")
    assert {"shout", "score", "initial", "twice"} <= called_functions(module)
    shipment = shipment_for(module)
    assert {s.name for s in shipment.functions} == {"shout", "score", "initial", "twice"}
    assert {s.module for s in shipment.functions} == {ship.stem}
    assert shipment.files == (str(ship.resolve()),)
    register_udf("from_main", lambda s: s, ["string"], "string")
    FUNCTIONS["from_main"].fn.__module__ = "__main__"
    with pytest.raises(UdfShipError, match=r"from_main.*--udf FILE\.py"):
        shipment_for(compile_text("CREATE SCHEMA S (k string);\nSELECT from_main(k) AS y "
                                  "FROM S;", "<t>"))
    del FUNCTIONS["from_main"]


def test_a_result_the_result_type_cannot_hold_fails_that_value_only():
    register_udf("half_or_text", lambda x: "many" if x > 100 else x / 2, ["long"], "double")
    spec = FUNCTIONS["half_or_text"]
    assert isinstance(spec, UserFunction)
    out, failed, messages = spec.call(np.array([4, 500, 8]))
    assert failed is not None and failed.tolist() == [False, True, False]
    assert out[[0, 2]].tolist() == [2.0, 4.0]
    assert len(messages) == 1 and messages[0].startswith("ValueError: could not convert")
    del FUNCTIONS["half_or_text"]


@pytest.mark.parametrize("followed_by", ["-> b=S(kind = 2 AND over(b.v, a.v))",
                                         "-> (b=S(kind = 2 AND over(b.v, a.v)) or "
                                         "c=S(kind = 3))"])
def test_a_pattern_filter_that_raises_names_the_candidate_record(tmp_path, followed_by):
    """In a filter over earlier tags (the chain kernel, and the interpreter for the
    other shape) the failing value's record is the candidate event's."""
    def over(x: float, y: float) -> bool:
        if x == 13.0:
            raise ValueError("unlucky")
        return x > y

    register_udf("over", over, ["double", "double"], "boolean")
    module = compile_text(
        "CREATE SCHEMA S (k string, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
        f"@Name('p') SELECT a.v AS av FROM PATTERN [every a=S(kind = 1) {followed_by}] "
        "PARTITION BY k;", "p.epl")
    events = [{"k": "x", "ts": i, "v": v, "kind": kind}
              for i, (v, kind) in enumerate([(1.0, 1), (13.0, 2), (14.0, 2), (2.0, 1),
                                             (3.0, 2)])]
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(e) for e in events]
    path.write_text("".join(line + "\n" for line in lines))
    dead = tmp_path / "dead.jsonl"
    result = run(module, RunConfig(str(path), runner="local", output=Output(collect=True),
                                   dead_letter=str(dead)))
    offsets = np.cumsum([0, *(len(line) + 1 for line in lines)])
    assert letters(dead) == {int(offsets[1]): {"over() raised ValueError: unlucky"}}
    assert [r["av"] for r in result.records or []] == [1.0, 2.0]
    del FUNCTIONS["over"]


def test_a_vectorised_function_may_return_one_value_for_all_rows_not_another_count():
    register_udf("always_five", lambda x: 5, ["long"], "long", vectorized=True)
    out, failed, _ = FUNCTIONS["always_five"].call(np.array([1, 2, 3]))
    assert out.tolist() == [5, 5, 5] and failed is None
    register_udf("two_values", lambda x: np.array([7, 8]), ["long"], "long", vectorized=True)
    _, failed, messages = FUNCTIONS["two_values"].call(np.array([1, 2, 3]))
    assert failed is not None and failed.tolist() == [True, False, False]
    assert messages == ["ValueError: returned 2 value(s) for 1 row(s)"]
    del FUNCTIONS["always_five"], FUNCTIONS["two_values"]
