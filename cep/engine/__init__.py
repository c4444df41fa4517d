"""Engine operators: the one home of rule semantics (windows, aggregates, joins,
patterns, functions), shared by the reference evaluator and the Spark runtime."""
