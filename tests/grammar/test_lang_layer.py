"""The language is the bottom layer: compiling rules imports nothing of cep above it and
none of numpy, pandas, pyarrow or pyspark (``cep check`` must stay quick), and the LALR
tables it caches between processes live where only this user can write."""

from __future__ import annotations

import json
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grammar import grammar

ROOT = Path(__file__).parent.parent.parent
REPORT = """
import json, sys
from grammar.compile import compile_file, compile_text
module = compile_file("rules/fsd.epl")
compile_text("CREATE SCHEMA S (k string, ts timestamp) TIMESTAMP ts; SELECT k FROM S;")
print(json.dumps({
    "stateful": [r.name for r in module.stateful],
    "heavy": sorted(m for m in sys.modules
                    if m.split(".")[0] in ("numpy", "pandas", "pyarrow", "pyspark")),
    "outside_lang": sorted(m for m in sys.modules
                           if m.startswith("cep.") and not m.startswith("grammar")),
}))
"""


def _python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter that imports this tree's cep; its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env}, check=True)
    return proc.stdout


def test_compiling_rules_imports_only_the_language() -> None:
    report = json.loads(_python(REPORT))
    assert report == {"stateful": ["first_story"], "heavy": [], "outside_lang": []}


def test_the_tables_are_cached_in_a_private_directory(tmp_path: Path) -> None:
    """A first process builds the tables and writes them under $XDG_CACHE_HOME/cep, made
    with mode 0700; a second one loads them, and both parse alike."""
    parse = ("from grammar.parser import parse; "
             "print(repr(parse(open('rules/fsd.epl').read(), 'fsd.epl')))")
    built = _python(parse, XDG_CACHE_HOME=str(tmp_path))
    directory = tmp_path / "cep"
    [cached] = directory.iterdir()
    assert cached.name.startswith("epl-lalr-") and cached.suffix == ".json"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    written = cached.stat().st_mtime_ns
    assert _python(parse, XDG_CACHE_HOME=str(tmp_path)) == built
    assert cached.stat().st_mtime_ns == written  # loaded, not written again


def test_a_damaged_cache_is_built_anew(tmp_path: Path) -> None:
    parse = "from grammar.parser import parse; print(repr(parse('SELECT a FROM T;')))"
    good = _python(parse, XDG_CACHE_HOME=str(tmp_path))
    [cached] = (tmp_path / "cep").iterdir()
    whole = cached.read_bytes()
    cached.write_bytes(whole[: len(whole) // 2])  # as a process killed while writing would
    assert _python(parse, XDG_CACHE_HOME=str(tmp_path)) == good
    assert cached.read_bytes() != whole[: len(whole) // 2]
    assert stat.S_IMODE(cached.stat().st_mode) == 0o600


@pytest.mark.parametrize("open_to", ["directory", "file"])
def test_no_cache_that_others_could_write_is_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  open_to: str) -> None:
    """The cached tables decide how rules are read: a directory or file writable by group
    or others (where someone else could have put tables of their own) is not used at all."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = grammar.cache_file("a grammar")
    assert path is not None and path.parent == tmp_path / "cep"
    if open_to == "directory":
        path.parent.chmod(0o777)
    else:
        path.write_bytes(b"")
        path.chmod(0o666)
    assert grammar.cache_file("a grammar") is None


def test_the_cache_key_follows_the_grammar(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first, again = grammar.cache_file("a grammar"), grammar.cache_file("a grammar")
    assert first == again
    assert grammar.cache_file("another grammar") not in (None, first)


def test_the_tables_round_trip_through_json() -> None:
    """The cache keeps exactly what Lark's own ``save`` would pickle: tuples, dicts keyed by
    numbers and all, so the loaded parser is the built one."""
    tables = grammar._tables(grammar.lalr())
    text = json.dumps(grammar._to_json(tables))
    assert json.loads(text, object_hook=grammar._from_json) == tables
    loaded = grammar._from_tables(json.loads(text, object_hook=grammar._from_json))
    fsd = (ROOT / "rules" / "fsd.epl").read_text()
    assert loaded.parse(fsd) == grammar.lalr().parse(fsd)


def test_a_pickle_in_the_cache_runs_nothing(tmp_path: Path) -> None:
    """Whatever sits at the cache's path is read as JSON, never unpickled: a pickle that
    would run code (as Lark's own cache format would, if it were read with pickle) only
    makes the tables be built again."""
    parse = "from grammar.parser import parse; print(repr(parse('SELECT a FROM T;')))"
    good = _python(parse, XDG_CACHE_HOME=str(tmp_path))
    [cached] = (tmp_path / "cep").iterdir()
    ran = tmp_path / "ran"
    cached.write_bytes(pickle.dumps(_Planted(str(ran))))
    assert _python(parse, XDG_CACHE_HOME=str(tmp_path)) == good
    assert not ran.exists()
    json.loads(cached.read_text())  # built again, and written as JSON


class _Planted:
    """Unpickled, this would create a file: what a hostile cache file could do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))
