"""The parts of ``docs/performance.md``'s writer, ``bench/performance_page.py``.

``figures.py`` reads a figure out of a result file and writes it for a table,
``provenance.py`` the line that says when and where a file's figures were measured,
``sections.py`` which section shows which result files (and how a file's section is
put together); the sections' tables are written by ``parts.py`` (cep's parts measured
alone), ``runtime.py`` (cep on Spark, its inputs, outputs and latency), ``compare.py``
(beside Apache Flink, and before and after a change) and ``balancing.py`` (strategies
and moved keys).

Only the standard library is imported, so the page can be written without cep's
dependencies; a module here imports nothing of cep's code and, of this package, only
what its imports name. The package is ``page`` on the path: ``bench/`` is on it when
the page's script runs, and the script puts it there when it is loaded by path
(``tests/test_docs.py``).
"""
