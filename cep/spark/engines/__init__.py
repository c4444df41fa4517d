"""The engines' side of a micro-batch: the stateful processor Spark calls per engine
(``processor``), one engine's batch (``batch``): state restored, keys moved in, rules
run, keys moved out, state saved, events written; what every engine task knows
(``task``), the engine's log in the state store (``log``), engines kept resident in
their Python workers (``resident``) and late rows on the batch's watermark
(``late_rows``). May import ``cep.spark.output`` and ``cep.spark.chains``.
"""
