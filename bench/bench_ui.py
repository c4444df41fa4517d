"""What the live view costs a run: the same run with and without its server and a client
polling it, throughput compared (target, issue 30: at most 2 % less).

Each pair runs FSD over the built-in ``tweets`` generator twice in one process (one
Spark session, warmed by an unmeasured first run): once plain, once as ``cep run --ui``
runs it (the server bound before the run, attached to its run directory through
``on_workdir``), with a client in another process (as a browser would be) fetching
``/api/state?since=…`` every second, as the page does, and ``/metrics`` every 5 s (a
Prometheus scraping three times as often as its default). The order within a pair
alternates, so a machine that gets busier or quieter over time does not favour either;
the overhead is the median over pairs of 1 − rate(with) / rate(without), where a rate is
events over the run's seconds after Spark's session start. On a shared, loaded machine
that difference is mostly noise, so the server's own cost is measured too: the CPU
seconds its threads spent answering (``LiveServer.cpu_s``) over the run's wall seconds,
the share of one core the view took from the run.

Run: ``python bench/bench_ui.py --n 200000 --batch-size 25000 --pairs 3``. Prints a table
and writes ``bench/results/ui.json``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, RULES, write_results

from cep.run import run
from cep.run_config import Output, RunConfig, RunResult
from cep.ui import serve_run
from grammar.compile import compile_file

TARGET = 0.02
# the client: the page's poll (1 s) and a fast Prometheus scrape (5 s), until killed
CLIENT = """
import sys, time, urllib.request
url, polls, last = sys.argv[1], 0, None
while True:
    since = "" if last is None else f"?since={last}"
    try:
        import json
        state = json.loads(urllib.request.urlopen(url + "api/state" + since, timeout=10).read())
        if state["last_batch"] is not None:
            last = state["last_batch"]
        if polls % 5 == 0:
            urllib.request.urlopen(url + "metrics", timeout=10).read()
        polls += 1
    except OSError:
        pass
    time.sleep(1.0)
"""


def one_run(args: argparse.Namespace, with_ui: bool) -> dict:
    module = compile_file(RULES / "fsd.epl")
    with tempfile.TemporaryDirectory(prefix="cep-bench-ui-") as tmp:
        config = RunConfig(
            {"Tweet": f"tweets:n={args.n}"}, output=Output(str(Path(tmp) / "events.jsonl")),
            engines=args.engines, batch_size=args.batch_size, master=args.master,
            progress=False, strategy=args.strategy, dead_letter=str(Path(tmp) / "dead.jsonl"))
        if not with_ui:
            return _figures(run(module, config), with_ui)
        with serve_run(None, "127.0.0.1", 0) as server:
            client = subprocess.Popen([sys.executable, "-c", CLIENT, server.url])
            try:
                result = run(module, config, on_workdir=server.attach)
            finally:
                client.kill()
                client.wait()
            figures = _figures(result, with_ui)
            figures["server_cpu_s"] = round(server.cpu_s, 4)
            figures["server_cpu_share"] = round(server.cpu_s / figures["seconds"], 5)
        return figures


def _figures(result: RunResult, with_ui: bool) -> dict:
    seconds = result.seconds - result.session_s
    return {"ui": with_ui, "events": result.events, "seconds": round(seconds, 3),
            "events_per_s": round(result.events / seconds, 1), "batches": len(result.metrics)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="tweets per run")
    parser.add_argument("--batch-size", type=int, default=25_000)
    parser.add_argument("--engines", type=int, default=2)
    parser.add_argument("--strategy", default="kg")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "ui.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    warm = one_run(argparse.Namespace(**{**vars(args), "n": args.batch_size}), False)
    pairs = []
    for i in range(args.pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        runs = {flag: one_run(args, flag) for flag in order}
        overhead = 1 - runs[True]["events_per_s"] / runs[False]["events_per_s"]
        pairs.append({"without": runs[False], "with": runs[True],
                      "overhead": round(overhead, 4), "order": ["with" if f else "without"
                                                                for f in order]})
        print(f"pair {i}: without {runs[False]['events_per_s']:,.0f} ev/s, with "
              f"{runs[True]['events_per_s']:,.0f} ev/s, overhead {100 * overhead:+.2f}%; "
              f"the server's CPU {100 * runs[True]['server_cpu_share']:.3f}% of the run's "
              "wall time", flush=True)
    median = statistics.median(p["overhead"] for p in pairs)
    cpu_share = max(p["with"]["server_cpu_share"] for p in pairs)
    print(f"median overhead {100 * median:+.2f}% (target at most {100 * TARGET:.0f}%); "
          f"the server's own CPU at most {100 * cpu_share:.3f}% of a core")
    write_results({
        "what": "FSD on tweets, the same run with and without the live view's server and "
                "a client polling /api/state each second and /metrics each 5 s",
        "options": {k: v for k, v in vars(args).items() if k != "out"},
        "median_overhead": round(median, 4), "target": TARGET,
        "server_cpu_share_max": cpu_share,
        "within_target": median <= TARGET, "pairs": pairs, "warm_up": warm,
        "seconds": round(time.perf_counter() - started, 1),
    }, args.out)


if __name__ == "__main__":
    main()
