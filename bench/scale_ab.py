"""Two trees of cep side by side on a mid-run scale change: the same
``bench_scale_midrun.py --no-unscaled`` from each, in interleaved rounds, and what each
change cost.

    git worktree add --detach /work/wt/before COMMIT_A
    git worktree add --detach /work/wt/after COMMIT_B
    python bench/scale_ab.py /work/wt/before /work/wt/after [--rounds 2] [--out scale-ab.json]
    python bench/scale_ab.py /work/wt/before /work/wt/after --reuse DIR --out NAME

Why: the issue's target is that a scale change costs at most one normal batch more than
a batch without it, and one run of the bench moves by a few tenths of a batch; a change
to what a change costs is measured against the tree before it in the same session, each
side a whole process of its own tree (``PYTHONPATH``). Each run's file goes to
``bench/results/scale_ab/<out>-<side>-<round>.json``; ``--reuse DIR`` summarises files
of those names in DIR instead of running.

Per run and change (the scale-out and the scale-in; the bench's first change, to
``--lo`` at batch 2, moves empty windows and is left out): keys and MB handed over, the
extra time in normal batches (``bench_scale_midrun.py``'s ``extra_over_normal``), and
the engines' task seconds summed of export in the batch that hands over and of import
and save in the first batch at the new count; per run the ``--hi`` phase's events/s,
KG's at ``--hi`` on the same nodes, and whether the events equalled KG's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import RESULTS, write_results
from nodes_ab import tree_commit

from cep.provenance import load_average

SIDES = ("before", "after")


def run_side(tree: Path, raw: Path) -> None:
    """One ``bench_scale_midrun.py --no-unscaled`` of ``tree``, its file moved to ``raw``."""
    subprocess.run([sys.executable, "bench/bench_scale_midrun.py", "--no-unscaled",
                    "--out", raw.name], check=True, cwd=tree,
                   env={**os.environ, "PYTHONPATH": str(tree)})
    raw.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(tree / "bench" / "results" / raw.name, raw)


def change_rows(run: dict) -> list[dict]:
    """The run's scale changes after the first, each with what it cost."""
    batches = {b["batch"]: b["stage_s"] for b in run["batches"]}
    rows = []
    for change in run["change_costs"][1:]:
        at = change["at_batch"]
        handing, first = batches.get(at - 1, {}), batches.get(at, {})
        rows.append({"from": change["from"], "to": change["to"], "keys": change["keys"],
                     "mb": round(change["bytes"] / 1e6, 1),
                     "extra_over_normal": change.get("extra_over_normal"),
                     "export_s": round(handing.get("export", 0.0), 2),
                     "import_s": round(first.get("import", 0.0), 2),
                     "save_s": round(first.get("save", 0.0), 2)})
    return rows


def summary(run: dict) -> dict:
    high = max(run["phases"], key=lambda p: max(p["engines"]))
    return {"changes": change_rows(run), "hi_events_per_s": high["events_per_s"],
            "hi_batch_s": high["batch_s"], "kg_events_per_s": run["kg_fixed"]["events_per_s"],
            "events_equal_kg": run["events_equal_kg"]}


def medians(rounds: list[dict]) -> dict[str, dict]:
    """Per side, per change (by its place in the run): the median of each figure."""
    out: dict[str, dict] = {}
    for side in SIDES:
        runs = [r[side] for r in rounds]
        changes = []
        for i in range(min(len(r["changes"]) for r in runs)):
            rows = [r["changes"][i] for r in runs]
            changes.append({"from": rows[0]["from"], "to": rows[0]["to"], **{
                k: round(statistics.median(row[k] for row in rows), 3)
                for k in ("mb", "extra_over_normal", "export_s", "import_s", "save_s")}})
        out[side] = {"changes": changes, "hi_events_per_s": round(statistics.median(
            r["hi_events_per_s"] for r in runs), 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reuse", type=Path, help="summarise the files there; run nothing")
    parser.add_argument("--out", default="scale-ab.json")
    args = parser.parse_args(argv)
    started, load = time.strftime("%Y-%m-%dT%H:%M:%S%z"), load_average()
    stem = Path(args.out).stem
    where = args.reuse or RESULTS / "scale_ab"
    rounds = []
    reused = {}
    if args.reuse is not None:  # the runs' own times, not the summary's
        first = json.loads((where / f"{stem}-before-1.json").read_text())
        started, load = None, first.get("load_average_at_start", load)
        reused = {"first_run_written": first.get("date")}
    for number in range(1, args.rounds + 1):
        sides = {}
        for side, tree in zip(SIDES, (args.before, args.after), strict=True):
            raw = where / f"{stem}-{side}-{number}.json"
            if args.reuse is None:
                run_side(tree.resolve(), raw)
            sides[side] = summary(json.loads(raw.read_text()))
            print(number, side, json.dumps(sides[side]), flush=True)
        rounds.append(sides)
    write_results({"bench": "scale_ab", "started": started, "load_average_at_start": load,
                   "before": tree_commit(args.before), "after": tree_commit(args.after),
                   **reused, "rounds": rounds, "medians": medians(rounds)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
