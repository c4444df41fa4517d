"""Which keys an engine imports and exports in a batch (docs/architecture.md#handoff-protocol).

A key map ``M[t]`` (:class:`KeyMap`) says which engine owns each key in batch ``t``: the
KG default ``stable_hash(key) mod N`` unless the Balancer overrode it. Only overrides are
stored, keyed by the key's JSON text, so a map is small, covers keys nobody has seen yet
(routers on executors meet new keys before the driver does) and needs no shared dense
key ids. The Balancer writes ``M[t+2]`` in batch ``t``'s
``foreachBatch``, write-once. In batch ``t`` engine ``e``

1. imports every key with ``owner(M[t], k) == e != owner(M[t-1], k)`` from the parcel
   its previous owner ``s`` wrote for it, document ``(parcel_name(s, e), t-1)``;
2. runs its rows;
3. exports every key with ``owner(M[t], k) == e != owner(M[t+1], k)`` in the parcel of
   its next owner ``r``, document ``(parcel_name(e, r), t)``, and drops it locally.

A parcel holds all the keys one engine hands another in a batch (``Engine.export_keys``
says why one blob and not one per key), and names every one of them, so the importer
checks it received exactly the keys the maps send it.

Why it is consistent: the import condition of batch ``t`` and the export condition of
batch ``t-1`` read the same pair of maps (``M[t-1]``, ``M[t]``), so a key is imported
in ``t`` exactly when its previous owner exported it at the end of ``t-1`` — the
"one batch of lag": a map decided after batch ``t`` moves keys in batch ``t+2``, and
the state travels at the end of ``t+1``. Nobody waits for anybody inside a batch.
:func:`exports` of ``t-1`` and :func:`imports` of ``t`` are the same key set, split by
old and new owner; the tests check that on random maps.

What the short statement leaves open, and the rules this module and its callers use:

* **Keys new in batch t.** A key first seen in ``t`` has no override in ``M[t]`` or
  ``M[t+1]`` (both were decided before it existed): it is owned by its default in both,
  so it neither moves nor needs a document. It can first move in ``t+2``. Not so
  across a scale change, where its default owner itself changes: an engine counts the
  keys its batch's rows reach among those it holds (``exports(..., held)``).
* **Batch 0.** There is no ``M[-1]`` and no state anywhere: pass ``prev=None``
  and nothing is imported. ``M[0]`` and ``M[1]`` must be written before batch 0 (the
  Balancer first writes ``M[2]``). A missing map is an error, never "assume KG".
* **Export without local state.** The export set comes from the maps alone: an
  engine must name every key of it in its parcel (with an empty state where it has
  none), including keys it never saw an event for or whose state expired, or the
  importer fails on a missing key.
* **Replays.** Batch ``t`` is replayed only if it did not commit; Spark then rolls the
  engine state back to ``t-1`` (exported keys come back), the parcels of ``t-1`` are
  read again and those of ``t`` rewritten. Hence gc in batch ``t`` may only delete documents of
  batches ``< t-1``. Task retries and speculative attempts may export twice; that is
  harmless only if the rules are deterministic per key (the bytes may still differ,
  e.g. set order in a state blob; the store switches chunked states atomically).
* **Restarts.** A query restarted from its checkpoint continues batch numbers and needs
  the documents and maps written before the restart: the run id belongs to the
  checkpoint (drawn when it is created, kept in it), not to a process, the MongoDB must
  be the same one (the embedded server keeps its data in the checkpoint).
* **Scale changes.** The engine count (and KG's hash) is part of every map, so going
  from N to N' engines at batch t is ``M[t-1].n_engines = N``, ``M[t].n_engines = N'``:
  a key-map change like the Balancer's, with the same one batch of lag. KG itself moves
  keys then, which no override lists, so across such a pair of maps (:func:`rescaled`)
  each engine also checks the keys it holds (``exports(..., held)``; a retired engine
  hands over all of them), writes every engine of ``M[t]`` a parcel, empty or not
  (:func:`parcel_receivers`), and each engine of ``M[t]`` reads one from every other
  engine of ``M[t-1]`` (:func:`parcel_senders`), checked by :func:`check_parcel`. A key
  with no state anywhere needs no parcel: its new owner starts it empty, as KG would.
* **Durability.** A handoff document lost after its batch committed cannot be rewritten
  (that batch is never replayed): the store writes ``w: majority`` (replica-set
  fail-over) and ``j: true`` (a server killed before its journal reached the disk).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from cep.engine.table import object_array
from migration.hashing import kg_engine


def key_text(key: object) -> str:
    """A key's identity as text (JSON keeps 5 and "5" apart)."""
    return json.dumps(key)


@dataclass(frozen=True)
class KeyMap:
    """Owner of every key: ``overrides`` (key JSON text → engine), else key grouping
    over ``n_engines`` engines by ``hash`` (``migration.hashing.HASHES``). The engine
    count is part of every map, so a scale change is a change of maps like the
    Balancer's (:func:`rescaled`)."""

    n_engines: int
    overrides: dict[str, int] = field(default_factory=dict)
    hash: str = "mod"

    def owners(self, keys: np.ndarray) -> np.ndarray:
        """Engine of each key value, vectorised (overrides looked up per distinct key, or
        for integer keys by one ``searchsorted`` over the map's integer overrides)."""
        out = kg_engine(keys, self.n_engines, self.hash).astype(np.int32)
        if self.overrides and len(keys):
            ints = _as_int64(keys)
            if ints is not None:
                return _apply_int_overrides(ints, out, *self._int_overrides)
            out = _apply_overrides(keys, out, self.overrides)
        return out

    @cached_property
    def _int_overrides(self) -> tuple[np.ndarray, np.ndarray]:
        """The overrides of integer keys as (sorted int64 keys, their engines), built once
        per map (maps are write-once and cached per process, ``splitter.keymaps``): FSD's
        keys are LSH bucket numbers, and routing 20,000 of them through a per-key JSON
        lookup cost an input task ~3 ms a batch against KG's 0.2 ms
        (bench/bench_balance_cost.py). A text that is not a JSON integer (``"5"`` as a
        string is ``'"5"'``, ``5.0`` is a float key) never matches an integer key, as
        under :func:`key_text`."""
        pairs = []
        for text, engine in self.overrides.items():
            if text[:1] not in "-0123456789":
                continue
            try:
                value = int(text)
            except ValueError:
                continue
            if str(value) == text and -(1 << 63) <= value < (1 << 63):  # key_text(value)
                pairs.append((value, engine))
        pairs.sort()
        return (np.array([k for k, _ in pairs], dtype=np.int64),
                np.array([e for _, e in pairs], dtype=np.int32))

    def owners_of(self, texts: list[str]) -> np.ndarray:
        """Engine of each key given as JSON text, vectorised: overrides by one dict
        lookup each, the other keys hashed in one ``kg_engine`` call. (Per key, hashing
        one-element arrays cost an engine about 0.25 s per batch under DLB-L, whose
        maps override thousands of keys.)"""
        out = np.array([self.overrides.get(text, -1) for text in texts], dtype=np.int32)
        rest = np.flatnonzero(out < 0)
        if len(rest):
            values = object_array([json.loads(texts[i]) for i in rest.tolist()])
            out[rest] = kg_engine(values, self.n_engines, self.hash)
        return out

    def encode(self) -> bytes:
        """JSON; ``hash`` only when it is not ``mod``, so the maps of a run that never
        chose another hash are the bytes they always were."""
        raw: dict = {"n": self.n_engines, "overrides": self.overrides}
        if self.hash != "mod":
            raw["hash"] = self.hash
        return json.dumps(raw, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> KeyMap:
        raw = json.loads(data)
        return cls(int(raw["n"]), {k: int(v) for k, v in raw["overrides"].items()},
                   str(raw.get("hash", "mod")))


def rescaled(a: KeyMap, b: KeyMap) -> bool:
    """Whether key grouping itself differs between two maps (another engine count or
    hash): then keys without an override move too, which the maps cannot list, so each
    engine also looks at the keys it holds (:func:`exports`) and every engine sends
    every other one a parcel, empty or not (:func:`parcel_senders`)."""
    return a.n_engines != b.n_engines or a.hash != b.hash


def _apply_overrides(keys: np.ndarray, owners: np.ndarray,
                     overrides: dict[str, int]) -> np.ndarray:
    """Replace the KG owner of overridden keys; text is built per distinct key only."""
    codes, uniques = pd.factorize(np.asarray(keys, dtype=object), use_na_sentinel=False)
    target = np.array([overrides.get(key_text(_plain(u)), -1) for u in uniques],
                      dtype=np.int32)
    picked = target[codes]
    hit = picked >= 0
    if not hit.any():
        return owners
    owners = owners.copy()
    owners[hit] = picked[hit]
    return owners


def _as_int64(keys: np.ndarray) -> np.ndarray | None:
    """Integer keys as int64 (their JSON text is their decimal digits), else None."""
    arr = np.asarray(keys)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "u" and (not len(arr) or int(arr.max()) < (1 << 63)):
        return arr.astype(np.int64)
    return None


def _apply_int_overrides(keys: np.ndarray, owners: np.ndarray, known: np.ndarray,
                         engines: np.ndarray) -> np.ndarray:
    """Replace the KG owner of the integer keys found in ``known`` (sorted)."""
    if not len(known):
        return owners
    at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    hit = known[at] == keys
    if not hit.any():
        return owners
    owners = owners.copy()
    owners[hit] = engines[at[hit]]
    return owners


def _plain(value: object) -> object:
    """pandas reports a missing key as NaN; the key itself was None."""
    return None if isinstance(value, float) and value != value else value


def _moved(e: int, now: KeyMap, other: KeyMap, held: Iterable[str] = ()) -> list[str]:
    """Keys (JSON text) owned by ``e`` in ``now`` and by another engine in ``other``:
    among the overridden keys, and among ``held`` where the maps are :func:`rescaled`.
    Under one KG (the maps not rescaled) a key with the same override in both maps, or
    none, keeps its owner, so only the keys whose override differs are looked at: the
    work follows what the Balancer changed, not the thousands of keys its maps have
    overridden so far (bench/bench_balance_cost.py)."""
    if rescaled(now, other):
        candidates = set(now.overrides) | set(other.overrides) | set(held)
    else:  # same KG: only a key whose override differs can change owner
        candidates = {text for text, _ in now.overrides.items() ^ other.overrides.items()}
    if not candidates:
        return []
    candidates = sorted(candidates)
    moved = (now.owners_of(candidates) == e) & (other.owners_of(candidates) != e)
    return [candidates[i] for i in np.flatnonzero(moved).tolist()]


def imports(e: int, prev: KeyMap | None, cur: KeyMap) -> list[str]:
    """Keys engine ``e`` imports in batch t (documents of t-1); ``prev`` is ``M[t-1]``,
    None in batch 0; ``cur`` is ``M[t]``. Across a scale change (:func:`rescaled`) these
    are only the overridden ones: the others are those the parcels name
    (:func:`parcel_senders`, :func:`check_parcel`)."""
    return [] if prev is None else _moved(e, cur, prev)


def exports(e: int, cur: KeyMap, nxt: KeyMap, held: Iterable[str] = ()) -> list[str]:
    """Keys engine ``e`` exports at the end of batch t (as documents of t). ``held``:
    the keys (JSON text) ``e`` holds state for, read only across a scale change, where
    every one of them whose owner changes leaves (a retired engine: all of them)."""
    return _moved(e, cur, nxt, held)


def parcel_senders(e: int, prev: KeyMap | None, cur: KeyMap) -> list[int]:
    """The engines whose parcels engine ``e`` reads in batch t: those of the keys it
    imports, or across a scale change every other engine of ``M[t-1]`` (each writes
    every engine of ``M[t]`` a parcel, empty or not: :func:`parcel_receivers`, so a
    missing one is an error, never "nothing moved")."""
    if prev is None:
        return []
    if rescaled(prev, cur):
        return [s for s in range(prev.n_engines) if s != e]
    return sorted(by_owner(imports(e, prev, cur), prev))


def parcel_receivers(e: int, keys: list[str], cur: KeyMap, nxt: KeyMap
                     ) -> dict[int, list[str]]:
    """The parcels engine ``e`` writes at the end of batch t: the keys it exports by
    receiver, and across a scale change an empty parcel to every other engine of
    ``M[t+1]`` that gets no key (see :func:`parcel_senders`)."""
    out = by_owner(keys, nxt)
    if rescaled(cur, nxt):
        out = {r: out.get(r, []) for r in range(nxt.n_engines) if r != e}
    return out


def check_parcel(e: int, source: int, named: list[str], prev: KeyMap, cur: KeyMap) -> None:
    """Refuse a parcel from ``source`` naming other keys than the maps send engine
    ``e``: exactly :func:`imports`' keys from ``source`` where the maps list them, and
    across a scale change keys that ``M[t-1]`` gives ``source`` and ``M[t]`` gives ``e``
    (plus every overridden one that moves so)."""
    if rescaled(prev, cur):
        wanted = set(by_owner(imports(e, prev, cur), prev).get(source, []))
        ok = (not named or (bool((cur.owners_of(named) == e).all())
                            and bool((prev.owners_of(named) == source).all())))
        ok = ok and wanted <= set(named)
    else:
        wanted = set(by_owner(imports(e, prev, cur), prev).get(source, []))
        ok = sorted(named) == sorted(wanted)
    if not ok:
        raise ValueError(f"the parcel {parcel_name(source, e)!r} holds other keys than the "
                         f"key maps send engine {e}: state from another run?")


def parcel_name(source: int, target: int) -> str:
    """The name of the state document holding the keys engine ``source`` hands engine
    ``target`` at the end of a batch."""
    return f"engine {source} to {target}"


def by_owner(keys: list[str], owners: KeyMap) -> dict[int, list[str]]:
    """``keys`` (JSON text) grouped by their engine in ``owners``: ``M[t+1]`` gives an
    exporter the receiver of each key, ``M[t-1]`` an importer the sender."""
    out: dict[int, list[str]] = {}
    for key, owner in zip(keys, owners.owners_of(keys).tolist(), strict=True):
        out.setdefault(owner, []).append(key)
    return out
