"""``cep bench``'s figures from a run's batches and its Table 1 beside the paper's, on
results built by hand (the runs themselves are tested where Spark runs)."""

from __future__ import annotations

import argparse
import dataclasses

import pandas as pd
import pytest

from cep.bench import (
    format_bench,
    phase_batches,
    processed_within,
    tweets_order,
    warm_up_inputs,
    window_rate,
    window_s,
)
from cep.io.tweets.generator import generate_tweets
from cep.verify import StrategyResult, run_order


def result(strategy: str, engines: int, elapsed: list[float], events: list[int],
           keys_moved: int = 11) -> StrategyResult:
    return StrategyResult(strategy, 57, True, 0, 0, 21.8, 40.0, 2, keys_moved, 13_134, 30.0,
                          processed=sum(events), events_per_s=5.0, load_moved=260,
                          engines=engines, batch_elapsed_s=elapsed, batch_events=events,
                          batch_rstd=[30.0] * len(events), keys_known=100)


def test_the_measured_window_starts_at_the_first_batch_s_commit() -> None:
    r = result("kg", 5, [50.0, 60.0, 65.0, 75.0], [100, 100, 100, 200])
    assert window_s(r) == 25.0
    assert window_rate(r) == pytest.approx(400 / 25)  # the first batch's 50 s left out
    assert window_rate(r, [2]) == pytest.approx(100 / 5)
    assert processed_within(r, 0.0) == 0.0
    assert processed_within(r, 10.0) == pytest.approx(100)
    assert processed_within(r, 20.0) == pytest.approx(200 + 200 / 2)  # half of batch 3
    assert processed_within(r, 99.0) == pytest.approx(400)  # all of it
    one = result("kg", 5, [50.0], [100])
    assert window_s(one) == 0.0 and window_rate(one) == one.events_per_s
    assert phase_batches([1.5, 0.2, 1.5, 1.5], 1.5) == [2, 3]  # never the first


def test_table1_sets_each_run_beside_the_papers() -> None:
    kg = result("kg", 5, [50.0, 60.0, 70.0], [100, 100, 100])
    dlb = result("dlb-h", 5, [40.0, 45.0, 50.0], [100, 100, 100], keys_moved=30)
    kg6 = result("kg", 6, [45.0, 53.0, 61.0], [100, 100, 100])
    table = format_bench([kg, dlb, kg6], "default").splitlines()
    assert table[0].startswith("Table 1 (default order)")
    header, kg_row, dlb_row, kg6_row = (line.split() for line in table[1:5])
    assert header[:4] == ["strategy", "engines", "tweets/s", "x"]
    assert "10s" in header  # tweets processed in the shortest window, 10 s (DLB-H's)
    # cep 10 tweets/s, 1.00x; the paper 2,726,628 / 2400 s = 1,136/s
    assert kg_row[:6] == ["kg", "5", "10", "1.00x", "|", "1,136"]
    # DLB-H 20/s, 2.00x KG's; the paper 1,208/s, 1.06x KG's; all of its 200 in 10 s
    assert dlb_row[:8] == ["dlb-h", "5", "20", "2.00x", "|", "1,208", "1.06x", "200"]
    # beside 2,899,076 in 40 min; 57 events, = KG, RSTD 21.8% beside 23.43%, 2 rebalances
    # beside 7, 30 keys over 2 (15 of the 100 known: 15%) beside ≤10%, 260 tweets moved
    # over 2 beside ≤70,400
    assert dlb_row[8:] == ["|", "2,899,076", "57", "|", "6,546", "yes", "21.8%", "|",
                           "23.43%", "2", "|", "7", "15", "(15%)", "|", "≤10%", "130", "|",
                           "≤70,400"]
    assert kg6_row[:10] == ["kg", "6", "12", "1.25x", "|", "1,163", "1.02x", "125", "|",
                            "2,790,362"]
    # the paper gives none of these for KG on 6 engines
    assert kg6_row[-10:] == ["2", "|", "-", "6", "(6%)", "|", "-", "130", "|", "-"]


def test_under_the_periodic_law_the_skewed_batches_have_their_own_rate() -> None:
    kg = result("kg", 5, [0.0, 10.0, 20.0, 40.0], [100, 100, 100, 100])
    dlb = result("dlb-l", 5, [0.0, 10.0, 20.0, 25.0], [100, 100, 100, 100])
    table = format_bench([kg, dlb], "zipf-periodic", [0.2, 0.2, 0.2, 1.5])
    header, kg_row, dlb_row = (line.split() for line in table.splitlines()[1:4])
    assert header[9:12] == ["skewed", "x", "KG"]
    # KG 1,078/s in the paper (2,586,169 in 40 min); it gives no rate for DLB-L
    assert kg_row[4:8] == ["|", "1,078", "1.00x", "1.00x"]
    assert dlb_row[4:8] == ["|", "-", "-", "4.00x"]  # the last batch: 100/5 s against 100/20 s


def test_a_run_balancing_cost_is_named_so_and_set_beside_the_same_papers_figures() -> None:
    kg = result("kg", 5, [0.0, 10.0], [100, 100])
    cost = dataclasses.replace(result("dlb-h", 5, [0.0, 5.0], [100, 100]), load="cost")
    rows = [line.split() for line in format_bench([kg, cost]).splitlines()[2:4]]
    assert rows[1][:7] == ["dlb-h/cost", "5", "20", "2.00x", "|", "1,208", "1.06x"]


def test_the_tweets_order_comes_from_the_generator_spec() -> None:
    assert tweets_order(["Tweet=tweets:n=20,mode=zipf-periodic"], 10) == (
        "zipf-periodic", [0.2, 0.2])
    assert tweets_order(["tweets:n=20"], 10) == ("default", [])
    assert tweets_order(["events.jsonl"], None) == ("default", [])


def test_rounds_run_the_strategies_in_turn_and_table1_takes_them_together() -> None:
    assert run_order(["kg", "dlb-h", "pkg"], ["events", "cost"], 2) == [
        (1, "kg", "events"), (1, "dlb-h", "events"), (1, "dlb-h", "cost"),
        (1, "pkg", "events"),
        (2, "kg", "events"), (2, "dlb-h", "events"), (2, "dlb-h", "cost"),
        (2, "pkg", "events")]
    # KG leads even when not asked for: it is the reference
    assert run_order(["dlb-l"], ["cost"], 1) == [(1, "kg", "events"), (1, "dlb-l", "cost")]
    kg = [dataclasses.replace(result("kg", 5, [0.0, 10.0, 20.0], [100, 100, 100]), round=1),
          dataclasses.replace(result("kg", 5, [0.0, 10.0, 30.0], [100, 100, 100]), round=2)]
    dlb = [dataclasses.replace(result("dlb-h", 5, [0.0, 5.0, 10.0], [100, 100, 100],
                                      keys_moved=30), round=1, rebalances=3),
           dataclasses.replace(result("dlb-h", 5, [0.0, 5.0, 20.0], [100, 100, 100],
                                      keys_moved=10), round=2, rebalances=1)]
    table = format_bench([kg[0], dlb[0], kg[1], dlb[1]], "default").splitlines()
    assert "2 rounds" in table[0]
    kg_row, dlb_row = table[2].split(), table[3].split()
    assert len(table[1:4]) == 3 and table[4] == ""  # a row per strategy, not per run
    # KG: 400 tweets over windows of 20 and 30 s, 8/s; DLB-H: 400 over 10 and 20 s
    assert kg_row[:4] == ["kg", "5", "8", "1.00x"]
    assert dlb_row[:4] == ["dlb-h", "5", "13", "1.67x"]
    # 2 rebalances a round; (30 + 10) keys over 4 rebalances, 10 of 100 known
    assert dlb_row[-10:-5] == ["2", "|", "7", "10", "(10%)"]
    # the per-run tables name each run with its round
    assert [line.split()[0] for line in table[6:10]] == ["kg#1", "dlb-h#1", "kg#2",
                                                         "dlb-h#2"]


def test_load_lists_name_each_measure_once() -> None:
    from cep.cli.balancing_options import load_list

    assert load_list("events, cost") == ["events", "cost"]
    for bad in ("events,events", "seconds", ","):
        with pytest.raises(argparse.ArgumentTypeError,
                           match="comma-separated list of events and cost, each once"):
            load_list(bad)


def test_the_warm_up_cuts_a_tweets_generator_short_and_keeps_other_inputs_whole() -> None:
    assert warm_up_inputs(["Tweet=tweets:n=240000,mode=zipf-periodic,rate=200",
                           "Other=events.jsonl"], 60_000) == (
        "Tweet=tweets:n=60000,mode=zipf-periodic,rate=200.0,users=24000",
        "Other=events.jsonl")
    assert warm_up_inputs(["tweets:n=100"], 60_000) == ("tweets:n=100,users=1000",)
    assert warm_up_inputs(["tweets"], 500) == ("tweets:users=20000,n=500",)


@pytest.mark.parametrize("mode", ["default", "zipf-periodic"])
def test_the_warm_up_stream_is_the_start_of_the_measured_one(mode: str) -> None:
    """Same users, so the same world: a warm-up builds what the measured run uses."""
    whole = generate_tweets(n=40_000, mode=mode, rate=50.0)
    start = generate_tweets(n=15_000, mode=mode, rate=50.0, users=4_000)
    pd.testing.assert_frame_equal(start.frame, whole.frame.iloc[:15_000])
    assert (start.keys == whole.keys[:15_000]).all()


def test_the_node_meter_sets_each_run_s_node_figures_beside_it() -> None:
    from cep.cli.compare import NodeMeter

    meter = NodeMeter(groups=["node-0", "node-1"])  # attach reads no group
    # a warm-up run first, then KG (run though not asked for), DLB-L and PKG, two rounds
    meter.runs = [([9.0, 9.0], [0.0, 0.0], None)] + [([float(i), 1.0], [0.5, 0.5], 3.0 * i)
                                                     for i in range(6)]
    order = run_order(["dlb-l", "pkg"], ["events"], rounds=2)
    asked = [result(s, 2, [1.0, 2.0], [10, 10]) for s in ("dlb-l", "pkg", "dlb-l", "pkg")]
    placed = meter.attach(asked, order)
    assert [(r.strategy, r.node_cpu_s, r.machine_window_cpu_s) for r in placed] == [
        ("dlb-l", [1.0, 1.0], 3.0), ("pkg", [2.0, 1.0], 6.0), ("dlb-l", [4.0, 1.0], 12.0),
        ("pkg", [5.0, 1.0], 15.0)]
    assert NodeMeter().attach(asked, order) == asked  # off the emulated cluster: as they were


def test_the_machine_s_busy_seconds_between_two_moments_interpolate_its_samples(
        tmp_path) -> None:
    """Oracle: counters written by hand into a file in /proc/stat's format, busy being
    user + nice + system + irq + softirq + steal (idle and iowait left out)."""
    from cep.machine_cpu import TICKS, MachineCpu, busy_seconds

    stat = tmp_path / "stat"
    stat.write_text(f"cpu  {TICKS} 0 {TICKS} 999 7 0 0 0 0 0\ncpu0 1 2 3\n")
    assert busy_seconds(stat) == 2.0
    meter = MachineCpu(stat=stat)
    meter.times, meter.busy = [100.0, 101.0, 103.0], [10.0, 10.5, 12.5]
    assert meter.between(100.5, 102.0) == 1.25  # 10.25 -> 11.5
    assert meter.between(99.0, 102.0) is None  # before the first sample: unknown
    assert busy_seconds(tmp_path / "absent") is None


def _bench_script(name: str):
    """``bench/<name>.py`` loaded as a module (the benches are scripts, not a package)."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(bench))  # the bench imports ``common`` beside it
    try:
        spec = importlib.util.spec_from_file_location(name, bench / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(bench))
    return module


def test_the_string_bound_codes_each_key_and_changes_nothing_else(tmp_path) -> None:
    """The coded side of ``bench_string_bound`` is the same file with each tailnum's
    dictionary code; the oracle is the file itself read back and compared by hand."""
    bench = _bench_script("bench_string_bound")
    source = tmp_path / "flights.jsonl"
    source.write_text(
        '{"tailnum":"N1","dep_delay":2.0,"ts":1}\n{"tailnum":"Né","dep_delay":null,"ts":2}\n'
        '{"tailnum":null,"dep_delay":4.5,"ts":3}\n{"tailnum":"N1","dep_delay":-1.0,"ts":4}\n')
    coded = pd.read_json(bench.coded_copy(source, tmp_path / "coded.jsonl"), lines=True)
    codes = coded["tailnum"].tolist()
    assert codes[0] == codes[3] and codes[0] != codes[1] and pd.isna(codes[2])
    assert coded["ts"].tolist() == [1, 2, 3, 4]
    assert coded["dep_delay"].tolist()[::2] == [2.0, 4.5] and pd.isna(coded["dep_delay"][1])
    rule = bench.coded_rule(tmp_path / "rule.epl").read_text()
    assert "tailnum long" in rule and "tailnum string" not in rule


def test_the_speedup_bound_is_amdahl_s_over_the_driver_s_serial_part() -> None:
    bench = _bench_script("bench_speedup")
    # 10 s of wall clock; the node at 0.4 cores used 3.2 CPU s: busy 8 s, of which its
    # engine 4 s; the driver's serial part 2 s; the heaviest key half of the first
    # batch's events and a tenth of the second's
    run = {"seconds": 10.0, "node_cpu_s": [3.2], "node_throttled_s": [1.0],
           "batch_makespan_s": [2.0, 2.0], "batch_heaviest_key": [50, 20],
           "batch_events": [100, 200]}
    limits = bench.bound([run], 0.4, [1, 2, 4])
    assert limits["serial_s"] == 2.0 and limits["serial_share"] == 0.2
    assert limits["amdahl"] == [1.0, pytest.approx(10 / 6, abs=1e-3), 2.5]
    # kept whole, the first batch's heaviest key leaves its engine half that batch's
    # engine seconds at any N; the second batch's spreads to 1/N
    assert limits["key_preserving"] == [
        1.0, pytest.approx(10 / (2 + 2 + 2 * 0.5 + 2 * 0.5), abs=1e-3),
        pytest.approx(10 / (2 + 1 + 2 * 0.5 + 2 * 0.25), abs=1e-3)]
    points = [{"nodes": n, "strategies": {"kg": {"tweets_per_s": r}}}
              for n, r in ((1, 100.0), (1, 120.0), (2, 220.0))]
    assert bench.speedups(points, [1, 2]) == (110.0, {"kg": [1.0, 2.0]})
    assert limits["machine"] is None  # no machine figures: no machine bound
    # the machine: 4 busy CPU seconds over a 5 s window, 0.8 of 2 cores: 2.5x at most
    metered = {**run, "batch_elapsed_s": [1.0, 3.0, 6.0], "machine_window_cpu_s": 4.0}
    limits = bench.bound([metered], 0.4, [1, 2, 4], cores=2)
    assert limits["machine_cap"] == 2.5 and limits["machine"] == [1.0, 2.0, 2.5]
    # at N's own cost: on 4 nodes KG reached 1.5x with 1.5 of 2 cores busy (2.0x at
    # most) and PKG 1.8x with 1.6 busy (2.25x): the highest; never above the ideal line
    points = [{"nodes": n, "strategies": {
        "kg": {"machine_cores_busy": [busy]}, "pkg": {"machine_cores_busy": [pkg]}}}
        for n, busy, pkg in ((1, 0.5, 0.5), (4, 1.5, 1.6))]
    assert bench.machine_at_cost(points, [1, 4], {"kg": [1.0, 1.5], "pkg": [1.0, 1.8]},
                                 2) == [1.0, 2.25]


def test_a_speedup_invocation_names_its_points_after_its_output() -> None:
    """Oracle: the names written out. ``speedup.json``'s points keep the names the
    committed results refer to; another ``--out`` gets its own, so that a run at other
    settings (``speedup-defaultbatch.json``) cannot write over them."""
    bench = _bench_script("bench_speedup")
    assert bench.point_name("speedup.json", 4, 7) == "nodes4-sweep7.json"
    assert bench.point_name("speedup-defaultbatch.json", 1, 1) == (
        "defaultbatch-nodes1-sweep1.json")
    assert bench.point_name("mine.json", 2, 3) == "mine-nodes2-sweep3.json"


def test_the_cpu_meter_counts_a_process_tree_from_its_first_sample() -> None:
    """``bench/common.CpuMeter``: a child that burns CPU and its grandchild, which does
    too and ends before the meter stops, both count under the child's label; a process
    outside the tree (this test's process) does not. Oracle: the CPU the two processes
    are made to burn, 0.6 s each by their own process clocks, less what the child ran
    before the first sample (its start-up)."""
    import subprocess
    import sys

    meter_class = _bench_script("common").CpuMeter
    burn = ("import os, time\n"
            "def spin(s):\n"
            "    end = time.process_time() + s\n"
            "    while time.process_time() < end: pass\n"
            "if os.fork() == 0:\n"
            "    spin(0.6); os._exit(0)\n"
            "spin(0.6); os.wait(); time.sleep(0.6)\n")
    child = subprocess.Popen([sys.executable, "-c", burn])
    meter = meter_class({"tree": child.pid}, every_s=0.05)
    meter.sample()
    meter.start()
    child.wait()
    cpu = meter.stop()
    assert set(cpu) == {"tree"}
    assert 0.9 <= cpu["tree"] <= 1.6  # 1.2 s burnt, less what ran before the first sample


def _batch(batch: int, engines: int, wall: float, events: int = 100) -> dict:
    return {"batch": batch, "rows_per_engine": [events // engines] * engines,
            "events_in": events, "wall_time": wall}


def test_a_mid_run_scale_change_splits_the_run_into_phases_each_measured_inside() -> None:
    bench = _bench_script("bench_scale_midrun")
    # 4 engines (warm-up), 2 from batch 2, nodes joined for batch 6, 4 engines from 8;
    # a batch takes 2 s on 2 engines and 2 nodes, 1.6 s once the nodes joined, 1 s at
    # 4 engines; the changes' batches (1, 2, 7, 8) and the join's (5, 6) take longer
    walls = [0, 3, 8, 10, 12, 14, 17, 18.6, 21, 24, 25, 26, 27]
    counts = [4, 4, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4]
    metrics = [_batch(b, n, w, 0 if b == 12 else 100)
               for b, (n, w) in enumerate(zip(counts, walls, strict=True))]
    cpu = {b: [b * 0.5, b * 0.25] for b in range(13)}
    rows = bench.batch_rows(metrics, cpu)
    assert rows[0]["seconds"] is None and rows[3]["seconds"] == 2.0
    assert rows[3]["events_per_s"] == 50.0 and rows[3]["node_cpu_s"] == [0.5, 0.25]
    # the join's cores were granted while batch 5 ran: batch 6 is the first after
    assert bench.began_after(rows, metrics, 13.0) == 6
    assert bench.began_after(rows, metrics, None) is None
    changes = [{"at_batch": 2, "from": 4, "to": 2, "keys": 9, "bytes": 900},
               {"at_batch": 8, "from": 2, "to": 4, "keys": 5, "bytes": 500}]
    spans = bench.phases(rows, [2, 8, 6], {2: 2, 6: 4}, batch_size=100)
    assert [(p["first_batch"], p["end_batch"], p["engines"], p["nodes"],
             p["measured_batches"]) for p in spans] == [
        (2, 6, [2], 2, [3, 4]), (6, 8, [2], 4, []), (8, None, [4], 4, [9, 10, 11])]
    assert spans[0]["events_per_s"] == 50.0 and spans[2]["events_per_s"] == 100.0
    assert spans[0]["node_cores_busy"] == [0.25, 0.125]  # 1 CPU s over 4 s of node 0
    assert spans[1]["events_per_s"] is None  # a phase too short measures nothing
    costs = bench.change_costs(rows, changes, spans)
    # the first change has no phase before it, and the second's phase before it (the
    # nodes' join) measured nothing: no figure rather than a guess
    assert "extra_s" not in costs[0] and costs[0]["bytes"] == 900
    assert "extra_s" not in costs[1] and costs[1]["keys"] == 5
    ratios = bench.ratios(spans, 2, 4)
    assert ratios == {"out": 2.0, "nodes": None, "engines": None, "in": None, "left": None}


def test_a_change_s_extra_time_is_over_its_phases_normal_batches() -> None:
    bench = _bench_script("bench_scale_midrun")
    rows = [{"batch": b, "seconds": s} for b, s in [(6, 2.0), (7, 3.0), (8, 2.5)]]
    spans = [{"first_batch": 2, "batch_s": 2.0}, {"first_batch": 8, "batch_s": 1.0}]
    change = {"at_batch": 8, "from": 2, "to": 4, "keys": 3, "bytes": 30}
    [cost] = bench.change_costs(rows, [change], spans)
    # handing over 1 s more than a 2 s batch, the first at 4 engines 1.5 s more than 1 s
    assert cost["extra_s"] == 2.5 and cost["normal_batch_s"] == 1.0
    assert cost["extra_over_normal"] == 2.5


def test_scaled_output_is_compared_row_for_row() -> None:
    bench = _bench_script("bench_scale_midrun")
    assert bench.differences(["a", "b"], ["a", "b"]) == 0
    assert bench.differences(["a", "c"], ["a", "b", "d"]) == 2
    spans = [{"first_batch": 2, "engines": [2], "nodes": 2, "events_per_s": 10.0},
             {"first_batch": 6, "engines": [2], "nodes": 4, "events_per_s": 12.0},
             {"first_batch": 8, "engines": [4], "nodes": 4, "events_per_s": 18.0},
             {"first_batch": 14, "engines": [2], "nodes": 4, "events_per_s": 12.0}]
    assert bench.ratios(spans, 2, 4) == {"out": 1.8, "nodes": 1.2, "engines": 1.5,
                                         "in": pytest.approx(0.667), "left": None}


def test_nodes_that_leave_split_a_phase_and_their_batches_are_the_leave_s_cost() -> None:
    """``--leave-after``: the job back at 2 engines from batch 8 on 4 nodes, the 2 that
    joined leave while batch 9 runs (gone at 19.5 s): batch 10 is the first without
    them, the phase after it is 2 engines on 2 nodes, and the batches from the first
    that committed after the leave began (9) to the first without the nodes (10) are
    its cost, over that phase's median batch."""
    bench = _bench_script("bench_scale_midrun")
    walls = [0, 3, 8, 10, 12, 14, 15, 16, 17, 20, 24, 26, 28, 30, 32]
    counts = [4, 4, 2, 2, 2, 2, 4, 4, 2, 2, 2, 2, 2, 2, 2]
    metrics = [_batch(b, n, w) for b, (n, w) in enumerate(zip(counts, walls, strict=True))]
    rows = bench.batch_rows(metrics)
    left = bench.began_after(rows, metrics, 19.5)
    assert left == 10
    spans = bench.phases(rows, [2, 6, 8, 5, left], {2: 2, 5: 4, left: 2}, batch_size=100)
    assert [(p["first_batch"], p["engines"], p["nodes"], p["measured_batches"])
            for p in spans] == [(2, [2], 2, [3]), (5, [2], 4, []), (6, [4], 4, []),
                                (8, [2], 4, []), (10, [2], 2, [11, 12, 13, 14])]
    step = {"action": "leave", "began": 17.5, "gone": 19.5}
    cost = bench.leave_cost(rows, metrics, step, left, spans)
    # batch 9 took 3 s and batch 10 4 s against 2 s: 3 s more, 1.5 normal batches
    assert cost["batches"] == [9, 10] and cost["seconds"] == [3.0, 4.0]
    assert cost["extra_s"] == 3.0 and cost["extra_over_normal"] == 1.5
    assert bench.leave_cost(rows, metrics, None, None, spans) is None
    # 2 engines on 2 nodes after the leave (50 events/s) over before it (50): 1.0
    spans[2].update(events_per_s=100.0)
    assert bench.ratios(spans, 2, 4, start_nodes=2)["left"] == 1.0


def test_the_bound_from_a_phase_spreads_its_nodes_busy_share_over_more_nodes() -> None:
    bench = _bench_script("bench_scale_midrun")
    # 2 nodes of 0.4 cores busy 0.3 cores each: 75% of their quota; on 4 nodes that
    # part halves and the idle quarter stays: 1 / (0.25 + 0.375)
    phase = {"nodes": 2, "node_cores_busy": [0.3, 0.3, 0.0, 0.0]}
    assert bench.phase_bound(phase, 0.4, 4) == {"busy_share": 0.75, "amdahl": 1.6}
    assert bench.phase_bound({"nodes": 2, "node_cores_busy": None}, 0.4, 4) is None
    assert bench.ratio_of(3.0, 2.0) == 1.5 and bench.ratio_of(None, 2.0) is None


def test_the_scale_out_is_judged_against_the_unscaled_run_on_the_same_batches() -> None:
    bench = _bench_script("bench_scale_midrun")
    # the unscaled run's batches slow down as the run goes on (2 s, then 3 s from batch
    # 8); the scaled run hands over at 7 (4 s), adopts at 8 (3 s), then runs 1.5 s
    unscaled = [{"batch": b, "events": 120, "seconds": 2.0 if b < 8 else 3.0,
                 "events_per_s": 60.0 if b < 8 else 40.0} for b in range(2, 12)]
    seconds = {7: 4.0, 8: 3.0, 9: 1.5, 10: 1.5, 11: 1.5}
    rows = [{"batch": b, "events": 120, "seconds": seconds.get(b, 2.0),
             "events_per_s": 120 / seconds.get(b, 2.0)} for b in range(2, 12)]
    spans = [{"first_batch": 2, "end_batch": 8, "engines": [2], "events_per_s": 60.0,
              "measured_batches": [3, 4, 5, 6]},
             {"first_batch": 8, "end_batch": None, "engines": [4], "events_per_s": 80.0,
              "measured_batches": [9, 10, 11]}]
    changes = [{"at_batch": 8, "from": 2, "to": 4}]
    got = bench.against_unscaled(rows, unscaled, spans, changes, 4)
    # against the earlier phase the scale-out looks like 80/60 = 1.33; against the
    # same batches left at 2 engines it is 80/40 = 2
    assert got["batches"] == [9, 10, 11] and got["steady"] == 2.0
    # batches 7..11: 600 events in 11.5 s against 600 in 14 s
    assert got["with_change_batches"] == [7, 8, 9, 10, 11]
    assert got["with_change"] == pytest.approx(14 / 11.5, abs=1e-3)
    assert bench.against_unscaled(rows, [], spans, changes, 4) is None
    assert bench.against_unscaled(rows, unscaled, spans[:1], changes, 4) is None


def _job(job: int, query: str, batch: int, stages: list[tuple[int, list[int]]], at: int) -> list:
    """A job of a streaming query's batch and its stages, as Spark's event log has them."""
    return [{"Event": "SparkListenerJobStart", "Job ID": job, "Submission Time": at,
             "Stage IDs": [s for s, _ in stages],
             "Stage Infos": [{"Stage ID": s, "Parent IDs": p} for s, p in stages],
             "Properties": {"sql.streaming.queryId": query, "streaming.sql.batchId": str(batch)}}]


def _task_end(stage: int, partition: int, executor: str, launch: int, finish: int,
              locality: str = "PROCESS_LOCAL") -> dict:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage,
            "Task Info": {"Partition ID": partition, "Executor ID": executor,
                          "Locality": locality, "Launch Time": launch, "Finish Time": finish},
            "Task Metrics": {"Executor Run Time": finish - launch - 10,
                             "Executor CPU Time": 5_000_000}}


def test_the_event_log_says_where_each_batch_s_engine_tasks_ran_and_how_long_they_waited() -> None:
    """Oracle: the hand-built event log's own times. Batch 3 of query q: an input stage
    (no parent) on executors 0 and 1, then 4 engine partitions of which two queue on
    executor 0 (partition 2 launched 1.5 s after the stage was submitted); another
    query's job is not counted."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import scale_tasks

    events = [
        *_job(1, "q", 3, [(10, []), (11, [10])], 1_000),
        _task_end(10, 0, "0", 1_010, 1_510), _task_end(10, 1, "1", 1_010, 1_810),
        {"Event": "SparkListenerStageCompleted",
         "Stage Info": {"Stage ID": 11, "Submission Time": 2_000, "Completion Time": 4_000,
                        "Number of Tasks": 4}},
        _task_end(11, 0, "0", 2_000, 3_500), _task_end(11, 1, "1", 2_000, 3_000),
        _task_end(11, 2, "0", 3_500, 4_000, "NODE_LOCAL"), _task_end(11, 3, "2", 2_010, 2_500),
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 4_100},
        *_job(2, "other", 3, [(12, [])], 1_200), _task_end(12, 0, "3", 1_210, 9_000),
    ]
    assert scale_tasks.query_between(scale_tasks.queries(events), 0.5, 1.1) == "q"
    (row,) = scale_tasks.task_breakdown(events, "q")
    assert row["batch"] == 3 and row["jobs_s"] == 3.1
    assert row["input"] == {"tasks": 2, "span_s": 0.8,
                            "per_executor": {"0": [1, 0.5], "1": [1, 0.8]}}
    engines = row["engines"]
    assert engines["span_s"] == 2.0 and engines["per_executor"]["0"] == [2, 2.0]
    assert [p["executor"] for p in engines["partitions"]] == ["0", "1", "0", "2"]
    assert engines["partitions"][2]["wait_s"] == 1.5
    assert engines["partitions"][2]["locality"] == "NODE_LOCAL"
    got = scale_tasks.summary([row], [3, 4], {3: 5.0})
    assert got["batches"] == [3] and got["driver_s"] == 1.9
    assert got["most_engine_tasks_on_one_executor"] == 2
    assert got["longest_engine_wait_s"] == 1.5 and got["slowest_engine_task_s"] == 1.5
    assert got["engine_tasks_per_executor"] == {"0": 2, "1": 1, "2": 1}
    assert scale_tasks.summary([row], [4], {4: 5.0}) is None


def test_kg_started_at_the_high_count_is_compared_on_the_hi_phase_s_batches() -> None:
    """Oracle: medians worked by hand over the hi phase's measured batches 9 and 10."""
    bench = _bench_script("bench_scale_midrun")
    kg = [{"batch": b, "events_per_s": 100.0 + b} for b in range(2, 12)]
    unscaled = [{"batch": b, "events_per_s": 50.0} for b in range(2, 12)]
    at_hi = {"measured_batches": [9, 10], "events_per_s": 90.0}
    got = bench.same_batches(kg, at_hi, unscaled)
    assert got["kg_events_per_s"] == 109.5 and got["unscaled_events_per_s"] == 50.0
    assert got["kg_over_unscaled"] == 2.19 and got["scaled_over_kg"] == round(90 / 109.5, 3)
    assert bench.same_batches(kg, None, unscaled) is None


def test_the_kafka_relay_passes_every_record_once_in_order() -> None:
    """``bench/kafka_relay.py``, the Kafka floor of ``bench_latency.py``, on the embedded
    broker: records written in three bursts, the last while it runs, come out on the
    output topic read_committed, each once and in order. Oracle: the values written."""
    import threading
    import time

    from confluent_kafka import Producer

    from cep.servers.kafka import EmbeddedKafka
    from cep.transports.kafka_read import consume_topic
    from cep.transports.kafka_send import ensure_topic

    relay = _bench_script("kafka_relay")
    values = [b'{"id":%d}' % i for i in range(3_000)]
    with EmbeddedKafka() as broker:
        for topic in ("in", "out"):
            ensure_topic(broker.bootstrap, topic, 1)
        producer = Producer({"bootstrap.servers": broker.bootstrap})

        def write(part: list[bytes]) -> None:
            for value in part:
                producer.produce("in", value)
            producer.flush(30)

        write(values[:1_000])
        stop = threading.Event()
        relayed: list[int] = []
        worker = threading.Thread(target=lambda: relayed.append(
            relay.relay(broker.bootstrap, "in", "out", 0.05, stop)))
        worker.start()
        try:
            write(values[1_000:2_000])
            time.sleep(0.3)
            write(values[2_000:])
            deadline = time.monotonic() + 60
            got: list[bytes] = []
            while len(got) < len(values) and time.monotonic() < deadline:
                got = [m.value() for batch in consume_topic(broker.bootstrap, "out")
                       for m in batch]
                time.sleep(0.1)
        finally:
            stop.set()
            worker.join(60)
    assert got == values
    assert relayed == [len(values)]


def test_a_stage_lasts_its_busiest_node_s_cpu_at_its_quota() -> None:
    """Oracle: arithmetic by hand on a hand-built event log and cgroup samples. Batch 1:
    input stage 10.0-12.0 s, engines' stage 12.0-16.0 s; node-0 works at 0.4 cores
    throughout, node-1 at 0.2 in the input stage and 0.1 in the engines'. One node's
    batch of 16 s against this 6 s batch on two."""
    bench = _bench_script("stage_cpu")
    events = [*_job(1, "q", 1, [(10, []), (11, [10])], 9_900),
              _task_end(10, 0, "0", 10_000, 12_000), _task_end(10, 1, "1", 10_000, 11_000),
              _task_end(11, 0, "0", 12_000, 16_000), _task_end(11, 1, "1", 12_500, 13_000),
              *_job(2, "other", 1, [(12, [])], 9_900), _task_end(12, 0, "3", 1_000, 90_000)]
    spans = bench.stage_spans(events, "q")
    assert spans == {(1, "input"): (10.0, 12.0), (1, "engines"): (12.0, 16.0)}

    def used(t: float) -> dict[str, float]:
        return {"node-0": 0.4 * t, "node-1": 0.2 * min(t, 12) + 0.1 * max(t - 12, 0)}
    samples = [(t / 10, used(t / 10)) for t in range(90, 170)]
    assert bench.cpu_between(samples, "node-1", 10.0, 12.0) == pytest.approx(0.4)
    (row,) = bench.batch_rows(spans, samples, {1: 6.2}, 0.4)
    assert row["input"]["node_cpu_s"] == [0.8, 0.4]
    assert row["input"]["at_quota_max_s"] == 2.0 and row["input"]["at_quota_mean_s"] == 1.5
    assert row["engines"]["node_cpu_s"] == [1.6, 0.4]
    many = bench.summary([row])
    assert many["engines"] == {"span_s": 4.0, "cpu_s": 2.0, "at_quota_max_s": 4.0,
                               "at_quota_mean_s": 2.5}
    one = {"wall_s": 16.0, "input": {"cpu_s": 1.0, "at_quota_mean_s": 2.5},
           "engines": {"cpu_s": 4.0, "at_quota_mean_s": 10.0}}
    got = bench.decompose(one, many, 2)
    assert got["ideal_s"] == 8.0 and got["speedup"] == pytest.approx(16 / 6.2, abs=1e-3)
    # input: one node's 2.5 s shared by two is 1.25 s; the nodes' mean took 1.5, the busiest 2.0
    assert got["input"] == {"ideal_s": 1.25, "cpu_ratio": 1.2, "cpu_extra_s": 0.25,
                            "imbalance": 1.333, "imbalance_s": 0.5}
    assert got["engines"]["cpu_ratio"] == 0.5 and got["engines"]["imbalance_s"] == 1.5
    assert got["rest_s"] == pytest.approx(0.2)


def test_an_a_b_of_two_trees_gives_each_strategy_s_median_ratio_over_its_rounds() -> None:
    """Oracle: ratios worked by hand over three hand-made rounds."""
    bench = _bench_script("nodes_ab")

    def side(kg: float, elb: float) -> dict:
        return {"kg": {"events_per_s": kg, "equal_to_kg": True},
                "elb": {"events_per_s": elb, "equal_to_kg": True}}
    rounds = [{"before": side(100, 80), "after": side(110, 88)},
              {"before": side(90, 80), "after": side(90, 100)},
              {"before": side(80, 100), "after": side(100, 90)}]
    assert bench.ratios(rounds) == {"kg": {"rounds": [1.1, 1.0, 1.25], "median": 1.1},
                                    "elb": {"rounds": [1.1, 1.25, 0.9], "median": 1.1}}
