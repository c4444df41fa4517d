"""The JVM and the Python workers Spark starts: the SparkSession and why each setting
(``session``), the class-data-sharing archive and the jars' cache that make it start
sooner (``archive``, ``cache``), the checkpoint file system without a forked process per
file (``local_fs`` and ``NioLocalFileSystem.java``), and the Python a local master's
workers run (``worker_python``). Imports nothing else of
``cep.spark``.
"""
