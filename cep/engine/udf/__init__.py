"""User functions: loading ``--udf`` files and shipping them to Spark's workers.

* ``files``: a ``--udf`` file's functions checked and registered (``load_udf_files``);
* ``shipment``: the files a Spark job's workers import, by content hash.

Calling a function and collecting what it raised on are the core's
(``cep.engine.functions``, ``cep.engine.udf_errors``): the expression evaluator needs
them, and the core imports no family. This package may import the core.
"""
