"""``cep report FILE… -o DIR``: PNG plots from runs' ``--metrics`` files (see
:mod:`cep.report`), the DLB paper's Figures 3 and 4 from ``cep bench`` results (see
:mod:`cep.paper_figures`), or Guo & Zhou's Fig. 6 from ``bench/bench_speedup.py``'s
results (see :mod:`cep.speedup_figure`)."""

from __future__ import annotations

import argparse

from cep.cli.errors import CommandError
from cep.paper_figures import draw_figures, is_bench_results
from cep.report import draw
from cep.speedup_figure import draw_speedup, is_speedup_results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("metrics", nargs="+", metavar="FILE",
                        help="metrics JSON-lines files (one per run), or cep bench --json's "
                        "results (one per order of the tweets and cluster): then the DLB "
                        "paper's Figures 3 and 4; or bench/bench_speedup.py's results: "
                        "then the speedup against the nodes (Guo & Zhou's Fig. 6)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR")
    parser.add_argument("--threshold", type=float, default=None, metavar="PCT",
                        help="the θ line on the RSTD plot (default: the θ each run used, "
                        "from its metrics)")
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    speedup = [path for path in args.metrics if is_speedup_results(path)]
    bench = [path for path in args.metrics if is_bench_results(path)]
    runs = [path for path in args.metrics if path not in bench and path not in speedup]
    try:
        paths = draw_figures(bench, args.output, args.threshold) if bench else []
        paths += draw_speedup(speedup, args.output)
        if runs:
            paths += draw(runs, args.output, args.threshold)
    except (OSError, ValueError, KeyError) as err:
        raise CommandError(f"cannot draw the report: {err}") from err
    for path in paths:
        print(path)
    return 0
