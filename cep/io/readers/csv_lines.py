"""The CSV reader: one record per line, the header on the file's first line.

A range is read in the same chunks of whole lines as JSON lines (:mod:`cep.io.lines`) and
goes through pyarrow's CSV reader (all columns as strings, then the shared converters of
:mod:`cep.io.readers.convert`); the header is the file's first line, read on its own by a
range that starts later. A CSV record is one line: a range reader cannot tell where a
quoted value spanning lines begins, so a line with an odd number of ``"`` (one that
opens or closes such a value, or holds a stray quote) is a ``bad_row`` dead letter, and
the lines between an opening and a closing one are read as rows of their own (usually
``bad_row`` for their number of cells). Chunks whose rows pyarrow does not map one to
one onto lines are re-read line by line with :mod:`csv`.

Missing is NULL: an empty unquoted cell, or a column the header lacks. Limitation: in
the line-by-line path a quoted empty string ``""`` reads as null like an empty cell.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from cep.io.lines import TAIL_BYTES, Oversized, range_chunks
from cep.io.readers.reader import Reader, line_bounds, text_of, utf8_error, utf8_ok


def _csv_header(fh: IO[bytes], limit: int) -> list[str]:
    """The column names on a CSV file's first line ([] if that line is over ``limit``)."""
    fh.seek(0)
    head = b""
    while len(head) <= limit and (block := fh.read(TAIL_BYTES)):
        head += block
        if b"\n" in block:
            break
    line = head.split(b"\n", 1)[0]
    if len(line) > limit:
        return []
    return next(csv.reader([text_of(line)]), [])


class CsvReader(Reader):
    """Reads byte ranges of CSV files (see the module notes)."""

    def read_records(self, path: str, start: int, end: int, final: bool) -> None:
        with open(path, "rb") as fh:
            header = _csv_header(fh, self.max_record_bytes)
            for offset, chunk in range_chunks(fh, start, end, self.max_record_bytes, final):
                if isinstance(chunk, Oversized):
                    self.reject_too_large(offset, chunk.size, chunk.head)
                else:
                    self.csv_chunk(chunk, offset, header)

    def csv_chunk(self, chunk: bytes, base: int, header: list[str]) -> None:
        """Read one chunk of whole lines starting at file offset ``base``: lines too large,
        not UTF-8 or with an odd number of quotes are rejected, blank ones counted, the
        header line (offset 0) passed over, the rest parsed by pyarrow as one table."""
        buf, starts, ends = line_bounds(chunk)
        offsets = base + starts
        lengths = ends - starts
        cr_only = (lengths == 1) & (buf[np.minimum(starts, len(buf) - 1)] == ord("\r"))
        blank = (lengths == 0) | cr_only
        quotes = np.concatenate([[0], np.cumsum(buf == ord('"'))])
        spans = (quotes[ends] - quotes[starts]) % 2 == 1  # opens or closes a multi-line value
        large = lengths > self.max_record_bytes
        header_line = offsets == 0
        utf8 = utf8_ok(chunk)
        rejected = large | spans | (not utf8)  # not UTF-8: decided per line below
        for i in np.flatnonzero(rejected & ~header_line).tolist():
            line = chunk[starts[i] : ends[i]]
            if large[i]:
                self.reject_too_large(offsets[i], int(lengths[i]), line)
            elif not utf8 and (bad_at := utf8_error(line)) is not None:
                self.reject(offsets[i], "invalid_utf8", f"invalid UTF-8 at byte {bad_at}", line)
            elif spans[i]:
                self.reject(offsets[i], "bad_row", "an odd number of quote characters: a quoted "
                            "value spanning lines (not supported; a CSV record must be one "
                            "line) or a stray quote", line)
            else:
                rejected[i] = False
        self.dead.skip(int((blank & ~rejected & ~header_line).sum()))
        rows = np.flatnonzero(~rejected & ~blank & ~header_line)
        if not len(rows):
            return
        lines = [chunk[starts[i] : ends[i]] for i in rows.tolist()]
        data = chunk if len(rows) == len(starts) else b"\n".join(lines) + b"\n"
        self.csv_table(data, lines, offsets[rows], header)

    def csv_table(self, data: bytes, lines: list[bytes], offsets: np.ndarray,
                  header: list[str]) -> None:
        """Parse lines that are each one record with pyarrow (one row per line, else the
        lines go one by one through :mod:`csv`); rows with the wrong number of cells are
        rejected."""
        present = self.columns_in(header)
        invalid: list[tuple[int, str]] = []  # (1-based row number, text)

        def on_invalid(row: Any) -> str:
            invalid.append((row.number, row.text))
            return "skip"

        try:
            table = pa_csv.read_csv(
                io.BytesIO(data),
                read_options=pa_csv.ReadOptions(
                    use_threads=False, block_size=1 << 24, column_names=header
                ),
                parse_options=pa_csv.ParseOptions(invalid_row_handler=on_invalid),
                convert_options=pa_csv.ConvertOptions(
                    column_types={name: pa.string() for name in present},
                    include_columns=present,
                    strings_can_be_null=True,
                    null_values=[""],
                    quoted_strings_can_be_null=False,
                ),
            )
        except pa.ArrowInvalid:
            table = None
        if table is None or table.num_rows + len(invalid) != len(lines):
            self.csv_per_line(lines, offsets, header)
            return
        good = np.ones(len(lines), dtype=bool)
        for number, text in invalid:
            good[number - 1] = False
            self.csv_bad_row(offsets[number - 1], text, header)
        kept = np.flatnonzero(good)
        self.csv_accept(
            {name: table.column(name) for name in present},
            offsets[kept],
            lambda r: lines[kept[r]],
        )

    def csv_bad_row(self, offset: int, text: str, header: list[str]) -> None:
        """A row with the wrong number of cells: rejected, or skipped if only whitespace."""
        if not text.strip():
            self.dead.skip()
            return
        n_cols = len(next(csv.reader([text]), []))
        self.reject(offset, "bad_row", f"expected {len(header)} columns, got {n_cols}", text)

    def csv_per_line(self, lines: list[bytes], offsets: np.ndarray, header: list[str]) -> None:
        """Lines pyarrow did not map one to one onto rows, each parsed alone by :mod:`csv`."""
        present = self.columns_in(header)
        where = {name: header.index(name) for name in present}
        values: dict[str, list[str | None]] = {name: [] for name in present}
        kept: list[int] = []
        for i, (line, offset) in enumerate(zip(lines, offsets.tolist(), strict=True)):
            text = text_of(line)
            try:
                record = next(csv.reader([text], strict=True), [])
            except csv.Error as err:
                self.reject(offset, "bad_row", f"not a CSV row: {err}", line)
                continue
            if len(record) != len(header):
                self.csv_bad_row(offset, text, header)
                continue
            for name in present:
                cell = record[where[name]]
                values[name].append(cell if cell != "" else None)
            kept.append(i)
        self.csv_accept(
            {name: pa.array(values[name], type=pa.string()) for name in present},
            offsets[np.array(kept, dtype=np.int64)],
            lambda r: lines[kept[r]],
        )

    def csv_accept(
        self,
        columns: dict[str, pa.Array],
        offsets: np.ndarray,
        raw: Callable[[int], bytes | str],
    ) -> None:
        n = len(offsets)
        cols = {
            f.name: self.first_present(f, [columns.get(c) for c in f.columns], n, text_cells=True)
            for f in self.paths
        }
        self.accept_columns(cols, offsets, raw)
