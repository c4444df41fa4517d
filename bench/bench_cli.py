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
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "cep --help": [sys.executable, "-m", "cep.cli", "--help"],
    "cep check rules/fsd.epl": [sys.executable, "-m", "cep.cli", "check",
                                str(ROOT / "rules" / "fsd.epl")],
}


def measure(command: list[str], runs: int) -> dict:
    """Wall seconds of ``runs`` fresh processes of ``command`` (each must succeed)."""
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        seconds.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(seconds), 3),
            "min_s": round(min(seconds), 3), "max_s": round(max(seconds), 3),
            "runs": runs}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per command")
    args = parser.parse_args()
    results: dict = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "machine": f"{platform.machine()} {platform.system()} Python "
                   f"{platform.python_version()}",
        "load_average_at_start": load(),
    }
    print(f"load average at start: {results['load_average_at_start']} "
          f"({os.cpu_count()} CPUs)", flush=True)
    for name, command in COMMANDS.items():
        results[name] = figures = measure(command, args.runs)
        print(f"{name:26s} median {figures['median_s']:.3f}s (fastest {figures['min_s']:.3f}s, "
              f"slowest {figures['max_s']:.3f}s, {args.runs} runs)", flush=True)
    results["load_average_at_end"] = load()
    out = ROOT / "bench" / "results" / "cli.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
