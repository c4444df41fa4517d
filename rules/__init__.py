"""The rule files shipped with cep (package ``cep.rules``): ``rules/<name>.epl`` is found
here when the current directory has no such file (see ``grammar.compile.bundled_rule``)."""
