"""The one error type the language front end raises, rendered like a compiler diagnostic.

Every problem in rule text (syntax, names, types, keys) becomes a :class:`RuleError` that
knows the file, the 1-based line and column, and can print the offending source line with
a caret under the column. Callers (the CLI) catch only this type; anything else escaping
the front end is a bug.
"""

from __future__ import annotations

import difflib
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
        """``file:line:col: message``, the source line, a caret, and the hint if any."""
        head = f"{self.source_name}:{self.pos.line}:{self.pos.column}: error: {self.message}"
        # Lark counts lines by "\n" only; splitlines() would also split at \f, \x85, ...
        lines = [line.rstrip("\r") for line in self.source.split("\n")]
        out = [head]
        if 1 <= self.pos.line <= len(lines):
            text = lines[self.pos.line - 1].expandtabs(1)
            gutter = f"{self.pos.line:>4} | "
            out.append(gutter + text)
            width = 1
            if self.pos.end_line == self.pos.line and self.pos.end_column > self.pos.column:
                width = self.pos.end_column - self.pos.column
            width = max(1, min(width, len(text) - self.pos.column + 1))
            out.append(" " * (len(gutter) + self.pos.column - 1) + "^" * width)
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


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
