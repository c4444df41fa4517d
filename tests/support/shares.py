"""How many of a differential test's examples compared nothing but empty outputs.

``[] == []`` passes whatever the two sides do, so a test whose draws mostly give no
output proves little; a test counts its examples here and asserts a bound on the empty
share after Hypothesis is done (the examples of the shrinking phase count too: they are
examples the comparison ran on)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class EmptyShare:
    """Examples seen, and those whose every compared output was empty."""

    name: str
    examples: int = 0
    empty: int = 0
    kinds: dict[str, int] = field(default_factory=dict)

    def note(self, *outputs: object, kind: str | None = None) -> None:
        """One example, its outputs (empty when none of them has a row); ``kind`` counts
        a property of the draw (e.g. that its conditions relate variables)."""
        self.examples += 1
        self.empty += not any(len(o) for o in outputs)  # type: ignore[arg-type]
        if kind is not None:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def check(self, most_empty: float) -> None:
        """Print the figures and assert that at most ``most_empty`` of the examples were
        empty."""
        print(f"{self.name}: {self.examples} examples, {self.empty} empty "
              f"({self.empty / max(self.examples, 1):.0%}) {self.kinds}")
        assert self.examples and self.empty <= most_empty * self.examples, self


#: the shares being counted now, innermost last (see :func:`bounded`)
_COUNTING: list[EmptyShare] = []


def note(*outputs: object, kind: str | None = None) -> None:
    """Count one example of the differential test running inside :func:`bounded` (a
    no-op outside one, so a test body may be called on its own too)."""
    if _COUNTING:
        _COUNTING[-1].note(*outputs, kind=kind)


@contextmanager
def bounded(name: str, most_empty: float = 0.4) -> Iterator[EmptyShare]:
    """Count the examples of the Hypothesis test run inside (its body calls
    :func:`note`), then print the figures and assert the empty share's bound (not when
    the test itself failed: its own error is the one to see)."""
    share = EmptyShare(name)
    _COUNTING.append(share)
    try:
        yield share
    finally:
        _COUNTING.remove(share)
    share.check(most_empty)
