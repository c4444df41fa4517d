"""The Parquet reader: rows of a typed file, read by row range.

Parquet is typed already; values are still checked by the shared converters
(:mod:`cep.io.readers.convert`): an int field stored as int64 must fit 32 bits, a double
column feeding an int field must hold integers. A range is a row range, read in batches
of :data:`PARQUET_BATCH_ROWS` rows from the row groups that hold it; a record's offset is
its 0-based row index. Struct columns are followed like JSON objects; a null or a missing
column is NULL. A row is too large by the bytes of its string values.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cep.io import fieldpaths
from cep.io.readers.convert import plain_strings
from cep.io.readers.reader import Reader

PARQUET_BATCH_ROWS = 1 << 16  # Parquet rows are converted in batches of this many


class ParquetReader(Reader):
    """Reads row ranges of Parquet files (see the module notes)."""

    def read_records(self, path: str, start: int, end: int, final: bool) -> None:
        """Rows ``[start, end)``, reading only the row groups that hold them, in batches
        (``final`` does not apply: a Parquet file is whole when it appears)."""
        pf = pq.ParquetFile(path)
        present = self.columns_in(pf.schema_arrow.names)
        meta = pf.metadata
        sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        firsts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        groups = [g for g in range(len(sizes)) if firsts[g] < end and firsts[g + 1] > start]
        if not groups:
            return
        row = int(firsts[groups[0]])
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=groups,
                                     columns=present, use_threads=False):
            lo, hi = max(start - row, 0), min(end - row, batch.num_rows)
            if lo < hi:
                self.parquet_rows(pa.Table.from_batches([batch]).slice(lo, hi - lo), row + lo)
            row += batch.num_rows

    def parquet_rows(self, table: pa.Table, first_row: int) -> None:
        offsets = np.arange(first_row, first_row + table.num_rows, dtype=np.int64)

        def raw(i: int) -> str:
            return json.dumps(table.slice(i, 1).to_pylist()[0], default=str)

        sizes = np.zeros(table.num_rows, dtype=np.int64)
        for name in table.column_names:
            column = plain_strings(table.column(name).combine_chunks())
            if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
                sizes += pc.binary_length(column).fill_null(0).to_numpy(zero_copy_only=False)
        large = sizes > self.max_record_bytes
        for i in np.flatnonzero(large).tolist():
            self.reject_too_large(offsets[i], int(sizes[i]), raw(i))
        n = table.num_rows
        cols = {
            f.name: self.first_present(f, [fieldpaths.select(table, k) for k in f.paths], n,
                                       text_cells=False)
            for f in self.paths
        }
        self.accept_columns(cols, offsets, raw, undecided=large)
