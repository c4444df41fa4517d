"""``cep report METRICS... -o DIR``: PNG plots of one or more runs' per-batch metrics.

Each metrics file (``cep run --metrics``) is one series, named by its strategy (or file
name). Plots, after the DLB paper's figures: throughput over time (Fig. 3), engine-load
RSTD over time with the threshold θ, keys migrated per batch, and per-engine load.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt
import numpy as np


def load_series(path: str) -> tuple[str, list[dict]]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    batches = [r for r in rows if "batch" in r and "events_in" in r]
    if not batches:
        raise ValueError(f"{path}: no per-batch metrics (write them with cep run --metrics)")
    name = (batches[-1].get("strategy") or batches[-1].get("settings", {}).get("strategy")
            or Path(path).stem)
    return name, batches


def run_thresholds(series: list[tuple[str, list[dict]]]) -> list[float]:
    """The θ each run used (its metrics carry its settings), in order, without repeats."""
    found = [b["settings"]["threshold"] for _, batches in series for b in batches[-1:]
             if "threshold" in b.get("settings", {})]
    return list(dict.fromkeys(found))


def rstd_batches(batches: list[dict]) -> list[dict]:
    """The batches whose RSTD the plot draws: those that read events. The batch in which
    a bounded input ends reads none (all time passes in it), and its 0% is no balance."""
    return [b for b in batches if b.get("events_in", 1) or not b.get("input_ended")]


def _elapsed_and_rate(batches: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    wall = np.array([b.get("wall_time", i) for i, b in enumerate(batches)], dtype=float)
    events = np.array([b["events_in"] for b in batches], dtype=float)
    gaps = np.diff(wall, prepend=wall[0] - max(batches[0].get("sink_s", 1.0), 1e-3))
    return wall - wall[0] + gaps[0], events / np.maximum(gaps, 1e-3)


def draw(paths: list[str], out_dir: str, threshold: float | None = None) -> list[Path]:
    """Write the plots; returns the PNG paths. ``threshold``: the θ line on the RSTD
    plot; by default the θ each run's metrics say it used (15% for metrics without)."""
    series = [load_series(p) for p in paths]
    thresholds = [threshold] if threshold is not None else run_thresholds(series) or [15.0]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig: plt.Figure, name: str) -> None:
        path = out / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, batches in series:
        t, rate = _elapsed_and_rate(batches)
        ax.plot(t, rate, marker="o", ms=3, label=name)
    ax.set(title="Throughput over time", xlabel="elapsed s", ylabel="events/s")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, "throughput.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, batches in series:
        read = rstd_batches(batches)
        ax.plot([b["batch"] for b in read], [b["rstd"] for b in read], label=name)
    for theta in thresholds:
        ax.axhline(theta, color="red", ls="--", lw=1, label=f"θ = {theta:g}%")
    ax.set(title="Engine load imbalance (RSTD)", xlabel="batch", ylabel="RSTD %")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, "rstd.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(series)
    for i, (name, batches) in enumerate(series):
        x = np.array([b["batch"] for b in batches]) + i * width
        ax.bar(x, [b.get("exported_keys", 0) for b in batches], width=width, label=name)
    ax.set(title="Keys migrated per batch", xlabel="batch", ylabel="keys")
    ax.legend()
    ax.grid(alpha=0.3, axis="y")
    save(fig, "migrations.png")

    fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.6 * len(series)), squeeze=False)
    for ax, (name, batches) in zip(axes[:, 0], series, strict=True):
        loads = np.array([b["rows_per_engine"] for b in batches], dtype=float)
        x = [b["batch"] for b in batches]
        bottom = np.zeros(len(batches))
        for e in range(loads.shape[1]):
            ax.bar(x, loads[:, e], bottom=bottom, label=f"engine {e}")
            bottom += loads[:, e]
        ax.set(title=f"Per-engine load: {name}", xlabel="batch", ylabel="events")
        ax.legend(fontsize=7, ncol=loads.shape[1])
    save(fig, "engine_load.png")
    return written
