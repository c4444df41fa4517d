"""The rule grammar (``epl.lark``, beside this module) as Lark's LALR parser.

Building the LALR tables costs about 1.5 s of CPU (more on a loaded machine), in every
process that parses rules: each ``cep`` command and each Spark worker. Lark can save the
tables and load them instead (0.05 s); :func:`lalr` keeps them in a private per-user
cache directory, keyed by the grammar, the options and the Lark and Python versions, and
builds afresh where that directory is missing or cannot be trusted.
"""

from __future__ import annotations

import contextlib
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
    """The LALR parser, built (or loaded from the cache) on first use and shared."""
    grammar = importlib.resources.files("cep.lang").joinpath("epl.lark").read_text(
        encoding="utf-8")
    callbacks = {"BLOCK_COMMENT": _check_block_comment}
    cache = _cache_file(grammar)
    if cache is None:
        return Lark(grammar, **_OPTIONS, lexer_callbacks=callbacks)
    if cache.exists():
        return Lark(grammar, **_OPTIONS, lexer_callbacks=callbacks, cache=str(cache))
    # Lark writes the file in place; writing it under a name of this process and renaming
    # it when complete keeps a concurrent process (a Spark worker) from reading half of it.
    partial = cache.with_name(f"{cache.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    parser = Lark(grammar, **_OPTIONS, lexer_callbacks=callbacks, cache=str(partial))
    with contextlib.suppress(OSError):  # no cache written: the next process builds again
        os.replace(partial, cache)
    return parser


def _cache_file(grammar: str) -> Path | None:
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
