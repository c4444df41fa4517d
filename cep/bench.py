"""``cep bench``: strategies side by side, next to the DLB paper's Table 1.

The paper (Zacheilas et al., DAIS 2016) ran FSD over 2.95M tweets on an 8-VM Storm
cluster with 5 Esper engines for 40 minutes. Its Table 1 is reproduced here so a run's
figures can be read against it; "processed" there means tweets done in 40 minutes, here
tweets in the input (all of them are processed), so compare throughput instead.
"""

from __future__ import annotations

from collections.abc import Callable

from cep.verify import StrategyResult

# strategy -> (tweets processed in 40 min, first story events, avg RSTD %)
PAPER_TABLE1 = {
    "dlb-l": (2_941_246, 6_546, 18.34),
    "dlb-h": (2_899_076, 6_546, 23.43),
    "lptf": (2_042_201, 6_546, 14.53),
    "pkg": (2_926_853, 7_563, 8.6),
    "kg": (2_726_628, 6_546, 44.53),
}
PAPER_SECONDS = 40 * 60


def format_bench(results: list[StrategyResult]) -> str:
    header = ("strategy", "tweets", "tweets/s", "events", "= KG", "avg RSTD", "CPU RSTD",
              "keys moved", "load moved", "state bytes", "makespan s", "headroom ev/CPU",
              "| paper tweets/s",
              "paper events", "paper RSTD")
    rows = [header]
    for r in results:
        paper = PAPER_TABLE1.get(r.strategy)
        rows.append((
            r.strategy, f"{r.processed:,}", f"{r.events_per_s:,.0f}", f"{r.events:,}",
            "yes" if r.equal_to_kg else f"NO (+{r.extra}/-{r.missing})",
            f"{r.avg_rstd:.1f}%", f"{r.avg_cpu_rstd:.1f}%", f"{r.keys_moved:,}",
            f"{r.load_moved:,}", f"{r.state_bytes_moved:,}", f"{r.makespan_s:,.1f}",
            f"{r.headroom_events:.2f}x/{r.headroom_cpu:.2f}x",
            f"| {paper[0] / PAPER_SECONDS:,.0f}" if paper else "|",
            f"{paper[1]:,}" if paper else "", f"{paper[2]:.2f}%" if paper else "",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    table = "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
                      for row in rows)
    legend = ("headroom ev/CPU: the most a perfect spread of the work over Spark's task "
              "slots could shorten the engines' part, by events and by CPU seconds "
              "(1.00x: the cores, not the busiest engine, bound every batch)")
    return f"{table}\n{legend}\n\n{format_stages(results)}"


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
    lines = [f"{title}: " + "  ".join(names)]
    for r in results:
        lines.append(f"{r.strategy:>8}: " + "  ".join(
            f"{values(r).get(name, 0.0):.1f}".rjust(len(name)) for name in names))
    return "\n".join(lines)
