"""INSERT INTO chains on Spark: which stages a run has and how a stage's events reach
the next (``stages``), and what a chain may not do (``check``). Imports nothing else of
``cep.spark``.
"""
