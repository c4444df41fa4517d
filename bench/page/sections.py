"""Which section of the page shows which result files, and one file's section.

:data:`SECTIONS` names every kind of result file the page knows, in the page's order,
with what it measures and the command that measures it again; a file no pattern claims
gets a generic section of its top-level numbers, so a new bench appears on the page
before anyone describes it.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from page.balancing import (
    balance_cost_figures,
    balancers_figures,
    batch_parts_figures,
    fsd_figures,
    gate_figures,
    handoff_figures,
    scale_midrun_figures,
    speedup_figures,
    splitter_figures,
    stage_cpu_figures,
    table1_figures,
)
from page.compare import (
    flink_patterns_figures,
    nodes_ab_figures,
    scale_ab_figures,
    speed_figures,
    state_before_figures,
    state_path_figures,
)
from page.parts import (
    autoscale_step_figures,
    cli_figures,
    event_time_figures,
    executor_heap_figures,
    generic_figures,
    match_recognize_figures,
    partitions_figures,
    readers_figures,
    reference_figures,
    state_figures,
    text_figures,
    tweets_figures,
    udf_figures,
)
from page.provenance import provenance
from page.runtime import (
    batch_floor_figures,
    kafka_latency_ab_figures,
    kafka_read_figures,
    kafka_stages_ab_figures,
    kafka_stages_figures,
    latency_figures,
    source_figures,
    spark_figures,
    spark_frame_figures,
    stages_figures,
    stream_figures,
    string_bound_figures,
    transports_figures,
    transports_io_figures,
    ui_figures,
)


@dataclass(frozen=True)
class Section:
    """How one kind of result file appears on the page."""

    pattern: str  # file name (glob) in bench/results
    title: str
    about: str  # what is measured, one paragraph
    command: str  # the command that writes the file
    figures: Callable[[dict, str], str]  # the file's figures as Markdown
    note: str = ""  # what the command needs first, if anything


SECTIONS = (
    Section("cli.json", "The command line's start",
            "How long `cep --help` and `cep check rules/fsd.epl` take as fresh processes, "
            "beside the bare interpreter's start.",
            "python bench/bench_cli.py", cli_figures),
    Section("reference.json", "The reference evaluator",
            "Events per second of the in-process reference evaluator, per rule shape, whole "
            "and in batches; the events are built in memory, so the figures are the "
            "evaluator's own.", "python bench/bench_reference.py", reference_figures),
    Section("match_recognize.json", "MATCH_RECOGNIZE: the compiled matcher",
            "Each shape on the reference evaluator, on the compiled matcher "
            "(`cep/engine/row_patterns/compiled.py`) and on the interpreter it replaces "
            "for the rules it takes, their rows compared; a rule the kernel does not take "
            "runs on the interpreter at the rate shown for it. The rules: the reference "
            "bench's `A B+ C`; an ALL ROWS PER MATCH `A B+`, the same with a running "
            "aggregate in DEFINE (`avg_define`: `B AS avg(B.v) > 0.3`) and with FIRST in "
            "DEFINE (`interpreted`: `B AS B.v > FIRST(A.v) - 0.7`, which the kernel does not "
            "take); "
            "`bench/rules/flights_mr_spiral.epl` and `bench/rules/flights_mr_late_run.epl`.",
            "python bench/bench_match_recognize.py", match_recognize_figures),
    Section("stages.json", "Where a job's seconds go, stage by stage",
            "Two bounded jobs over ten years of flights (one JSON-lines file): the per-key "
            "`#length(5)` window rule (`bench/rules/flight_delay_avg.epl`) and "
            "MATCH_RECOGNIZE (`bench/rules/flights_mr_spiral.epl`), each side a whole "
            "process with the file in the page cache: pyarrow's own parse of the file "
            "into the rule's fields (the floor no reader of JSON lines with this parser "
            "can pass), the local runner with its stages timed (its own thread's, which "
            "add up to its wall time, and those of the thread that reads the next chunk "
            "meanwhile), and `cep run` on Spark at "
            "its defaults with its metrics' stages (task stages summed over tasks, the "
            "driver's sink, Spark's frame around the tasks, the session's start). Each job's "
            "bound is the wall time the local runner cannot beat on the machine's cores.",
            "python bench/bench_stages.py --copies 10", stages_figures),
    Section("spark_frame*.json", "Spark's CPU seconds, process by process, and its fixed frame",
            "The window rule (`spark_frame.json`) and MATCH_RECOGNIZE "
            "(`spark_frame-flights_mr_spiral.json`) over the first 100 lines of the ten "
            "years of flights (the frame: what Spark spends on any job, whatever its "
            "input) and over the whole file, each side a whole `cep run` at its defaults, "
            "with the file in the page cache; the process tree's CPU seconds read from "
            "/proc (the JVM and the Python workers included), split by process and, in "
            "the JVM, by thread. With two source trees (a before and an after) they run "
            "in turn within each round.",
            "python bench/bench_spark_frame.py --trees BEFORE_DIR,AFTER_DIR "
            "[--rule bench/rules/flights_mr_spiral.epl]", spark_frame_figures),
    Section("string_bound.json", "What the key's strings cost, as a bound",
            "The window rule over the ten years of flights twice: with `tailnum` as the "
            "file's strings, and with each `tailnum` replaced by its dictionary code (a "
            "`long`, the rule's schema changed to match). Everything else is the same, so "
            "the difference is all the key's strings cost from the reader to the sink: the "
            "most that keeping strings as dictionary codes through the engine could save. "
            "Each side a whole `cep run` at its defaults, in turn, its input in the page "
            "cache.",
            "python bench/bench_string_bound.py", string_bound_figures),
    Section("latency.json", "Detection latency",
            "A writer appends events at a fixed rate to a file that `cep run --follow` "
            "follows (or produces them to a Kafka topic it reads); a per-key "
            "`#length(2)` rule reports each event, and a reader notes when its output "
            "appears (in the output file, or in the output topic, read committed). "
            "Latency is the time from an event's append to its output; first output is "
            "the first event's output after `cep run` started. cep's defaults otherwise "
            "(`local[*]`, 5 engines). Each Kafka case starts a fresh embedded broker; the "
            "CPU columns are what `cep run`'s process tree, the broker and the bench's own "
            "writer and reader spent over the case, on the same 2 cores. "
            "`file+kafka-load` is the file path with a Kafka case's writer and reader "
            "busy on a broker of their own beside it: cep reads and writes files, and "
            "shares the cores with what the Kafka case's neighbours cost.",
            "python bench/bench_latency.py", latency_figures),
    Section("latency-machine.json", "Detection latency with the machine's busy cores, "
            "and the Kafka floor",
            "The cases of the section above at cep's default trigger, 100,000 and 50,000 "
            "events/s, two rounds, each with the whole machine's busy cores (of 2) while "
            "the input was written and while its last events drained (`cep.machine_cpu`, "
            "the kernel's counters: every process counts). A case near 2 was paced by the "
            "machine's cores, which the broker and the bench's own writer and reader share "
            "with cep on this machine. `kafka-relay` is the Kafka case with "
            "`bench/kafka_relay.py` in cep's place: one process that relays the records "
            "unchanged from the input topic to the output topic exactly once (a "
            "read_committed consumer, a transaction per 0.1 s trigger with the input "
            "offsets in it), so its latency is the floor of any exactly-once Kafka job "
            "with this client, broker and machine; its CPU is in the cep column.",
            "python bench/bench_latency.py --sinks kafka,file+kafka-load,kafka-relay,file "
            "--rates 100000,50000 --triggers default --rounds 2 --out latency-machine.json",
            latency_figures),
    Section("kafka_latency_ab.json", "Detection latency over Kafka, before and after one "
            "fetch per partition",
            "bench_latency.py's Kafka cases (topic in, topic out, embedded broker) run with "
            "the tree before the Kafka input tasks fetched each partition once and with the "
            "tree after, interleaved, and the file path beside them. The machine was shared "
            "(load averages 8 to 14 on 2 cores): compare the rows with each other, not "
            "with the section above.",
            "python bench/bench_latency.py --sinks kafka --triggers default --rates 50000 "
            "--seconds 20 (in each tree, in turn)",
            kafka_latency_ab_figures),
    Section("kafka_stages.json", "A Kafka batch, stage by stage",
            "One micro-batch's Kafka work taken apart on the embedded broker, beside the "
            "file path's: the planner's look at the topic each trigger, an input task's "
            "fetch of the batch's offsets, the values' conversion into the typed frame, "
            "and the driver's transaction of the batch's output. The planner's look runs "
            "twice: with an admin client made per call (as before) and with the one kept "
            "across calls in the process (`cep/transports/kafka_clients.py`).",
            "python bench/bench_kafka_stages.py", kafka_stages_figures),
    Section("latency-kafka-*.json", "Detection latency over Kafka: kept clients, before and "
            "after",
            "bench_latency.py's Kafka cases at the default trigger run with the tree "
            "before the planner's Kafka admin client was kept across triggers and with "
            "the tree after, interleaved per rate, then the file path and the file path "
            "with a Kafka case's load beside it (the fair control) with the tree after; "
            "`kept-consumers` is a first try that also kept the input tasks' consumers "
            "(withdrawn: nothing measured in its favour, and its one run was slower; see "
            "`cep/transports/kafka_clients.py`); with each case, where its batches spent "
            "their time, from the run's metrics.",
            "python bench/latency_ab.py --trees before=DIR,after=DIR --rates 50000,100000 "
            "--what TEXT --out latency-kafka-kept-clients.json",
            kafka_stages_ab_figures),
    Section("kafka_read.json", "Reading Kafka: where the read time goes",
            "The Kafka input's read path on 40-byte events of one partition: ten "
            "10,000-offset pieces read each with its own fetch (as the input tasks did) "
            "or with one fetch for the partition (as they do now), at the partition's end "
            "and 200,000 records before it. The embedded broker returns the whole rest of "
            "a partition to every fetch, so a piece far from the end costs what the rest "
            "costs. Then whole runs over the same records, before and after, and over "
            "the same events in a file.",
            "python bench/bench_kafka_read.py --trees BEFORE_DIR,AFTER_DIR",
            kafka_read_figures),
    Section("flink-match-recognize.json", "MATCH_RECOGNIZE beside Apache Flink",
            "Two MATCH_RECOGNIZE rules per aircraft over the flights "
            "(`bench/rules/flight_patterns.epl`: `A B+ C` WITHIN 24 hours with SKIP PAST "
            "LAST ROW, `A+ B` with SKIP TO NEXT ROW and aggregates): cep reads the JSON "
            "lines, Flink a CSV of the three fields the rules read, both rules as one job "
            "in batch mode. Flink's batch MATCH_RECOGNIZE ignores ORDER BY (FLINK-33722): "
            "its tasks match rows in the order they arrive, so at parallelism 2 its rows "
            "can differ from cep's (the last line says whether they did); at parallelism "
            "1 they are cep's.",
            "python bench/flink_mr_compare.py --copies 10 --rounds 2",
            flink_patterns_figures, "Flink runs in a virtual environment of its own, which "
            "`bash bench/flink_env.sh` makes once."),
    Section("flink-event-patterns.json", "Event patterns beside Apache Flink",
            "Two event patterns per aircraft over the flights "
            "(`bench/rules/flight_event_patterns.epl`: `every a -> b WITHIN 24 hours`, and "
            "an absence by `timer:interval`) against the nearest MATCH_RECOGNIZE Flink runs "
            "(`A C*? B` and `A N*? T`); the absence fires on a timer in cep and at the next "
            "row in Flink, so only the first rule's rows are compared.",
            "python bench/flink_mr_compare.py --workload event_patterns --copies 10 "
            "--rounds 2", flink_patterns_figures),
    Section("batch-floor.json", "Where a small batch's time goes",
            "A run at cep's defaults for the engines over batches of 1,000 events of a rule "
            "that costs next to nothing, with Spark's event log on: each batch's trigger "
            "split into Spark's parts, its job's stages (the tasks' time in the executor) "
            "and cep's own work inside the tasks, from cep's metrics.",
            "python bench/bench_batch_floor.py", batch_floor_figures),
    Section("gate-5nodes.json", "Moving keys only when it pays",
            "The Balancer's gate (`--moves pays`, the default) against the DLB paper's "
            "Balancer (`--moves always`) on 5 emulated nodes of 0.4 cores: FSD over "
            "240,000 tweets in batches of 20,000, in default order and in periodic Zipf "
            "order; one `cep bench --nodes 5 --strategies kg,dlb-h,dlb-l` per setting and "
            "round, the two settings in turn, each strategy's rate against its own "
            "bench's KG.", "python bench/gate_summary.py",
            gate_figures, "Needs the benches' files in `bench/results/gate-5nodes/` "
            "(`cep bench … --moves pays|always --json …`)."),
    Section("balance-cost.json", "What the balancing machinery costs a batch",
            "The calls a key-moving strategy adds to key grouping's, each batch, replayed "
            "in process over FSD's keys against the embedded MongoDB (SecantusDB): the "
            "input task's routing by the key map, the engines' map bookkeeping (which keys "
            "they import and export, the parcels' round trips), the driver's Balancer "
            "(statistics, strategy, gate, the map's write, collection), and the server "
            "process's CPU. `critical path`: the Balancer's and the server's CPU, plus the "
            "routing's and one engine's bookkeeping CPU on a 0.4-core node (CPU, since wall "
            "times on the shared machine move with its load). "
            "`best × KG` is `1 / (1 - share (1 - 1/headroom))`: the engines' share of KG's "
            "batch, shortened by the most a key-preserving placement can take off its "
            "busiest engines; `no-gain × KG` is `batch / (batch + critical path)`.",
            "python bench/bench_balance_cost.py --before DIR --rounds 3",
            balance_cost_figures),
    Section("event_time.json", "Event time: idle keys and timers",
            "The reference evaluator over a churn of users, each active for a few minutes of "
            "a long stream: how many keys hold state as time passes; and a per-key absence "
            "pattern (a timer per key) beside the same rule without the timer.",
            "python bench/bench_event_time.py", event_time_figures),
    Section("spark.json", "cep on Spark beside hand-written PySpark",
            "One per-key `#length(10)` aggregate with HAVING: cep on Spark, the same rule "
            "written by hand with `applyInPandasWithState`, and floors that do less than the "
            "rule needs; every query on the same session, events compared with the "
            "reference evaluator.", "python bench/bench_spark.py", spark_figures),
    Section("source.json", "The input source",
            "cep's Python Data Source (byte ranges, typed and validated, routed to engines) "
            "beside Spark's built-in JSON source on the same file.",
            "python bench/bench_source.py", source_figures),
    Section("readers.json", "The file readers",
            "Records per second of each format's reader, without Spark.",
            "python bench/bench_readers.py", readers_figures),
    Section("speed.json", "Speed at scale",
            "cep beside Apache Flink on the same rule and file, the fixed cost of a "
            "micro-batch, the cost of a batch against the state the engines hold, and FSD "
            "at the paper's scale. Each part records its own load average.",
            "python bench/bench_speed.py --parts flink,fixed,state,fsd", speed_figures,
            "Flink runs in a virtual environment of its own, which `bash bench/flink_env.sh` "
            "makes once; the flights data come with `pip install -e '.[bench]'`."),
    Section("speed-state-*.json", "Batch cost against the state held (another recording)",
            "The `state` part of `bench/bench_speed.py`, kept in a file of its own.",
            "python bench/bench_speed.py --parts state --out bench/results/NAME.json",
            state_before_figures),
    Section("state-path-*.json", "The engines' state path, before and after",
            "Where an engine's task time goes, restore, process, save and handoff, for a "
            "checkout before a change of the state path and one after it, run in turn in "
            "one invocation (and Apache Flink on the flights job): the flights "
            "`#length(5)` job at cep's defaults, and FSD at the paper's scale under KG.",
            "python bench/bench_state_path.py [--fsd] --before DIR --after .",
            state_path_figures),
    Section("handoff.json", "Handing moved keys over, before and after",
            "What moving keys costs: FSD under the periodic Zipf law on 5 emulated nodes "
            "(`cep bench --nodes 5`), KG then DLB-L, for a checkout before a change of "
            "the hand-over and one after it, in turn: keys and state moved, the engines' "
            "task seconds of export and import (per 1,000 keys) and DLB-L's rate against "
            "the KG run beside it ([docs/handoff.md](handoff.md#protocol)).",
            "python bench/bench_handoff.py --before DIR --after . --rounds 2",
            handoff_figures),
    Section("fsd-*.json", "First Story Detection at the paper's scale",
            "`cep verify` of FSD over the built-in `tweets` generator per strategy: "
            "throughput end to end, equality with KG, the engines' load RSTD, keys moved, "
            "the projected makespan and the headroom (the most any key placement could "
            "shorten the engines' part on this machine's task slots: "
            "[docs/balancing.md](balancing.md#headroom)).",
            "python bench/bench_fsd.py --n N --mode MODE --batch-size B --strategies "
            "kg,dlb-l [--engines E]", fsd_figures),
    Section("paper-*.json", "The DLB paper's experiment, a node per engine",
            "`cep bench --nodes N` of FSD over the built-in `tweets` generator: each engine "
            "on an emulated node of its own (a one-slot Spark worker in a cgroup capped at "
            "the machine's cores / N, [docs/balancing.md](balancing.md#a-node-per-engine)), "
            "the paper's Table 1 beside cep's; one file per order of the tweets and "
            "cluster (KG alone on 6 nodes: `--strategies kg --nodes 6`; the default "
            "order: no `mode`). `cep report` draws the paper's Figures 3 and 4 from the "
            "files.",
            "cep bench rules/fsd.epl --input Tweet=tweets:n=240000,mode=zipf-periodic,"
            "rate=200 --nodes 5 --batch-size 20000 --load events,cost --rounds 2 --json "
            "bench/results/paper-zipf-periodic-5nodes.json", table1_figures),
    Section("speedup*.json", "Speedup as the engines scale out (Guo & Zhou's Fig. 6)",
            "Throughput of FSD as the nodes grow from 1 to 5, each node a one-slot Spark "
            "worker in a cgroup capped at the same share of a core, an engine per node "
            "(`cep bench --nodes N --node-cpus C`), per strategy, against KG on one node; "
            "beside the ideal line and the bounds the 1-node run allows: Amdahl's law over "
            "the driver's serial part of a batch, and a batch's heaviest key kept on one "
            "engine. `cep report bench/results/FILE.json -o DIR` draws a file's figure.",
            "python bench/bench_speedup.py", speedup_figures,
            "Needs root and the cgroup v1 `cpu` controller, as `cep bench --nodes`; the "
            "per-point `cep bench` files go to `bench/results/speedup/`."),
    Section("batch-parts-*.json", "Where a batch's time goes on 5 emulated nodes",
            "One `cep bench --nodes 5` of the speedup bench's FSD job per case, with "
            "Spark's event log on: per batch the driver's part (wall time outside the "
            "batch's jobs), the input stage (reading, drawing and routing the tweets; its "
            "tasks per batch) and the engines' stage, from the tasks' launch and finish "
            "times. The cases are the generator's grid before and after its pieces were "
            "cut 4 times finer (`cep/io/inputlog.py`).",
            "PYSPARK_SUBMIT_ARGS='--conf spark.eventLog.enabled=true --conf "
            "spark.eventLog.dir=file:DIR --conf spark.eventLog.compress=false "
            "pyspark-shell' cep bench rules/fsd.epl --input tweets:n=600000,"
            "mode=zipf-periodic,rate=1000 --nodes 5 --node-cpus 0.4 --batch-size 120000 "
            "--warm-up 1 --strategies kg,dlb-l --json RUN.json (per tree), then python "
            "bench/batch_parts.py NAME=DIR:RUN.json ...", batch_parts_figures),
    Section("stage-cpu*.json", "Where N nodes lose against one, stage by stage",
            "One `cep bench --nodes N` per node count, with Spark's event log on while "
            "`bench/stage_cpu.py` samples every node's cgroup every 0.1 s: per batch, "
            "the input stage's and the engines' stage's span and each node's CPU seconds "
            "in it. A stage lasts at least its busiest node's CPU over the node's quota; "
            "against one node, a batch on N splits into the ideal (one node's batch over "
            "N), each stage's extra CPU for the same events, its busiest node over the "
            "mean, and the rest ([docs/balancing.md](balancing.md#speedup-as-the-nodes-grow)).",
            "python bench/stage_cpu.py --nodes 1,4 --out stage-cpu-defaultbatch.json",
            stage_cpu_figures,
            "Needs root and the cgroup v1 `cpu` and `cpuacct` controllers, as `cep bench "
            "--nodes`."),
    Section("*-ab-*nodes.json", "Two trees side by side on the emulated cluster",
            "The same `cep bench --nodes N` of FSD from two checkouts, in interleaved "
            "rounds, each side a whole process of its own tree; each strategy's "
            "throughput of the later tree over the earlier, per round and their median.",
            "python bench/nodes_ab.py BEFORE_TREE AFTER_TREE --nodes 4 --rounds 3 --out "
            "payload-ab-4nodes.json", nodes_ab_figures,
            "Each side's `cep bench` files go to `bench/results/speedup/`."),
    Section("scale-ab*.json", "A scale change's cost, two trees side by side",
            "`bench_scale_midrun.py --no-unscaled` from two checkouts in interleaved "
            "rounds, each side a whole process of its own tree: what the scale-out (2 → 4 "
            "engines) and the scale-in (4 → 2) handed over and what they cost.",
            "python bench/scale_ab.py BEFORE_TREE AFTER_TREE --rounds 2 --out "
            "scale-ab-narrow.json", scale_ab_figures,
            "Each run's file goes to `bench/results/scale_ab/`. Needs root and the cgroup "
            "v1 `cpu` controller, as `cep bench --nodes`."),
    Section("scale_midrun*.json", "Scaling out and in mid-run on the emulated cluster",
            "An FSD job over a backlog it reads at its own pace, on emulated nodes: "
            "2 engines on 2 nodes, 2 more nodes joining while it runs, `cep scale RUN_DIR "
            "4`, then `cep scale RUN_DIR 2`; throughput per phase, the change's keys, "
            "bytes and extra time, and the output against key grouping's at a fixed 4 "
            "engines, row for row.",
            "python bench/bench_scale_midrun.py", scale_midrun_figures,
            "Needs root and the cgroup v1 `cpu` controller, as `cep bench --nodes`."),
    Section("executor_heap*.json", "Executor memory over a long run",
            "Whether an executor's JVM heap stays bounded over a long FSD run on the "
            "emulated cluster (issue 51: executors of a 1 GB heap died of "
            "`OutOfMemoryError` at batch 30 of 33 when an engine's whole state went "
            "through a state call in one piece): every executor's heap sampled with "
            "`jstat` each second, with the resident memory of its JVM and of its Python "
            "workers, where the engines' state lives.",
            "python bench/bench_executor_heap.py --nodes 2 --engines 2", executor_heap_figures,
            "Needs root and the cgroup v1 `cpu` controller, as `cep bench --nodes`, and the "
            "JDK's `jstat`."),
    Section("stream*.json", "The streaming runtime",
            "`cep run` in a subprocess as a user meets it: the driver's peak memory against "
            "the input's size, FSD end to end, and the latency of `--follow`.",
            "python bench/bench_stream.py [--parts memory,paper,follow]", stream_figures),
    Section("transports_io.json", "Kafka and MongoDB transports",
            "The transports alone, without Spark, against the embedded brokers.",
            "python bench/bench_transports.py", transports_io_figures),
    Section("transports.json", "Kafka in, cep, Kafka out",
            "cep end to end from Kafka to Kafka beside the same records read from a file, "
            "and the consumer lag at a steady input rate.",
            "python bench/bench_transports.py --pipeline", transports_figures),
    Section("splitter.json", "Strategies on the DLB paper's workload",
            "The trace simulator (no Spark) on the periodic-Zipf trace: balance, moves and "
            "decision time of kg, dlb-h, dlb-l, lptf and pkg, beside the RSTD that no "
            "key-preserving placement can beat.", "python bench/bench_splitter.py",
            splitter_figures),
    Section("balancers.json", "Every balancer, simulated",
            "All eight strategies on the same trace, the MILP's solver time, and "
            "heterogeneous engines with measured capacity shares.",
            "python bench/bench_balancers.py", balancers_figures),
    Section("state.json", "The state codec",
            "cep's data-only state format beside pickle on the same engine state.",
            "python bench/bench_state.py", state_figures),
    Section("text.json", "The text functions",
            "`lsh_bucket` and `similarity` on synthetic 15-word tweets, one core.",
            "python bench/bench_text.py", text_figures),
    Section("udf.json", "User functions, scalar and vectorised",
            "The same computation as the language's functions, a scalar Python function "
            "and a vectorised one, and the two raising on a few records: in the worker "
            "process that guards the job against a hang or an exit, and in the job's "
            "own.",
            "python bench/bench_udf.py", udf_figures),
    Section("partitions.json", "State partitions beyond the engines",
            "What a job that may scale pays while it runs few engines: Spark runs a task "
            "per shuffle partition of the stateful stage every batch, so a 3-engine job "
            "started with a partition per engine up to 16 (`--engines auto:3-16` on a "
            "cluster) against one with 3.",
            "python bench/bench_partitions.py --events 20000 --batch 1000 --rounds 2",
            partitions_figures),
    Section("autoscale_step.json", "Automatic scaling under a rate step",
            "Whether `--engines auto` follows a step in the input rate: a followed file "
            "written at a base rate, then four times it, then the base rate again; the "
            "policy's changes per step (the issue's target: at most two per step, at a "
            "count that keeps up), when each was decided and when the batches ran at the "
            "new count, and the run's output against the reference evaluator's.",
            "python bench/bench_autoscale_step.py --rate 4000 --step-seconds 60 --slow 80",
            autoscale_step_figures),
    Section("tweets.json", "The tweets generator",
            "Generation speed, memory and key skew of the built-in `tweets` workload at the "
            "paper's scale.", "python bench/bench_tweets.py", tweets_figures),
    Section("ui.json", "What the live view costs a run",
            "The same FSD run with and without `--ui` and a client polling it.",
            "python bench/bench_ui.py", ui_figures),
)


def sections_for(names: list[str]) -> list[tuple[Section, list[str]]]:
    """Each known section with the files it shows, then one generic section per file
    no pattern claims, in name order."""
    claimed: set[str] = set()
    out: list[tuple[Section, list[str]]] = []
    for section in SECTIONS:
        files = [n for n in names if n not in claimed and fnmatch.fnmatch(n, section.pattern)]
        claimed.update(files)
        if files:
            out.append((section, files))
    for name in names:
        if name not in claimed:
            out.append((Section(name, f"`{name}`", "A result file this page does not "
                                "describe yet; its top-level figures.",
                                "see the bench that writes it", generic_figures), [name]))
    return out


def file_section(path: Path, section: Section) -> str:
    """One result file's figures with their provenance."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"`bench/results/{path.name}` could not be read ({type(err).__name__})."
    if not isinstance(data, dict):
        return f"`bench/results/{path.name}` holds no object of figures."
    # an FSD run kept inside another bench's file records its provenance beside it
    inner = [data["fsd"]] if section.figures is fsd_figures and isinstance(
        data.get("fsd"), dict) else []
    return (f"From `bench/results/{path.name}`. {provenance(*inner, data)}\n\n"
            + section.figures(data, path.name))

