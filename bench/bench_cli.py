"""How long the command line takes to answer when it runs nothing: ``cep --help`` and
``cep check rules/fsd.epl`` (the target: ``cep check`` under 0.5 s).

Each command runs ``--runs`` times as a fresh process (``python -m cep.cli``, what the
``cep`` script runs), one after the other; the figures are the median, the fastest and
the slowest wall time, beside the bare interpreter's start (``python -c pass``), which no
change to cep can remove. The machine is shared: its load average is recorded at the
start and at the end.

Writes bench/results/cli.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from common import ROOT, load_average, timed, write_results

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "cep --help": [sys.executable, "-m", "cep.cli", "--help"],
    "cep check rules/fsd.epl": [sys.executable, "-m", "cep.cli", "check",
                                str(ROOT / "rules" / "fsd.epl")],
}


def measure(command: list[str], runs: int) -> dict:
    """Wall seconds of ``runs`` fresh processes of ``command`` (each must succeed)."""
    seconds = [timed(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                                            cwd=ROOT)) for _ in range(runs)]
    return {"median_s": round(statistics.median(seconds), 3),
            "min_s": round(min(seconds), 3), "max_s": round(max(seconds), 3),
            "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per command")
    args = parser.parse_args()
    results: dict = {"load_average_at_start": load_average()}
    print(f"load average at start: {results['load_average_at_start']} "
          f"({os.cpu_count()} CPUs)", flush=True)
    for name, command in COMMANDS.items():
        results[name] = figures = measure(command, args.runs)
        print(f"{name:26s} median {figures['median_s']:.3f}s (fastest {figures['min_s']:.3f}s, "
              f"slowest {figures['max_s']:.3f}s, {args.runs} runs)", flush=True)
    write_results(results, "cli.json")


if __name__ == "__main__":
    main()
