"""The rule grammar (``epl.lark``, beside this module) as Lark's LALR parser.

Building the LALR tables costs about 1.5 s of CPU (more on a loaded machine), in every
process that parses rules: each ``cep`` command and each Spark worker. :func:`lalr` keeps
them in a private per-user cache directory, keyed by the grammar, the options and the Lark
and Python versions, loads them from there (about as fast as Lark's own pickled cache: the
rebuilding of Lark's objects from the tables dominates either way), and builds afresh
where that file is missing, damaged, or cannot be trusted.

The file is JSON, never a pickle: Lark's own cache (``cache=`` or ``save``/``load``)
unpickles the file, which runs whatever code it names, and cep reads no pickle that rests
outside the running process. The tables (Lark's ``memo_serialize``) are plain data:
dicts, lists, tuples, strings, numbers; JSON keeps tuples and dicts with other than
string keys as tagged objects (:func:`_to_json`). Lark's ``cache=`` also writes the file in
place, where a concurrent process (Spark starts several) can read half of it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Token
from lark.grammar import Rule
from lark.lexer import TerminalDef

from grammar.errors import Pos, RuleError

#: How the grammar is built; part of the cache key, so a change builds new tables.
_OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": False}


@functools.cache
def lalr() -> Lark:
    """The LALR parser, loaded from the cache or built on first use, and shared."""
    grammar = importlib.resources.files("grammar").joinpath("epl.lark").read_text(
        encoding="utf-8")
    cache = cache_file(grammar)
    if cache is not None and cache.exists():
        try:
            return _from_tables(json.loads(cache.read_text(encoding="utf-8"),
                                           object_hook=_from_json))
        except Exception:  # a damaged file, or tables of another Lark: build anew
            pass
    parser = Lark(grammar, **_OPTIONS, lexer_callbacks=_LEXER_CALLBACKS)
    if cache is not None:
        _save(parser, cache)
    return parser


def _from_tables(tables: dict[str, Any]) -> Lark:
    """A parser from :func:`_tables` (Lark's ``_load`` takes the dict its ``save`` would
    have pickled; the lexer callback is given again, as it is code)."""
    return Lark.__new__(Lark)._load(tables, lexer_callbacks=_LEXER_CALLBACKS)


def _tables(parser: Lark) -> dict[str, Any]:
    """What Lark's ``save`` writes, as plain data, without the lexer callback."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k != "lexer_callbacks"}
    return {"data": data, "memo": memo}


def _to_json(value: Any) -> Any:
    """``value`` in JSON's types: a tuple as ``{"#t": [...]}``, a dict whose keys are not
    all strings (or one that could be mistaken for a tag) as ``{"#i": [[k, v], ...]}``."""
    if isinstance(value, tuple):
        return {"#t": [_to_json(v) for v in value]}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("#") for k in value):
            return {k: _to_json(v) for k, v in value.items()}
        return {"#i": [[_to_json(k), _to_json(v)] for k, v in value.items()]}
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise TypeError(f"Lark's tables hold a {type(value).__name__}, which JSON cannot keep")


def _from_json(obj: dict[str, Any]) -> Any:
    """``json.loads``' object hook undoing :func:`_to_json`'s tags."""
    if len(obj) == 1:
        if "#t" in obj:
            return tuple(obj["#t"])
        if "#i" in obj:
            return {tuple(k) if isinstance(k, list) else k: v for k, v in obj["#i"]}
    return obj


def _save(parser: Lark, cache: Path) -> None:
    """Write the tables under a name of this process, readable by this user only, and
    rename them into place when complete: a concurrent process reads the whole file or
    none."""
    partial = cache.with_name(f"{cache.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        text = json.dumps(_to_json(_tables(parser)), separators=(",", ":"))
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, cache)
    except (OSError, TypeError):  # a full disk, a read-only cache: build again next time
        partial.unlink(missing_ok=True)


def cache_file(grammar: str) -> Path | None:
    """Where the tables of this grammar are kept, or None to build without a cache.

    The tables decide how every rule is read, so the file must be one that only this user
    can have written: it lives in ``$XDG_CACHE_HOME/cep`` or ``~/.cache/cep``, created with
    mode 0700, and is used only while that directory and the file are this user's and
    writable by no one else (not Lark's default, a fixed name in the shared /tmp that
    another user could create first).
    """
    key = hashlib.sha256(repr((grammar, sorted(_OPTIONS.items()), lark.__version__,
                               sys.version_info[:2])).encode()).hexdigest()[:16]
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
        directory = base / "cep"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = directory / f"epl-lalr-{key}.json"
        if not _private(directory) or (path.exists() and not _private(path)):
            return None
    except (OSError, RuntimeError):  # no home directory, a read-only one, ...
        return None
    return path


def _private(path: Path) -> bool:
    """Owned by this user and writable by no one else (group and others)."""
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _check_block_comment(token: Token) -> Token:
    """Lexer callback: the comment terminal also matches an unclosed ``/*`` so that it is
    reported as such, instead of as an unexpected ``/`` somewhere later."""
    if len(token.value) < 4 or not token.value.endswith("*/"):
        raise RuleError(
            "unterminated comment: '/*' is never closed by '*/'",
            Pos(token.line, token.column, token.line, token.column + 2),
        )
    return token


_LEXER_CALLBACKS = {"BLOCK_COMMENT": _check_block_comment}
