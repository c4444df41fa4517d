"""The DLB paper's Figures 3 and 4 from ``cep bench``'s results: throughput over time per
strategy, with the engines' load RSTD under it (``cep report BENCH.json -o DIR``).

Figure 3 compares the strategies (KG, DLB-L, DLB-H, LPTF, PKG) on 5 engines; Figure 4
sets DLB beside key grouping on 5 and on 6 engines (does balancing beat scaling out?).
Each has a column per order of the tweets, (a) default and (b) periodic Zipf, as the
paper does. A run's throughput at a batch is the batch's tweets over the time since the
previous batch committed, drawn from the end of its first batch on (``cep.bench``'s
measured window: the first batch holds the session's warm-up).

The input is what ``cep bench --json`` writes, one file per order of the tweets and
cluster: the runs of the files measured in one order share its column (a file without
an order is a column of its own, named by the file).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt
import numpy as np

from cep.run_config import DEFAULT_THRESHOLD

MODE_TITLES = {"default": "default order", "zipf-periodic": "periodic Zipf"}
FIGURE3 = ("kg", "dlb-l", "dlb-h", "lptf", "pkg")  # on 5 engines
FIGURE4 = ("dlb-l", "dlb-h", "kg")  # kg on 5 and on 6 engines
COLOURS = {"kg": "C0", "dlb-l": "C1", "dlb-h": "C2", "lptf": "C3", "pkg": "C4"}


def is_bench_results(path: str) -> bool:
    """Whether ``path`` holds ``cep bench --json`` results (one JSON document), not a
    run's per-batch metrics (JSON lines)."""
    try:
        document = json.loads(Path(path).read_text())
    except ValueError:
        return False
    return isinstance(document, dict) and isinstance(document.get("results"), list)


def load_modes(paths: list[str]) -> dict[str, list[dict]]:
    """Order of the tweets → the runs of every file measured in it (a column of the
    figures): one ``cep bench`` per order and cluster, KG on 6 engines beside the
    strategies on 5. The paper's default order comes first."""
    modes: dict[str, list[dict]] = {}
    for path in paths:
        document = json.loads(Path(path).read_text())
        modes.setdefault(document.get("order") or Path(path).stem, []).extend(
            document["results"])
    known = list(MODE_TITLES)
    return dict(sorted(modes.items(), key=lambda item: known.index(item[0])
                       if item[0] in known else len(known)))


def draw_figures(paths: list[str], out_dir: str, threshold: float | None = None
                 ) -> list[Path]:
    """Write ``figure3.png`` and ``figure4.png`` (the latter only where some run is on
    another number of engines); returns their paths."""
    modes = load_modes(paths)
    if not modes:
        raise ValueError("no bench results to draw")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    engines = sorted({r["engines"] for runs in modes.values() for r in runs})
    base = 5 if 5 in engines else engines[0]
    written = [_figure(modes, out / "figure3.png", "Fig. 3: throughput by strategy, "
                       f"{base} engines", lambda r: r["strategy"] in FIGURE3
                       and r["engines"] == base, threshold)]
    if len(engines) > 1:
        written.append(_figure(modes, out / "figure4.png", "Fig. 4: balancing against "
                               "key grouping on more engines",
                               lambda r: r["strategy"] in FIGURE4
                               and (r["strategy"] == "kg" or r["engines"] == base),
                               threshold))
    return written


def _figure(modes: dict[str, list[dict]], path: Path, title: str, chosen, threshold
            ) -> Path:
    fig, axes = plt.subplots(2, len(modes), figsize=(6.5 * len(modes), 6.5), squeeze=False,
                             sharex="col", gridspec_kw={"height_ratios": [2, 1]})
    for column, (mode, runs) in enumerate(modes.items()):
        top, bottom = axes[0, column], axes[1, column]
        shown = [r for r in runs if chosen(r)]
        base = min((r["engines"] for r in shown), default=0)
        for r in shown:
            label, style = run_label(r, base)
            t, rate = batch_rates(r)
            # a strategy's later rounds (cep bench --rounds): fainter, named once
            later = r.get("round", 1) > 1
            look = {"color": COLOURS.get(r["strategy"]), "alpha": 0.35 if later else 1.0,
                    "label": "_" + label if later else label}
            top.plot(t, rate, style, marker="o", ms=3, **look)
            bottom.plot(t, r["batch_rstd"][1:len(t) + 1], style, **look)
        theta = threshold if threshold is not None else DEFAULT_THRESHOLD
        bottom.axhline(theta, color="red", ls=":", lw=1, label=f"θ = {theta:g}%")
        letter = "ab"[column] if column < 2 else str(column)
        top.set(title=f"({letter}) {MODE_TITLES.get(mode, mode)}", ylabel="tweets/s")
        bottom.set(xlabel="seconds from the first batch's commit", ylabel="load RSTD %")
        top.legend(fontsize=8)
        bottom.legend(fontsize=7, ncol=2)
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_label(result: dict, base_engines: int) -> tuple[str, str]:
    """A run's name in a legend and its line style: the strategy, the load it balanced
    when not events (dotted), its engines when not the figure's fewest (dashed)."""
    label, style = result["strategy"], "-"
    if result.get("load", "events") != "events":
        label, style = f"{label}/{result['load']}", ":"
    if result["engines"] != base_engines:
        label, style = f"{label} ({result['engines']} engines)", "--"
    return label, style


def batch_rates(result: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each batch after the first: its commit's time from the first batch's commit, and
    its tweets per second since the previous commit. The batches after the input's last
    (the end of the input, where all time passes) read no tweets and are left out: a
    rate of 0 there would say the run slowed down when it had finished."""
    events = np.asarray(result["batch_events"], dtype=float)
    last = int(np.flatnonzero(events)[-1]) + 1 if events.any() else len(events)
    elapsed = np.asarray(result["batch_elapsed_s"], dtype=float)[:last]
    gaps = np.maximum(np.diff(elapsed), 1e-3)
    return elapsed[1:] - elapsed[0], events[1:last] / gaps
