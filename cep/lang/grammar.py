"""The rule grammar (``epl.lark``, beside this module) as Lark's LALR parser.

Building the LALR tables costs about 1.5 s of CPU (more on a loaded machine), in every
process that parses rules: each ``cep`` command and each Spark worker. :func:`lalr` keeps
them in a private per-user cache directory (Lark's ``save``/``load``), keyed by the
grammar, the options and the Lark and Python versions, loads them from there (0.1 s), and
builds afresh where that file is missing, damaged, or cannot be trusted.

Lark's own ``Lark(..., cache=path)`` is not used: it writes the file in place, where a
concurrent process (Spark starts several) can read half of it, and it keys the file on
its path, so a file written under a temporary name and renamed is never valid.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
import secrets
import stat
import sys
from pathlib import Path

import lark
from lark import Lark, Token

from cep.lang.errors import Pos, RuleError

#: How the grammar is built; part of the cache key, so a change builds new tables.
_OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": False}


@functools.cache
def lalr() -> Lark:
    """The LALR parser, loaded from the cache or built on first use, and shared."""
    grammar = importlib.resources.files("cep.lang").joinpath("epl.lark").read_text(
        encoding="utf-8")
    cache = cache_file(grammar)
    if cache is not None and cache.exists():
        try:
            with cache.open("rb") as f:
                return Lark.load(f)
        except Exception:  # unpickling a damaged file can raise anything: build anew
            pass
    parser = Lark(grammar, **_OPTIONS, lexer_callbacks={"BLOCK_COMMENT": _check_block_comment})
    if cache is not None:
        _save(parser, cache)
    return parser


def _save(parser: Lark, cache: Path) -> None:
    """Write the tables under a name of this process, readable by this user only, and
    rename them into place when complete: a concurrent process reads the whole file or
    none. (The lexer callback is saved by reference, as cep.lang.grammar's function.)"""
    partial = cache.with_name(f"{cache.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            parser.save(f)
        os.replace(partial, cache)
    except OSError:  # a full disk, a read-only cache: the next process builds again
        partial.unlink(missing_ok=True)


def cache_file(grammar: str) -> Path | None:
    """Where the tables of this grammar are kept, or None to build without a cache.

    Lark reads the file with pickle, and unpickling runs whatever code the file names, so
    it must be a file that only this user can have written: it lives in
    ``$XDG_CACHE_HOME/cep`` or ``~/.cache/cep``, created with mode 0700, and is used only
    while that directory and the file are this user's and writable by no one else (not
    Lark's default, a fixed name in the shared /tmp that another user could create first).
    """
    key = hashlib.sha256(repr((grammar, sorted(_OPTIONS.items()), lark.__version__,
                               sys.version_info[:2])).encode()).hexdigest()[:16]
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
        directory = base / "cep"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = directory / f"epl-lalr-{key}.pickle"
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
