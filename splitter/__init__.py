"""The Splitter (the project card's ``splitter/``): which engine gets each event, and the
Balancer that decides it.

Every event goes to the engine that owns its key, so that each engine holds whole keys
and its events are the reference evaluator's for those keys. The parts, in the order an
event meets them:

- ``routing.py``: on the executors, inside the input source's tasks, the stateless rules,
  then each row's key and its engine (a ``KeyRouter``: key grouping, partial key
  grouping, or the run's current key map), and one payload per engine;
- ``keymaps.py``: the key maps a router of moved keys reads from MongoDB (cached per
  process; a key map is key grouping plus the keys the Balancer moved);
- ``late_candidates.py``: which input events each engine checks for lateness (it alone
  knows the batch's watermark: ``cep.spark.engines.late_rows``);
- ``payload.py``: the bytes one engine's rows of one task travel as;
- ``engine_labels.py``: the group-by value of each engine, which puts engine e alone in
  Spark's shuffle partition e (the shuffle is the last hop of the Splitter);
- ``balancer.py``: on the driver, after each micro-batch, the engines' per-key loads into
  a strategy of ``splitter.policies``, whose answer is the key map two batches on;
- ``policies/``: the balancing policies (DLB-H, DLB-L, LPTF, PKG, ELB, CLB, MILP), load
  statistics and the trace simulator: pure functions over numpy arrays, never Spark.

How a moved key's state follows it is ``migration``'s.
"""
