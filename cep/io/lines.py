"""The lines of a byte range of a file, in bounded chunks (Hadoop's line-split rule).

A file cut into byte ranges ``[start, end)`` must have each of its lines read by exactly
one range, whatever the cuts, so that executors can read one big file as many
micro-batches. The rule is Hadoop's ``LineRecordReader``'s: a line *starts* at byte 0 or
right after a ``\\n``, and a range reads the lines whose first byte ``p`` satisfies
``start <= p < end``. A range starting mid-line skips to the next line start (the
line belongs to the range before), and a line starting before ``end`` is read to its end
even past ``end``. A last line with no ``\\n`` at the end of the file may be half-written
by a writer still appending; ``final=False`` leaves it out (a later read, once it is
terminated, will have it), ``final=True`` (a file at rest) reads it.

Memory stays within about two chunks plus ``limit`` whatever the range or the line
lengths: a line longer than ``limit`` is read past chunk by chunk and reported as an
:class:`Oversized` (its first bytes and its size), never held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

CHUNK_BYTES = 8 << 20  # lines are handed over in chunks of about this size
TAIL_BYTES = 64 << 10  # past the range's end, the last line's rest is read in such blocks
HEAD_BYTES = 4096  # what is kept of a line too large to read (the dead letter cuts it)


@dataclass
class Oversized:
    """A line over the record limit, read past: its first bytes and its size (no ``\\n``)."""

    head: bytes
    size: int


def first_line_start(fh: IO[bytes], start: int) -> int | None:
    """The offset of the first line start at or after ``start`` (None: none before EOF)."""
    if start <= 0:
        return 0
    fh.seek(start - 1)
    pos = start - 1
    while block := fh.read(TAIL_BYTES):
        newline = block.find(b"\n")
        if newline >= 0:
            return pos + newline + 1
        pos += len(block)
    return None


def range_chunks(
    fh: IO[bytes],
    start: int,
    end: int,
    limit: int,
    final: bool,
) -> Iterator[tuple[int, bytes | Oversized]]:
    """The lines starting in ``[start, end)`` as ``(offset, chunk)`` pairs in file order.

    A chunk is whole lines (each ending in ``\\n`` except, with ``final``, the file's
    unterminated last line), ``offset`` the file offset of its first byte. A line that
    grows past ``limit`` before its newline comes alone as an :class:`Oversized`.
    (Shorter over-limit lines stay inside their chunk; the caller rejects them by length.)
    """
    first = first_line_start(fh, start)
    if first is None or first >= end:
        return
    pos = first  # file offset of carry[0], always a line start before ``end``
    fh.seek(pos)
    carry = b""
    while True:
        ahead = max(end - pos - len(carry), 0)  # bytes left before the range's end
        block = fh.read(min(CHUNK_BYTES, ahead + TAIL_BYTES))
        buf = carry + block if carry else block
        stop = end - pos  # lines starting before buf[stop] are the range's
        if stop <= len(buf) and (newline := buf.find(b"\n", stop - 1)) >= 0:
            yield pos, buf[: newline + 1]
            return
        cut = buf.rfind(b"\n") + 1
        if not block:  # end of file: every line in buf starts before ``end``
            whole = buf if final else buf[:cut]
            if whole:
                yield pos, whole
            return
        if cut:
            yield pos, buf[:cut]
            pos, carry = pos + cut, buf[cut:]
        elif len(buf) <= limit:
            carry = buf
        else:
            line, rest = skip_line(fh, buf)
            if rest is None:  # the file ends inside the line
                if final:
                    yield pos, line
                return
            yield pos, line
            pos, carry = pos + line.size + 1, rest
            if pos >= end:
                return


def skip_line(fh: IO[bytes], start: bytes) -> tuple[Oversized, bytes | None]:
    """Read past the rest of a line that begins with ``start`` (no newline in it): the
    line as an :class:`Oversized` (its first HEAD_BYTES bytes, whatever the blocks read,
    so the dead letter does not depend on the chunking) and what follows its newline in
    the last block read (None if the file ends first)."""
    head, size = start[:HEAD_BYTES], len(start)
    while block := fh.read(CHUNK_BYTES):
        newline = block.find(b"\n")
        line_part = block if newline < 0 else block[:newline]
        if len(head) < HEAD_BYTES:
            head += line_part[: HEAD_BYTES - len(head)]
        size += len(line_part)
        if newline >= 0:
            return Oversized(head, size), block[newline + 1 :]
    return Oversized(head, size), None
