"""Windows: data windows per key, window functions, and the rules that read them.

* ``keyed_window``: every key's retained rows of one window in one sorted table, merged
  with each batch (``#length``, ``#time``, ``#time_batch``, ``#unique``, ...);
* ``kinds``: what each window kind keeps and when a row leaves it;
* ``window_functions``: ``prev``, ``prior``, ``prevtail``, ``prevcount`` over a window;
* ``aggregates``: ``count``, ``sum``, ``avg``, ``stddev``, ... over window segments;
* ``rule``: ``SELECT ... FROM S#groupwin(k)#...`` (``WindowOperator``);
* ``join``: two windows joined per key (``JoinOperator``).

May import the engine's core (``cep.engine.table``, ``expr``, ``clock``, ``output``,
``keyed``, ...) and ``grammar``; never another operator family.
"""
