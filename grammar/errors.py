"""The one error type the language front end raises, rendered like a compiler diagnostic.

Every problem in rule text (syntax, names, types, keys) becomes a :class:`RuleError` that
knows the file, the 1-based line and column, and can print the offending source line with
a caret under the column. Callers (the CLI) catch only this type; anything else escaping
the front end is a bug.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Pos:
    """A 1-based source position (start and end) of a node in the rule text."""

    line: int
    column: int
    end_line: int = 0
    end_column: int = 0


NOWHERE = Pos(1, 1, 1, 1)


class RuleError(Exception):
    """A problem in rule text, located at ``file:line:col``.

    ``source`` is the whole rule text so the message can show the line and a caret.
    """

    def __init__(
        self,
        message: str,
        pos: Pos | None = None,
        *,
        source_name: str = "<rule>",
        source: str = "",
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos or NOWHERE
        self.source_name = source_name
        self.source = source
        self.hint = hint

    def located(self, source_name: str, source: str) -> RuleError:
        """Return the same error attached to a file name and text (keeps the position)."""
        return RuleError(
            self.message, self.pos, source_name=source_name, source=source, hint=self.hint
        )

    def render(self) -> str:
        """``file:line:col: message``, the source line, a caret, and the hint if any.
        An error about a file as a whole (none at a place: it does not exist, is not
        UTF-8) is the one line ``file: error: message``, no place and no empty excerpt."""
        if not self.source and self.pos == NOWHERE:
            head = f"{self.source_name}: error: {self.message}"
        else:
            head = f"{self.source_name}:{self.pos.line}:{self.pos.column}: error: {self.message}"
        # Lark counts lines by "\n" only; splitlines() would also split at \f, \x85, ...
        lines = [line.rstrip("\r") for line in self.source.split("\n")] if self.source else []
        out = [head]
        if 1 <= self.pos.line <= len(lines):
            width = 1
            if self.pos.end_line == self.pos.line and self.pos.end_column > self.pos.column:
                width = self.pos.end_column - self.pos.column
            text, column, width = _excerpt(lines[self.pos.line - 1], self.pos.column, width)
            gutter = f"{self.pos.line:>4} | "
            out.append(gutter + text)
            width = max(1, min(width, len(text) - column + 1))
            out.append(" " * (len(gutter) + column - 1) + "^" * width)
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


#: Widest source line a diagnostic shows; a longer one is cut around the column.
SHOWN_LINE_CHARS = 200


def _excerpt(line: str, column: int, width: int) -> tuple[str, int, int]:
    """The part of a source line to show under a message, with the column and caret width
    moved into it.

    A one-line file of megabytes must not be printed whole, and control or format
    characters (NUL, a right-to-left override) must not reach the terminal, where they
    would garble or reorder the line: each becomes one U+FFFD, so columns stay right.
    """
    text = "".join(
        "\ufffd" if unicodedata.category(ch) in _UNSHOWN else ch
        for ch in line.expandtabs(1)
    )
    if len(text) <= SHOWN_LINE_CHARS:
        return text, column, width
    start = min(max(0, column - 1 - SHOWN_LINE_CHARS // 2), len(text) - SHOWN_LINE_CHARS)
    end = start + SHOWN_LINE_CHARS
    head = "..." if start else ""
    tail = "..." if end < len(text) else ""
    column = column - start + len(head)
    width = min(width, SHOWN_LINE_CHARS + len(head) - column + 1)
    return head + text[start:end] + tail, column, width


# Unicode categories of characters never printed raw: control, format, line and
# paragraph separators, surrogates, private use and unassigned.
_UNSHOWN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A "did you mean" hint for an unknown name, matching case-insensitively first."""
    pool = sorted(set(candidates))
    lowered = {c.lower(): c for c in pool}
    if name.lower() in lowered:
        return f"did you mean '{lowered[name.lower()]}'? (names are case-sensitive)"
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    return f"did you mean '{close[0]}'?" if close else None
