"""User functions that hang or end their process (``cep.engine.udf_isolation``): the
run goes on, the record they misbehaved on is one dead letter naming the function and
the reason, and every event equals the oracle's: the same rules with the same
functions raising on those records instead, run in the job's process (the well-known
path, ``udf_timeout=0``). Real processes throughout: a function that sleeps, calls
``os._exit(1)``, or segfaults, in the worker the engine starts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.udf_isolation_sample import EXIT, HANG, RAISE, RULES, reasons, udf_file
from support.udf_sample import letters

from cep.engine import udf_isolation
from cep.engine.functions import FUNCTIONS, UserFunction, register_udf
from cep.engine.udf.files import load_udf_files
from cep.run import run
from cep.run_config import Output, RunConfig
from grammar.compile import compile_text

DATA = Path(__file__).parent.parent / "data"
SCALAR_ID, VECTOR_ID = 1003, 1008  # English tweets of tests/data/tweets_small.jsonl
LIMIT = 1.0


def _run(tmp_path: Path, name: str, udf: Path, limit: float, batch_size: int):
    load_udf_files([udf])
    module = compile_text(RULES, "tagged.epl")
    dead = tmp_path / f"{name}.dead.jsonl"
    result = run(module, RunConfig(str(DATA / "tweets_small.jsonl"), runner="local",
                                   output=Output(collect=True), dead_letter=str(dead),
                                   batch_size=batch_size, udf_timeout=limit))
    return result, letters(dead)


def _offset(ident: int) -> int:
    offset = 0
    for line in (DATA / "tweets_small.jsonl").read_text().splitlines(keepends=True):
        if json.loads(line)["id"] == ident:
            return offset
        offset += len(line.encode())
    raise AssertionError(ident)


@pytest.mark.parametrize(("scalar_bad", "vector_bad"), [(HANG, EXIT), (EXIT, HANG)],
                         ids=["scalar-hangs", "vectorised-hangs"])
def test_a_function_that_hangs_or_exits_costs_its_record_only(tmp_path, scalar_bad,
                                                               vector_bad):
    bad, oracle = (udf_file(tmp_path, SCALAR_ID, scalar_bad, VECTOR_ID, vector_bad),
                   udf_file(tmp_path, SCALAR_ID, RAISE, VECTOR_ID, RAISE))
    result, found = _run(tmp_path, "bad", bad, LIMIT, 7)  # batches: windows re-evaluate
    expected, expected_letters = _run(tmp_path, "oracle", oracle, 0, 7)
    assert found == {_offset(SCALAR_ID): {reasons(scalar_bad, "tag", LIMIT)},
                     _offset(VECTOR_ID): {reasons(vector_bad, "vtag", LIMIT)}}
    assert expected_letters == {_offset(SCALAR_ID): {reasons(RAISE, "tag", LIMIT)},
                                _offset(VECTOR_ID): {reasons(RAISE, "vtag", LIMIT)}}
    assert result.records == expected.records
    assert result.totals["udf_failures"] == expected.totals["udf_failures"] == 2
    tagged = {r["id"]: r for r in result.records or [] if r["rule"] == "tagged"}
    assert tagged[SCALAR_ID]["t"] is None and tagged[SCALAR_ID]["v"] is not None
    assert tagged[VECTOR_ID]["v"] is None and tagged[VECTOR_ID]["t"] is not None
    assert tagged[1000]["t"] == "earthquake-30" and tagged[1000]["v"] == 22 + 1000 % 7


SEGFAULT_TEXT = '''
import ctypes
import sys

from cep.engine.functions import register_udf


def crash(x):
    if x == 3:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    print("printed by a user function", x)  # to standard error, not down the pipe
    return x + 1


def noisy(x):
    sys.stdout.write("x" * 100000)
    return x * 2


register_udf("crash", crash, ["long"], "long")
register_udf("noisy", noisy, ["long"], "long", vectorized=True)
'''


def test_a_segfault_is_a_signal_and_printing_does_not_garble_the_pipe(tmp_path):
    path = tmp_path / "udfs_isolated_segfault.py"
    path.write_text(SEGFAULT_TEXT)
    load_udf_files([path])
    values = np.arange(8, dtype=np.int64)
    out, failed, messages = udf_isolation.call(FUNCTIONS["crash"], (values,))
    assert failed is not None and np.flatnonzero(failed).tolist() == [3]
    assert messages == ["ended its process (signal 11, SIGSEGV)"]
    assert out[~failed].tolist() == [1, 2, 3, 5, 6, 7, 8]
    out, failed, _ = udf_isolation.call(FUNCTIONS["noisy"], (values,))
    assert failed is None and out.tolist() == (values * 2).tolist()


def _raising(bad: set[int]):
    def fn(x: int) -> int:
        if x in bad:
            raise ValueError(f"bad {x}")
        return x * 3

    return fn


def test_isolated_calls_equal_in_process_calls_and_closures_stay_in_process(tmp_path):
    """Differential: the worker's values, failed mask and messages equal
    ``UserFunction.call``'s in this process, for a scalar and a vectorised function
    that raise; a closure (which the worker cannot import) runs in this process."""
    path = tmp_path / "udfs_isolated_same.py"
    path.write_text(
        "import numpy as np\nfrom cep.engine.functions import register_udf\n"
        "def thrice(x):\n    if x % 5 == 0:\n        raise ValueError(f'bad {x}')\n"
        "    return x * 3\n"
        "def thrice_vec(x):\n    if (x % 5 == 0).any():\n        raise ValueError('bad')\n"
        "    return x * 3\n"
        "register_udf('thrice', thrice, ['long'], 'long')\n"
        "register_udf('thrice_vec', thrice_vec, ['long'], 'long', vectorized=True)\n")
    load_udf_files([path])
    rng = np.random.default_rng(7)
    for name in ("thrice", "thrice_vec"):
        spec = FUNCTIONS[name]
        assert isinstance(spec, UserFunction)
        assert udf_isolation.target_of(spec) is not None
        for n in (1, 2, 17, 300):
            values = rng.integers(0, 1000, n)
            got, want = udf_isolation.call(spec, (values,)), spec.call(values)
            assert got[0].tolist() == want[0].tolist() and got[2] == want[2]
            assert (got[1] is None) == (want[1] is None)
            assert got[1] is None or got[1].tolist() == want[1].tolist()
        assert udf_isolation.call(spec, (np.int64(4),))[0].item() == 12  # constants
    register_udf("closure_fn", _raising({2}), ["long"], "long")
    spec = FUNCTIONS["closure_fn"]
    assert udf_isolation.target_of(spec) is None
    out, _, messages = udf_isolation.call(spec, (np.arange(4),))
    assert out.tolist()[:2] == [0, 3] and messages == ["ValueError: bad 2"]
    del FUNCTIONS["closure_fn"]


SLOW_TEXT = '''
import time

from cep.engine.functions import register_udf


def sleepy(x):
    time.sleep(0.05)
    return x + 1


register_udf("sleepy", sleepy, ["long"], "long")
'''


def test_the_limit_is_per_call_not_per_batch(tmp_path):
    """40 calls of 0.05 s under a limit of 0.5 s: 2 s for the batch, no call near the
    limit, so no value fails (the chunks of a slow function stay one row each)."""
    path = tmp_path / "udfs_isolated_slow.py"
    path.write_text(SLOW_TEXT)
    load_udf_files([path])
    values = np.arange(40, dtype=np.int64)
    with udf_isolation.configured(0.5):
        out, failed, messages = udf_isolation.call(FUNCTIONS["sleepy"], (values,))
    assert failed is None and messages == [] and out.tolist() == (values + 1).tolist()


def test_cep_run_with_a_function_that_hangs_finishes(tmp_path):
    """``cep run --udf-timeout``: the command line's run finishes, exit 0, the record a
    dead letter and the summary counting it."""
    import subprocess
    import sys

    rules = tmp_path / "tagged.epl"
    rules.write_text(RULES)
    funcs = udf_file(tmp_path, SCALAR_ID, HANG, VECTOR_ID, EXIT)
    dead = tmp_path / "dead.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "cep.cli", "run", str(rules), "--input",
         str(DATA / "tweets_small.jsonl"), "--runner", "local", "--udf", str(funcs),
         "--udf-timeout", "1", "--output", str(tmp_path / "out.jsonl"),
         "--dead-letter", str(dead)],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2])
    assert result.returncode == 0, result.stderr
    assert letters(dead) == {_offset(SCALAR_ID): {"tag() timed out after 1s"},
                             _offset(VECTOR_ID): {"vtag() ended its process (exit code 1)"}}
    assert "  2 records on which user functions failed dead-lettered to" in result.stderr


def test_the_python_api_takes_the_limit(tmp_path):
    """``Rules.run(..., udf_timeout=)``: the run finishes, the two records counted."""
    import cep

    funcs = udf_file(tmp_path, SCALAR_ID, HANG, VECTOR_ID, EXIT)
    rules = cep.compile_rules(RULES, udf=[funcs])
    frame = rules.run(str(DATA / "tweets_small.jsonl"), runner="local", udf_timeout=1,
                      dead_letter=str(tmp_path / "dead.jsonl"))
    tagged = frame[frame["rule"] == "tagged"].set_index("id")
    assert tagged["t"].isna()[SCALAR_ID] and not tagged["t"].isna()[1000]
    assert tagged["v"].isna()[VECTOR_ID] and not tagged["v"].isna()[1000]
    assert rules.last_run is not None and rules.last_run.udf_failures == 2
