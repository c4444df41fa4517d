"""The rule language (the project card's ``grammar/``): the EPL grammar (``epl.lark``) and
its front end, grammar → parser → AST → checker → IR, with located errors.

It imports nothing else of cep's and no pandas, pyarrow or Spark, so ``cep check`` starts
fast; everything that runs rules (``cep/engine``, the runtimes) builds on its IR."""
