"""``cep bench``: strategies side by side, next to the DLB paper's Table 1.

The paper ran each strategy for 40 minutes and counted the tweets processed; a cep run
processes its whole input, so the same figure is taken from its batches: the tweets
processed within a fixed time ``T`` of each run's measured window, ``T`` the shortest
window of the runs compared (so every run was still going at ``T``), beside the rate over
the whole window.

The measured window starts when a run's first batch commits. That batch is where a
session's executors load Spark's classes and start their Python workers (once per
session, so only the first strategy would pay it), and its routing is every strategy's
(maps 0 and 1 are key grouping): it says nothing about the strategy. The window ends
with the last batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cep.io.tweets.plan import parse_spec, tweets_plan
from cep.io.tweets.zipf_periodic import batch_exponents
from cep.paper import PAPER_ENGINES, PAPER_SECONDS, paper_run
from cep.run_config import DEFAULT_BATCH_SIZE
from cep.tables import HEADERS, MISSING, columns, count, number, pct, ratio, seconds
from cep.verify import StrategyResult, headroom_captured, run_name


def window_s(r: StrategyResult) -> float:
    """Seconds from the first batch's commit to the last's (0 with one batch)."""
    return r.batch_elapsed_s[-1] - r.batch_elapsed_s[0] if r.batch_elapsed_s else 0.0


def window_rate(r: StrategyResult, batches: Sequence[int] | None = None) -> float:
    """Events per second over the measured window, or over ``batches`` (indices from 1:
    a batch's time is the gap since the previous batch's commit). A run of one batch
    has no window: its rate is the whole run's."""
    return rate([r], batches)


def rate(runs: Sequence[StrategyResult], batches: Sequence[int] | None = None) -> float:
    """Events per second over the measured windows of ``runs`` (one strategy's rounds)
    together: their events over their seconds."""
    events = seconds = 0.0
    for r in runs:
        chosen = range(1, len(r.batch_events)) if batches is None else batches
        events += sum(r.batch_events[b] for b in chosen)
        seconds += sum(r.batch_elapsed_s[b] - r.batch_elapsed_s[b - 1] for b in chosen)
    if seconds <= 0:
        return float(np.mean([r.events_per_s for r in runs])) if batches is None else 0.0
    return events / seconds


def rounds_of(results: Sequence[StrategyResult]) -> list[list[StrategyResult]]:
    """The runs of each strategy (with its load measure and engines), in first-run
    order: one a round of ``cep bench --rounds``."""
    groups: dict[tuple[str, int], list[StrategyResult]] = {}
    for r in results:
        groups.setdefault((r.label, r.engines), []).append(r)
    return list(groups.values())


def processed_within(r: StrategyResult, seconds: float) -> float:
    """Events the run processed in the first ``seconds`` of its measured window,
    a batch's events counted as they arrive at an even pace across it."""
    done = np.cumsum(r.batch_events[1:], dtype=float)
    at = np.asarray(r.batch_elapsed_s[1:]) - r.batch_elapsed_s[0]
    if not len(at):
        return 0.0
    return float(np.interp(seconds, np.concatenate(([0.0], at)),
                           np.concatenate(([0.0], done))))


def _stream_and_source(spec: str) -> tuple[str, str]:
    """``Stream=source`` → (``Stream=``, ``source``); a bare source → ("", source)."""
    if "=" in spec.partition(":")[0]:
        stream, _, source = spec.partition("=")
        return f"{stream}=", source
    return "", spec


def _is_tweets(source: str) -> bool:
    return source.split(":", 1)[0] == "tweets"


def warm_up_inputs(inputs: Sequence[str], rows: int) -> tuple[str, ...]:
    """The inputs of an unmeasured warm-up run: a ``tweets`` generator cut to its first
    ``rows`` tweets, any other input whole. A session's first batches are slow (the
    executors' JVMs compile, their Python workers load the rules' kernels and build the
    generator's world), and the strategy that ran first would pay for it in its measured
    window. The cut stream keeps the whole one's ``users``, so it draws from the same
    world, which the Python workers then hold."""
    out = []
    for spec in inputs:
        stream, source = _stream_and_source(spec)
        if _is_tweets(source):
            params = {**parse_spec(source), "users": tweets_plan(source)["users"]}
            params["n"] = min(params.get("n", rows), rows)
            source = "tweets:" + ",".join(f"{k}={v}" for k, v in params.items())
        out.append(stream + source)
    return tuple(out)


def tweets_order(inputs: Sequence[str], batch_size: int | None) -> tuple[str, list[float]]:
    """The order of a ``tweets`` generator among ``inputs`` (``default`` for any other
    input: the paper's Table 1) and, under the periodic Zipf law, each batch's exponent."""
    for spec in inputs:
        source = _stream_and_source(spec)[1]
        if _is_tweets(source):
            mode = parse_spec(source).get("mode", "default")
            if mode == "zipf-periodic":
                return mode, batch_exponents(source, batch_size or DEFAULT_BATCH_SIZE)
            return mode, []
    return "default", []


def phase_batches(exponents: Sequence[float], exponent: float) -> list[int]:
    """Indices (from 1: the measured window) of the batches in a Zipf phase."""
    return [b for b, e in enumerate(exponents) if b and e == exponent]


def format_bench(results: list[StrategyResult], mode: str = "default",
                 exponents: Sequence[float] = ()) -> str:
    """Table 1 (each strategy's figures beside the paper's), the diagnostics that say why,
    and where the time went. ``mode``: the tweets' order (``default`` or
    ``zipf-periodic``), which the paper's figures are taken for; ``exponents``: the Zipf
    exponent of each batch, for the rate in the skewed phases."""
    return "\n\n".join((format_table1(results, mode, exponents), format_diagnostics(results),
                        format_stages(results)))


def table1(results: list[StrategyResult], mode: str, exponents: Sequence[float] = ()
           ) -> list[dict]:
    """Table 1's figures, a row per strategy (its rounds together: rates over all their
    windows, the other figures their means, per round or per rebalance over all rounds),
    each beside the paper's (``paper``: None where it gives none). ``cep bench --json``
    writes them beside the runs."""
    fixed = min((window_s(r) for r in results), default=0.0)
    groups = rounds_of(results)
    kg = next((g for g in groups if g[0].strategy == "kg"), None)
    skewed = phase_batches(exponents, 1.5)
    paper_kg = paper_run(mode, "kg", PAPER_ENGINES).processed
    rows = []
    for runs in groups:
        r = runs[0]
        paper = paper_run(mode, r.strategy, r.engines)
        rebalances = sum(x.rebalances for x in runs)
        keys_known = max(x.keys_known for x in runs)
        rows.append({
            "strategy": r.label, "engines": r.engines, "rounds": len(runs),
            "tweets_per_s": rate(runs), "x_kg": _over(rate(runs), rate(kg) if kg else None),
            "skewed_x_kg": (_over(rate(runs, skewed), rate(kg, skewed) if kg else None)
                            if skewed else None),
            "window_s": fixed,
            "processed_in_window": float(np.mean([processed_within(x, fixed) for x in runs])),
            "first_stories": r.events, "equal_to_kg": all(x.equal_to_kg for x in runs),
            "extra": max(x.extra for x in runs), "missing": max(x.missing for x in runs),
            "avg_rstd": float(np.mean([x.avg_rstd for x in runs])),
            "rebalances_per_round": rebalances / len(runs),
            "keys_per_rebalance": (sum(x.keys_moved for x in runs) / rebalances
                                   if rebalances else None),
            "keys_known": keys_known,
            "tweets_per_rebalance": (sum(x.load_moved for x in runs) / rebalances
                                     if rebalances else None),
            "paper": {"tweets_per_s": paper.rate, "x_kg": _over(paper.processed, paper_kg),
                      "processed": paper.processed, "first_stories": paper.first_stories,
                      "avg_rstd": paper.avg_rstd, "rebalances": paper.rebalances,
                      "keys_per_rebalance": paper.keys_moved,
                      "tweets_per_rebalance": paper.tweets_moved},
        })
    return rows


def format_table1(results: list[StrategyResult], mode: str,
                  exponents: Sequence[float] = ()) -> str:
    rows = table1(results, mode, exponents)
    skewed = bool(phase_batches(exponents, 1.5))
    fixed = rows[0]["window_s"] if rows else 0.0
    header = [HEADERS["strategy"], HEADERS["engines"], "tweets/s", "x KG", "| paper",
              "x KG", *(["skewed x KG"] if skewed else []),
              f"in {seconds(fixed, 0)}", f"| paper {PAPER_SECONDS // 60} min",
              "first stories", "| paper", HEADERS["equal_to_kg"], HEADERS["avg_rstd"],
              "| paper", HEADERS["rebalances"], "| paper", HEADERS["keys_per_rebalance"],
              "| paper", "tweets/rebal", "| paper"]
    lines = [header]
    for row in rows:
        paper = row["paper"]
        keys = row["keys_per_rebalance"]
        keys_pct = f" ({pct(100 * keys / row['keys_known'], 0)})" if keys and row[
            "keys_known"] else ""
        lines.append([
            row["strategy"], count(row["engines"]), count(row["tweets_per_s"]),
            ratio(row["x_kg"]), _paper(count(paper["tweets_per_s"])), ratio(paper["x_kg"]),
            *([ratio(row["skewed_x_kg"])] if skewed else []),
            count(row["processed_in_window"]), _paper(count(paper["processed"])),
            count(row["first_stories"]), _paper(count(paper["first_stories"])),
            "yes" if row["equal_to_kg"] else
            f"NO (+{count(row['extra'])}/-{count(row['missing'])})",
            pct(row["avg_rstd"]), _paper(pct(paper["avg_rstd"], 2)),
            number(row["rebalances_per_round"]), _paper(count(paper["rebalances"])),
            f"{count(keys)}{keys_pct}", _paper(paper["keys_per_rebalance"] or MISSING),
            count(row["tweets_per_rebalance"]),
            _paper(paper["tweets_per_rebalance"] or MISSING),
        ])
    turns = max((row["rounds"] for row in rows), default=1)
    title = (f"Table 1 ({mode} order): tweets/s over each run's measured window (from its "
             f"first batch's commit), tweets processed in the first {seconds(fixed, 0)} of "
             "it (the shortest window), first stories (events) over the whole input"
             + (", skewed: the Zipf 1.5 batches" if skewed else "")
             + (f"; {turns} rounds, the strategies in turn: rates over all of a "
                "strategy's windows, rebalances per round, the rest means or per "
                "rebalance" if turns > 1 else ""))
    return f"{title}\n{columns(lines)}"


def format_diagnostics(results: list[StrategyResult]) -> str:
    rows = [[HEADERS["strategy"], HEADERS["engines"], HEADERS["cpu_rstd"],
             HEADERS["keys_moved"], HEADERS["state_bytes"], "moves cost",
             HEADERS["makespan"], "headroom ev/CPU", "captured", HEADERS["run_time"],
             "load at start"]]
    kg = next((r for r in results if r.strategy == "kg"), None)
    for r in results:
        captured = headroom_captured(r, kg) if kg is not None and r is not kg else None
        rows.append([run_name(r, results), count(r.engines), pct(r.avg_cpu_rstd),
                     count(r.keys_moved), count(r.state_bytes_moved), seconds(r.move_s),
                     seconds(r.makespan_s),
                     f"{ratio(r.headroom_events)}/{ratio(r.headroom_cpu)}",
                     pct(100 * captured, 0) if captured is not None else MISSING,
                     seconds(r.seconds), " ".join(f"{x:.2f}" for x in r.load_average)
                     or MISSING])
    legend = ("moves cost: the engines' seconds exporting and importing moved keys; "
              "headroom ev/CPU: the most a perfect spread of the work over Spark's task "
              "slots could shorten the engines' part, by events and by CPU seconds "
              "(1.00x: the cores, not the busiest engine, bound every batch); captured: "
              "the share of KG's headroom by events that the strategy's placement took "
              "(100%: its busiest engines reached the floor no key placement can beat); "
              "load at start: the machine's 1, 5 and 15 minute load averages as the run "
              "began")
    return f"{columns(rows)}\n{legend}"


def _over(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def _paper(text: str) -> str:
    """A figure of the paper's, after the bar that sets it apart ("-": not given)."""
    return f"| {text}"


def format_stages(results: list[StrategyResult]) -> str:
    """Where the time went, per strategy, in two tables: task seconds summed over batches
    and engines for each stage of the data path (``derive`` and ``route`` ran in the
    router tasks, ``state_commit`` is Spark's, the rest inside the engines), then the
    run's wall clock by phase."""
    return "\n\n".join((
        _seconds_table("task seconds by stage", results, lambda r: r.stage_s),
        _seconds_table("wall seconds by phase", results, lambda r: r.wall_s)))


def _seconds_table(title: str, results: list[StrategyResult],
                   values: Callable[[StrategyResult], dict[str, float]]) -> str:
    names = list(dict.fromkeys(name for r in results for name in values(r)))
    rows = [[title, *names]]
    rows += [[run_name(r, results), *(seconds(values(r).get(name, 0.0)) for name in names)]
             for r in results]
    return columns(rows)
