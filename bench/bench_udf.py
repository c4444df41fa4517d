"""User functions in a rule, per form: how much faster is the vectorised form (numpy
arrays in, an array out) than the scalar one (one Python call per value), and what does
a function that raises on a few records cost?

1M events (4096 keys) built in memory as the input reader types them, through the
reference evaluator (the local runner's engine, one core), one stateless rule each:

* ``builtin``: ``sqrt(v) * 10`` with the language's own functions (the floor);
* ``scalar``: the same as a Python function registered per value;
* ``vectorized``: the same as a function registered with ``vectorized=True``;
* ``scalar_raising`` / ``vectorized_raising``: the same functions, raising on 10 of
  the values (those records become dead letters; the vectorised form is split in
  halves down to them).

Best of 3 per row, the whole rule (``rule``) and the function's own call over the 1M
values (``call``: ``UserFunction.call``, what the rule spends in it). Writes
bench/results/udf.json.

    python bench/bench_udf.py [--events 1000000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from common import best_of, make_events, write_results

from cep.engine.functions import FUNCTIONS, UserFunction, register_udf
from cep.engine.table import SEQ
from cep.engine.udf_errors import collecting
from cep.reference import run_reference
from grammar.compile import compile_text

SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
CALLS = {"builtin": "sqrt(v) * 10", "scalar": "scaled(v)", "vectorized": "scaled_vec(v)",
         "scalar_raising": "scaled_or_fail(v)",
         "vectorized_raising": "scaled_vec_or_fail(v)"}


def register(bad: set[float]) -> None:
    """The functions the rules call; the raising ones fail on the values in ``bad``."""

    def scaled(v: float) -> float:
        return math.sqrt(v) * 10

    def scaled_vec(v: np.ndarray) -> np.ndarray:
        return np.sqrt(v) * 10

    def scaled_or_fail(v: float) -> float:
        if v in bad:
            raise ValueError(f"bad value {v}")
        return math.sqrt(v) * 10

    bad_array = np.array(sorted(bad))

    def scaled_vec_or_fail(v: np.ndarray) -> np.ndarray:
        if np.isin(v, bad_array).any():
            raise ValueError("a bad value")
        return np.sqrt(v) * 10

    register_udf("scaled", scaled, ["double"], "double")
    register_udf("scaled_vec", scaled_vec, ["double"], "double", vectorized=True)
    register_udf("scaled_or_fail", scaled_or_fail, ["double"], "double")
    register_udf("scaled_vec_or_fail", scaled_vec_or_fail, ["double"], "double",
                 vectorized=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=4096)
    args = parser.parse_args()
    table = make_events(args.events, args.keys)
    bad = set(table["v"][:: max(1, args.events // 10)][:10].tolist())
    register(bad)
    results: dict[str, object] = {"events": args.events}
    for name, call in CALLS.items():
        module = compile_text(SCHEMA + f"@Name('r') SELECT k, {call} AS x FROM S;", name)
        failures: list = []

        def once(module=module, failures=failures) -> None:
            with collecting() as found:
                out = run_reference(module, {"S": table})
            assert len(out[SEQ] if SEQ in out else out["seq"]) == args.events
            failures[:] = found

        seconds = best_of(once)
        function = FUNCTIONS.get(call.split("(")[0])
        call_s = (best_of(lambda function=function: function.call(table["v"]))
                  if isinstance(function, UserFunction) else None)
        results[name] = {"seconds": round(seconds, 3),
                         "events_per_s": round(args.events / seconds),
                         "call_s": round(call_s, 3) if call_s is not None else None,
                         "failed_records": len({f.seq for f in failures})}
        print(f"{name:20s} rule {seconds:7.3f} s {args.events / seconds:12,.0f} events/s  "
              f"call {call_s if call_s is None else round(call_s, 3)} s  "
              f"{len({f.seq for f in failures})} failed records")
    write_results(results, "udf.json")


if __name__ == "__main__":
    main()
