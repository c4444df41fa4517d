"""``with resource:`` for the classes that hold a file, a client or a connection and
have a ``close()``: one definition of the context protocol instead of a copy in each."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """A resource that ``with`` closes, whatever ends the block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
