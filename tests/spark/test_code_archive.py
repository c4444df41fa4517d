"""The zip of cep's code that a cluster's executors get (``session.code_archive``): every
module of cep's packages (``cep``, ``grammar``, ``splitter``, ``migration``), the grammar,
and the example rules as the ``cep.rules`` package."""

from __future__ import annotations

import zipfile

from support.spark_runs import ROOT

from cep.spark.jvm.session import CODE_PACKAGES, code_archive


def test_the_archive_holds_every_module_the_grammar_and_the_rules(tmp_path):
    with zipfile.ZipFile(code_archive(tmp_path)) as archive:
        names = set(archive.namelist())
    code = {p.relative_to(ROOT).as_posix() for name in CODE_PACKAGES
            for p in (ROOT / name).rglob("*") if p.suffix in (".py", ".lark")}
    rules = {f"cep/rules/{p.name}" for p in (ROOT / "rules").glob("*.epl")}
    assert {"cep/__init__.py", "grammar/epl.lark", "splitter/routing.py",
            "splitter/policies/dlb.py", "migration/store.py",
            "cep/rules/fsd.epl"} <= names
    assert names == code | rules | {"cep/rules/__init__.py"}
