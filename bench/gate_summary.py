"""Summarise the Balancer's gate against the paper's Balancer on emulated nodes: the
``cep bench --json`` files of bench/results/gate-5nodes/ (``ORDER-MOVES-ROUND.json``,
each a KG run and the key-moving strategies, one bench per round and setting, the two
settings in turn), per order and setting: each strategy's rate against its own bench's
KG (x KG, over the whole run and over the Zipf 1.5 batches), median over rounds, its
moves and their cost. One KG run per bench: the ratios carry that run's noise too.

    python bench/gate_summary.py [DIR]

Writes bench/results/gate-5nodes.json.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from common import RESULTS, write_results


def summarise(folder: Path) -> dict:
    cells: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for path in sorted(folder.glob("*-*-*.json")):
        order, moves, _round = path.stem.rsplit("-", 2)
        data = json.loads(path.read_text())
        for row, result in zip(data["table1"], data["results"], strict=True):
            if row["strategy"] == "kg":
                continue
            cells[(order, moves, row["strategy"])].append({
                "x_kg": row["x_kg"], "skewed_x_kg": row["skewed_x_kg"],
                "avg_rstd": row["avg_rstd"], "keys_moved": result["keys_moved"],
                "move_s": result["move_s"], "equal_to_kg": row["equal_to_kg"]})
    out = []
    for (order, moves, strategy), runs in sorted(cells.items()):
        skewed = [r["skewed_x_kg"] for r in runs if r["skewed_x_kg"] is not None]
        out.append({
            "order": order, "moves": moves, "strategy": strategy, "rounds": len(runs),
            "x_kg": [round(r["x_kg"], 3) for r in runs],
            "x_kg_median": round(statistics.median(r["x_kg"] for r in runs), 3),
            "skewed_x_kg_median": round(statistics.median(skewed), 3) if skewed else None,
            "avg_rstd_median": round(statistics.median(r["avg_rstd"] for r in runs), 1),
            "keys_moved_median": statistics.median(r["keys_moved"] for r in runs),
            "move_s_median": round(statistics.median(r["move_s"] for r in runs), 3),
            "all_equal_to_kg": all(r["equal_to_kg"] for r in runs)})
    return {"cells": out}


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS / "gate-5nodes"
    result = summarise(folder)
    for cell in result["cells"]:
        print(f"{cell['order']:8s} {cell['moves']:7s} {cell['strategy']:6s} x KG "
              f"{cell['x_kg']} median {cell['x_kg_median']}, skewed "
              f"{cell['skewed_x_kg_median']}, RSTD {cell['avg_rstd_median']}%, keys moved "
              f"{cell['keys_moved_median']}, moves {cell['move_s_median']}s, "
              f"= KG {cell['all_equal_to_kg']}")
    write_results(result, "gate-5nodes.json")


if __name__ == "__main__":
    main()
