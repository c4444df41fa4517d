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

* ``scalar_batches_10k``: ``scalar`` with the input cut into batches of 10,000 events
  (a call per batch: what a round-trip to the isolated worker costs per batch).

The functions are in a file loaded as ``--udf`` loads one, so they run where a run's
would: in the isolated worker process (``cep.engine.udf_isolation``), or in this
process with ``--udf-timeout 0``. Best of 3 per row, the whole rule (``rule``) and the
function's own call over the 1M values (``call``: ``udf_isolation.call``, what the
rule spends in it).

The bench runs as whole processes, before (``--udf-timeout 0``: in the job's process,
as before isolation) and after (the default: isolated), in interleaved rounds, and
writes each row's best after (``seconds``, ``call_s``) and before (``*_in_process``)
and their ratio, with the load average, to bench/results/udf.json.

    python bench/bench_udf.py [--events 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import best_of, load_average, make_events, write_results

from cep.engine import udf_isolation
from cep.engine.functions import FUNCTIONS, UserFunction
from cep.engine.table import SEQ
from cep.engine.udf.files import load_udf_files
from cep.engine.udf_errors import collecting
from cep.reference import run_reference
from cep.run_config import DEFAULT_UDF_TIMEOUT
from grammar.compile import compile_text

SCHEMA = "CREATE SCHEMA S (k long, ts timestamp, v double, kind int) TIMESTAMP ts;\n"
CALLS = {"builtin": "sqrt(v) * 10", "scalar": "scaled(v)", "vectorized": "scaled_vec(v)",
         "scalar_raising": "scaled_or_fail(v)",
         "vectorized_raising": "scaled_vec_or_fail(v)", "scalar_batches_10k": "scaled(v)"}
BATCHES = {"scalar_batches_10k": 10_000}

UDF_TEXT = """
import math

import numpy as np

from cep.engine.functions import register_udf

BAD = set({bad!r})
BAD_ARRAY = np.array(sorted(BAD))


def scaled(v):
    return math.sqrt(v) * 10


def scaled_vec(v):
    return np.sqrt(v) * 10


def scaled_or_fail(v):
    if v in BAD:
        raise ValueError(f"bad value {{v}}")
    return math.sqrt(v) * 10


def scaled_vec_or_fail(v):
    if np.isin(v, BAD_ARRAY).any():
        raise ValueError("a bad value")
    return np.sqrt(v) * 10


register_udf("scaled", scaled, ["double"], "double")
register_udf("scaled_vec", scaled_vec, ["double"], "double", vectorized=True)
register_udf("scaled_or_fail", scaled_or_fail, ["double"], "double")
register_udf("scaled_vec_or_fail", scaled_vec_or_fail, ["double"], "double",
             vectorized=True)
"""


def register(bad: set[float], directory: str) -> None:
    """The functions the rules call, from a file as ``--udf`` loads it; the raising ones
    fail on the values in ``bad``."""
    path = Path(directory) / "bench_udf_functions.py"
    path.write_text(UDF_TEXT.format(bad=sorted(bad)))
    load_udf_files([path])


def compare(rounds: int, events: int) -> None:
    """Whole processes, before (in-process) and after (isolated), interleaved."""
    found: dict[str, list[dict]] = {"before": [], "after": []}
    start_load = load_average()
    for _ in range(rounds):
        for side, limit in (("before", 0.0), ("after", DEFAULT_UDF_TIMEOUT)):
            out = subprocess.run([sys.executable, __file__, "--events", str(events),
                                  "--udf-timeout", str(limit), "--one"],
                                 check=True, capture_output=True, text=True)
            found[side].append(json.loads(out.stdout.splitlines()[-1]))
            print(side, "round done", file=sys.stderr)
    results: dict[str, object] = {"events": events, "rounds": rounds,
                                  "udf_timeout_after": DEFAULT_UDF_TIMEOUT,
                                  "load_average_at_start": start_load}
    for name in CALLS:
        before = [r[name] for r in found["before"]]
        after = [r[name] for r in found["after"]]
        seconds, in_process = min(r["seconds"] for r in after), min(r["seconds"] for r in before)
        row: dict[str, object] = {
            "seconds": seconds, "events_per_s": round(events / seconds),
            "seconds_in_process": in_process, "rule_ratio": round(seconds / in_process, 2),
            "call_s": None, "call_s_in_process": None,
            "failed_records": after[-1]["failed_records"],
            "failed_records_in_process": before[-1]["failed_records"]}
        if after[-1]["call_s"] is not None:
            row["call_s"] = min(r["call_s"] for r in after)
            row["call_s_in_process"] = min(r["call_s"] for r in before)
        results[name] = row
        print(f"{name:20s} {row}")
    write_results(results, "udf.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--udf-timeout", type=float, default=DEFAULT_UDF_TIMEOUT)
    parser.add_argument("--one", action="store_true", help="one process's measurement, "
                        "with this --udf-timeout, printed as JSON (what the rounds run)")
    args = parser.parse_args()
    if not args.one:
        compare(args.rounds, args.events)
        return
    udf_isolation.configure(args.udf_timeout)
    table = make_events(args.events, args.keys)
    bad = set(table["v"][:: max(1, args.events // 10)][:10].tolist())
    with tempfile.TemporaryDirectory() as directory:
        register(bad, directory)
        results = measure(table, args.events)
    results["udf_timeout"] = args.udf_timeout
    print(json.dumps(results))


def measure(table: dict, events: int) -> dict[str, object]:
    """Each row's best of 3."""
    results: dict[str, object] = {"events": events}
    for name, call in CALLS.items():
        module = compile_text(SCHEMA + f"@Name('r') SELECT k, {call} AS x FROM S;", name)
        failures: list = []
        batch = BATCHES.get(name)

        def once(module=module, failures=failures, batch=batch) -> None:
            with collecting() as found:
                out = run_reference(module, {"S": table}, batch)
            assert len(out[SEQ] if SEQ in out else out["seq"]) == events
            failures[:] = found

        seconds = best_of(once)
        function = FUNCTIONS.get(call.split("(")[0])
        call_s = (best_of(lambda function=function: udf_isolation.call(function,
                                                                      (table["v"],)))
                  if isinstance(function, UserFunction) else None)
        results[name] = {"seconds": round(seconds, 3),
                         "events_per_s": round(events / seconds),
                         "call_s": round(call_s, 3) if call_s is not None else None,
                         "failed_records": len({f.seq for f in failures})}
        print(f"{name:20s} rule {seconds:7.3f} s {events / seconds:12,.0f} events/s  "
              f"call {call_s if call_s is None else round(call_s, 3)} s  "
              f"{len({f.seq for f in failures})} failed records", file=sys.stderr)
    return results


if __name__ == "__main__":
    main()
