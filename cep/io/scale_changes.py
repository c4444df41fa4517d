"""A running job's scale requests in its run directory: ``cep scale RUN_DIR N`` (or
:func:`scale`, or a restart with other ``--engines``) asks for N engines; the job's
Balancer applies the newest request at the first key map it writes after it.

``DIR/scale/`` holds JSON files only, written as ``cep.io.rule_changes`` writes the
change log (whole under a temporary name, then linked into place, fsynced):

* ``request-000001.json``, …: one per request, ``{"engines": N, "by": "cep scale" |
  "restart" | "auto", "written": time}`` (``auto``'s with its ``reason``); the
  number is claimed with a hard link that fails if taken, so two commands at once
  never write the same one; never rewritten;
* ``applied.json``: written by the job's driver (:class:`ScaleHook`): each change that
  applied, the request it came from, its batch, counts and what it handed over.

Why this is enough for "exactly one batch, across kill -9": the Balancer reads the
newest request when it decides map ``M[t+2]`` after batch t (``splitter.balancer``),
and maps are write-once in MongoDB. The map is the record: a replayed batch t finds
``M[t+2]`` written and keeps it, whatever was asked since, so the change applies at
the batch of the first map written after the request, however often batches run. A
request written while the job is stopped applies at the first map the restarted job
writes. ``applied.json`` only says so, for people and ``cep scale --status``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cep.io.rule_changes import append_numbered, write_json

SCALE_DIR = "scale"
#: The most engines a job may have: a running job knows the Spark group labels of this
#: many engines from its start (``splitter.engine_labels``), so it can grow to any count
#: up to it without a restart.
MAX_ENGINES = 256
_REQUEST = re.compile(r"^request-(\d{6})\.json$")


class ScaleError(Exception):
    """A scale request cep cannot write or a job cannot take; the message says why."""


@dataclass(frozen=True)
class Request:
    """Request ``number`` asks for ``engines`` engines (``by``: who asked)."""

    number: int
    engines: int
    by: str
    reason: str = ""  # ``--engines auto``'s, in words


class ScaleLog:
    """The scale requests of the run in ``workdir``."""

    def __init__(self, workdir: str | Path) -> None:
        self.workdir = Path(workdir)
        self.dir = self.workdir / SCALE_DIR

    def numbers(self) -> list[int]:
        if not self.dir.is_dir():
            return []
        return sorted(int(m.group(1)) for name in os.listdir(self.dir)
                      if (m := _REQUEST.match(name)))

    def requests(self) -> list[Request]:
        out = []
        for number in self.numbers():
            path = self.dir / f"request-{number:06d}.json"
            try:
                raw = json.loads(path.read_text())
                out.append(Request(number, int(raw["engines"]), str(raw.get("by", "")),
                                   str(raw.get("reason", ""))))
            except (ValueError, KeyError, TypeError) as err:
                raise ScaleError(f"{path} is damaged ({err})") from None
        return out

    def latest(self) -> Request | None:
        """The newest request (the one a decision follows), None if there is none."""
        numbers = self.numbers()
        if not numbers:
            return None
        path = self.dir / f"request-{numbers[-1]:06d}.json"
        try:
            raw = json.loads(path.read_text())
            return Request(numbers[-1], int(raw["engines"]), str(raw.get("by", "")))
        except (ValueError, KeyError, TypeError) as err:
            raise ScaleError(f"{path} is damaged ({err})") from None

    def request(self, engines: int, by: str, reason: str | None = None) -> int:
        """Write a request for ``engines`` as the next number; the number. ``reason``:
        why (``--engines auto``'s policy says what it measured)."""
        return append_numbered(self.dir, "request", self.numbers, json.dumps(
            {"engines": engines, "by": by, "written": time.time(),
             **({"reason": reason} if reason else {})}))

    def applied(self) -> list[dict]:
        """The changes that applied, in batch order (see the module's docstring)."""
        try:
            return list(json.loads((self.dir / "applied.json").read_text())["applied"])
        except FileNotFoundError:
            return []
        except (ValueError, KeyError, TypeError) as err:
            raise ScaleError(f"{self.dir / 'applied.json'} is damaged ({err})") from None

    def record(self, change: dict) -> None:
        """Record (or, for a replayed batch, rewrite) the change at ``change['at_batch']``,
        dropping any recorded at a later batch (a crash left them unlogged)."""
        kept = [c for c in self.applied() if c["at_batch"] < change["at_batch"]]
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.dir / "applied.json", {"applied": [*kept, change]})


def scale(workdir: str | Path, engines: int) -> int:
    """Ask the job in ``workdir`` (its ``--checkpoint`` directory) for ``engines``
    engines from the first key map it writes on; the request's number. Refused
    (:class:`ScaleError`) where the job cannot change its count: no such run, PKG (it
    splits keys: no map to scale), an INSERT INTO chain (its later stages' keys do not
    move), a key-grouping job that does not route by key maps (restart it with
    ``--engines N`` instead: it routes by maps from then on), a count out of 1..256."""
    path = Path(workdir) / "run.json"
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ScaleError(f"{workdir} is not the run directory of a cep job (no run.json): "
                         "give cep run's --checkpoint directory") from None
    except ValueError as err:
        raise ScaleError(f"{path} is damaged ({err})") from None
    if not 1 <= engines <= MAX_ENGINES:
        raise ScaleError(f"the engine count must be 1..{MAX_ENGINES}, got {engines}")
    strategy = manifest.get("strategy")
    if strategy == "pkg":
        raise ScaleError("PKG splits keys over engines: there is no key map to scale")
    if manifest.get("chained"):
        raise ScaleError("an INSERT INTO chain's later stages keep their keys: a chained "
                         "job keeps its engine count")
    if strategy == "kg" and not manifest.get("maps"):
        raise ScaleError("this key-grouping job routes by hash, not by key maps, so it "
                         "cannot change its count while it runs: stop it and start it "
                         f"again with --engines {engines} (it routes by key maps from "
                         "then on, and cep scale works on it)")
    return ScaleLog(workdir).request(engines, "cep scale")


class ScaleHook:
    """A hook of the driver's ``foreachBatch`` (``sink.BatchSink``), after the Balancer:
    a batch whose decision wrote a rescaled map records the change (``applied.json``,
    and ``engines_now`` in ``run.json``, so a restart knows the count); the batch that
    hands the keys over (the one before the change) gets ``scaled`` in its metrics: the
    change and the keys and bytes its engines exported. A line on standard error says
    each change once."""

    def __init__(self, workdir: Path, manifest_update) -> None:
        self.log = ScaleLog(workdir)
        self.update = manifest_update  # (engines_now) -> None: rewrites run.json
        self.pending: dict[int, dict] = {c["at_batch"]: c for c in self.log.applied()}

    def __call__(self, batch: int, _stats: list[dict], metrics: dict) -> None:
        change = metrics.get("rescaled")
        if change is not None:
            latest = self.log.latest()
            entry = {"at_batch": change["at_batch"], "from": change["from"],
                     "to": change["to"], "hash": change["hash"],
                     "request": latest.number if latest is not None else None,
                     "decided_after": batch, "keys": None, "bytes": None}
            self.log.record(entry)
            self.pending[entry["at_batch"]] = entry
            self.update(change["to"])
            print(f"cep: batch {batch}: {change['from']} -> {change['to']} engines from "
                  f"batch {change['at_batch']} on (keys hand over at the end of batch "
                  f"{change['at_batch'] - 1})", file=sys.stderr)
        entry = self.pending.get(batch + 1)
        if entry is not None:
            entry = {**entry, "keys": metrics.get("exported_keys", 0),
                     "bytes": metrics.get("exported_bytes", 0)}
            self.pending[batch + 1] = entry
            self.log.record(entry)
            metrics["scaled"] = entry
