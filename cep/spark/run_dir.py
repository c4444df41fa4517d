"""The run directory's record of a Spark run (``run.json``): drawn when the directory is
new, read back and checked at every restart, and what a restart may change.

A restart must find the run it continues (its run id, so its key maps and state
documents in MongoDB), keep what the checkpoint froze (the strategy, the inputs, the
state partitions, KG's hash) and may change the engine count
(docs/guide.md#scaling-a-running-job). Split from ``cep.spark.runtime``, which starts
the query, so that what a run directory holds and checks is one module.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from cep.transports.mongo_client import mask_uri
from migration.protocol import KeyMap
from migration.store import StateStore

STATE_LAYOUT = "changelog-2"  # per engine one log: a base, deltas and the version


class SparkRunError(Exception):
    """The streaming query failed; the message says why in one line."""


@dataclass(frozen=True)
class EngineLayout:
    """What a run directory says about its engines: the count the run started with
    (maps 0 and 1), the count the command line asked for before this start, whether
    this start asks for another (``rescale``: a restart with other ``--engines``),
    and whether key grouping routes by key maps (a KG run once its count changed)."""

    initial: int
    before: int
    rescale: bool
    maps: bool
    kg_maps: tuple[int, int] | None  # (batch, engines): where a KG run's maps begin
    hash: str = "mod"  # KG's hash (--hash), recorded when the run directory is made


def run_manifest(workdir: Path, engines: int, strategy: str, sources: dict[str, str],
              partitions: int, chained: bool = False, hash: str | None = None,
              scalable: bool = False) -> tuple[str, int, EngineLayout]:
    """The run id of the run in ``workdir``, its engines' shuffle partitions and its
    :class:`EngineLayout`: drawn when the directory is new, read back on a restart (so
    it finds its maps and state documents again, and a checkpoint deleted and recreated
    under the same path never meets the old run's documents).

    A restart must keep the strategy (key grouping after a key-moving strategy would
    route moved keys to engines without their state) and the inputs (the input log
    continues the inputs it has). It may change the engine count
    (docs/guide.md#scaling-a-running-job): a restart whose ``--engines`` differs from
    the last start's is a scale request (``cep.io.scale_changes``, written by the
    caller), applied at the first key map the restarted run writes; a restart with the
    same ``--engines`` keeps the count the run has, whatever ``cep scale`` made it.
    Under key grouping the run routes by key maps from its first change on. PKG (keys
    split) and INSERT INTO chains (later stages' keys do not move) keep their count. A
    restart keeps the partitions the run started with, whatever its master now: Spark
    fixed the state partitions in the checkpoint, and an engine's label must find its
    state there (a run directory that names none had one per engine); engine e runs in
    partition e mod P. KG's ``hash`` (None: the run's) is recorded when the directory is
    made: a restart keeps it, and one that names another is refused (the maps written
    already, and a hash-routed KG run's engines, hold keys by it). ``scalable``: the
    run's count may change while it runs (``--engines auto``), so key grouping routes
    by key maps from its start (or, on a restart of a run that routed by hash, from
    the batch it resumes at)."""
    if strategy == "pkg" and hash == "jump":
        raise SparkRunError("--hash is key grouping's hash: PKG places keys by two hash "
                            "choices of its own, so it takes no --hash jump")
    path = workdir / "run.json"
    wanted = {"strategy": strategy, "inputs": sources}
    if path.exists():
        manifest = json.loads(path.read_text())
        if manifest.get("state_layout") != STATE_LAYOUT:
            # Spark would resume it without a word, every engine's state left behind
            raise SparkRunError(
                f"checkpoint {workdir} was written by an older cep, which laid out engine "
                f"state as {manifest.get('state_layout') or 'one blob per engine'}, not "
                f"{STATE_LAYOUT}: this one cannot resume it, use a new checkpoint directory")
        for name, value in wanted.items():
            if manifest.get(name) != value:
                raise SparkRunError(
                    f"checkpoint {workdir} belongs to a run with {name} {manifest.get(name)}, "
                    f"not {value}: resume it with the same options, or use a new directory")
        recorded = str(manifest.get("hash", "mod"))
        if hash is not None and hash != recorded:
            raise SparkRunError(
                f"checkpoint {workdir} belongs to a run with --hash {recorded}, not {hash}: "
                "resume it with the same --hash (or none), or use a new directory")
        initial = int(manifest["engines"])
        before = int(manifest.get("engines_asked", initial))
        maps = bool(manifest.get("maps", False))
        rescale = engines != before
        if scalable and strategy == "kg" and not maps and not rescale:
            manifest["kg_maps"] = [next_batch(workdir), before]
            manifest["maps"] = True
            _write_manifest(path, manifest)
        if rescale:
            if strategy == "pkg" or chained:
                why = ("PKG splits keys" if strategy == "pkg"
                       else "an INSERT INTO chain's later stages keep their keys")
                raise SparkRunError(
                    f"checkpoint {workdir} belongs to a run with engines {before}, not "
                    f"{engines}: {why}, so its engine count cannot change; resume it with "
                    "the same --engines, or use a new directory")
            if strategy == "kg" and not maps:  # the batch maps start at, and its count
                manifest["kg_maps"] = [next_batch(workdir), before]
            manifest.update(engines_asked=engines, maps=maps or strategy == "kg")
        layout = EngineLayout(initial, before, rescale, bool(manifest.get("maps", False)),
                              tuple(manifest["kg_maps"]) if "kg_maps" in manifest else None,
                              recorded)
        return manifest["run_id"], int(manifest.get("partitions", initial)), layout
    manifest = {"run_id": uuid.uuid4().hex[:16], "state_layout": STATE_LAYOUT,
                "engines": engines, **wanted, "partitions": partitions,
                "maps": strategy != "pkg" and (strategy != "kg" or scalable),
                "chained": chained,
                "hash": hash or "mod"}
    workdir.mkdir(parents=True, exist_ok=True)
    _write_manifest(workdir / "run.json", manifest)
    return manifest["run_id"], partitions, EngineLayout(engines, engines, False,
                                                        bool(manifest["maps"]), None,
                                                        hash or "mod")


def record_rescale(workdir: Path, engines: int, layout: EngineLayout) -> None:
    """Record a restart's new count in ``run.json`` (``engines_asked``, ``maps``,
    ``kg_maps``), after its scale request is written: a crash between the two writes
    the request again at the next start, never loses it."""
    path = workdir / "run.json"
    manifest = json.loads(path.read_text())
    manifest.update(engines_asked=engines, maps=layout.maps)
    if layout.kg_maps is not None:
        manifest["kg_maps"] = list(layout.kg_maps)
    _write_manifest(path, manifest)


def record_engines_now(workdir: Path, engines: int) -> None:
    """``run.json``'s ``engines_now``: the count of the newest key map written (for
    people; the maps are the record)."""
    path = workdir / "run.json"
    manifest = json.loads(path.read_text())
    if manifest.get("engines_now") != engines:
        manifest["engines_now"] = engines
        _write_manifest(path, manifest)


def _write_manifest(path: Path, manifest: dict) -> None:
    tmp = path.with_name(".run.json.tmp")
    tmp.write_text(json.dumps(manifest) + "\n")
    os.replace(tmp, path)


def write_kg_maps(store: StateStore, batch: int, before: int, hash: str = "mod") -> None:
    """A key-grouping run routed by maps from the restart that first changed its count
    (at ``batch``): that batch and the next run as they would have without maps (plain
    KG at the count they had, ``before``), so the new count applies from the first map
    the Balancer writes; the batch before is written too, since an engine reads its
    batch's map and the one before to know what it imports. Write-once: every later
    start writes them again harmlessly."""
    for version in range(max(0, batch - 1), batch + 2):
        store.put_key_map(version, KeyMap(before, {}, hash).encode())


def next_batch(workdir: Path) -> int:
    """The first micro-batch Spark has not committed: where a restart resumes, and the
    one that was running when a run failed."""
    done = [int(p.name) for p in (workdir / "checkpoint" / "commits").glob("*")
            if p.name.isdigit()]
    return max(done, default=-1) + 1


def check_resumable(store: StateStore, workdir: Path) -> None:
    """A resumed batch t routes by map t, written by the run before the restart (maps 0
    and 1 are written at every start): without it, this is not that run's MongoDB."""
    batch = next_batch(workdir)
    if batch >= 2 and store.get_key_map(batch) is None:
        raise SparkRunError(
            f"MongoDB at {mask_uri(store.uri)} holds no key map {batch} of the run in "
            f"{workdir} (run id {store.run_id}), which resuming at batch {batch} needs: "
            "restart with the MongoDB the run started with (same --mongo-uri, or none if "
            "it used the embedded server), or use a new checkpoint directory")
