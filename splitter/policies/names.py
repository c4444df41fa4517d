"""The names of the Splitter's choices, for whoever only needs the names (the command
line's options, a run's summary): importing the strategies themselves pulls SciPy and
the MILP solver, some 0.7 s that a local run, which balances nothing, should not pay.
The modules that implement each choice take their names from here."""

from __future__ import annotations

#: map-based strategies by CLI name (``splitter.policies.strategies.STRATEGIES``);
#: ``pkg`` is not among them: it routes per event (``splitter.policies.pkg``)
MAP_STRATEGIES = ("kg", "dlb-h", "dlb-l", "lptf", "elb", "clb", "milp")
#: strategies under which every key lives on exactly one engine at a time, so their
#: complex events must equal KG's
KEY_PRESERVING: frozenset[str] = frozenset(MAP_STRATEGIES)
CAPACITY_MODES = ("equal", "measured")  # splitter.policies.simulate
LOAD_MEASURES = ("events", "cost")  # splitter.policies.stats
MOVE_POLICIES = ("pays", "always")  # splitter.move_gain
PAYBACK_BATCHES = 3  # a move must pay for itself within this many batches
