"""Event patterns: ``SELECT ... FROM PATTERN [...] PARTITION BY k``, in four forms.

* ``rule``: the operator a pattern rule is (``PatternOperator``) and the interpreter's
  form of it (``InterpretedPatternOperator``);
* ``nodes``, ``interpreter``, ``node_runtime``, ``node_combinators``: the interpreter: the
  pattern tree, the per-key matcher and its semantics, and each node's steps (leaves;
  nodes over nodes);
* ``columns``: what the column kernels share (candidate rows, slots, the state table);
* ``chain`` and ``chain_rule``: followed-by chains as next-occurrence searches;
* ``group_rule`` over ``group_kernel``: ``every (a -> b ...)`` groups, a compiled walk;
* ``until_rule`` over ``until_kernel``: ``[n:m] a until b``, a compiled walk.

``cep.engine.engine`` picks the form once per rule
(docs/architecture.md#patterns-the-column-kernels-and-the-interpreter).
May import the engine's core and ``grammar``; never another operator family.
"""
