"""The output side of a micro-batch: the engines' event parts (``event_parts``), the
driver's ``foreachBatch`` (``sink``: metrics, the Balancer's hook, delivery), delivery
exactly once where the user asked (``delivery``), the latest events for a live view
(``latest``) and user functions' dead letters written once (``udf_seen``). May import
nothing else of ``cep.spark``.
"""
