"""MATCH_RECOGNIZE (SQL:2016 row pattern recognition), per partition key.

* ``rule``: the operator a MATCH_RECOGNIZE rule is (``MatchRecognizeOperator``);
* ``program``: the pattern compiled into a program of instructions, which both
  matchers run;
* ``plan``: which matcher runs a rule, decided once;
* ``compiled`` over ``kernel``: the compiled matcher (numba) and its operator side;
  ``columns`` builds its measures column-wise;
* ``interpreter``: the matcher over rows as dicts, for every rule the kernel does not
  take, and the kernel's oracle;
* ``measures``, ``navigation``: MEASURES and PREV/NEXT/FIRST/LAST over a match;
  ``define_reads``: what the DEFINE conditions read, found once;
* ``exact_sum``: the exact float sums both matchers' aggregates use.

May import the engine's core and ``grammar``; never another operator family.
"""
