"""Which keys an engine imports and exports in a batch (DESIGN §2, migration protocol).

A key map ``M[t]`` is a numpy int array: ``M[t][k]`` is the engine that owns dense key
id ``k`` in batch ``t``. The Balancer writes ``M[t+2]`` in batch ``t``'s
``foreachBatch``, write-once. In batch ``t`` engine ``e``

1. imports every key with ``owner(M[t], k) == e != owner(M[t-1], k)`` from document
   ``(k, t-1)``;
2. runs its rows;
3. exports every key with ``owner(M[t], k) == e != owner(M[t+1], k)`` as document
   ``(k, t)`` and drops it locally.

Why it is consistent: the import condition of batch ``t`` and the export condition of
batch ``t-1`` read the same pair of maps (``M[t-1]``, ``M[t]``), so a key is imported
in ``t`` exactly when its previous owner exported it at the end of ``t-1`` — the
"one batch of lag": a map decided after batch ``t`` moves keys in batch ``t+2``, and
the state travels at the end of ``t+1``. Nobody waits for anybody inside a batch.
:func:`exports` of ``t-1`` and :func:`imports` of ``t`` are the same key set, split by
old and new owner; the tests check that on random maps.

What the short statement leaves open, and the rules this module and its callers use:

* **Maps of different lengths.** Dense ids are handed out as keys appear, so a newer
  map is longer. A key beyond a map's end is owned by its KG default
  (``hash(key) mod N``) — the router must treat it the same way. Pass that default per
  dense id as ``default``; both sides pad with it, so importer and exporter agree. This
  only holds if dense ids are never reassigned and the hash is stable across processes
  (not Python's randomised ``hash`` of a str).
* **Keys new in batch t.** A key first seen in ``t`` is beyond ``M[t]`` and
  ``M[t+1]`` (both were decided before it existed): it is owned by its default in both,
  so it neither moves nor needs a document. It can first move in ``t+2``.
* **Batch 0.** There is no ``M[-1]`` and no state anywhere: pass ``prev_map=None``
  and nothing is imported. ``M[0]`` and ``M[1]`` must be written before batch 0 (the
  Balancer first writes ``M[2]``). A missing map is an error, never "assume KG".
* **Export without local state.** The export set comes from the maps alone: an
  engine must write a document (possibly empty bytes) for every key in it, including
  keys it never saw an event for or whose state expired, or the importer fails on a
  missing document.
* **Replays.** Batch ``t`` is replayed only if it did not commit; Spark then rolls the
  engine state back to ``t-1`` (exported keys come back), ``(k, t-1)`` is read again
  and ``(k, t)`` rewritten. Hence gc in batch ``t`` may only delete documents of
  batches ``< t-1``. Task retries and speculative attempts may export twice; that is
  harmless only if the rules are deterministic per key (the bytes may still differ,
  e.g. set order in a pickle; the store switches chunked states atomically).
* **Restarts.** A query restarted from its checkpoint continues batch numbers and needs
  the documents and maps written before the restart: the run id must be derived from
  the checkpoint, not drawn per process, and the number of engines must not change.
* **Durability.** A handoff document lost after its batch committed cannot be rewritten
  (that batch is never replayed): on a replica set the store writes ``w: majority``.
"""

from __future__ import annotations

import numpy as np


def owners(key_map: np.ndarray, n_keys: int, default: np.ndarray | None = None) -> np.ndarray:
    """Owner of dense ids ``0 … n_keys-1``: the map, then ``default`` beyond its end."""
    key_map = np.asarray(key_map)
    if len(key_map) >= n_keys:
        return key_map[:n_keys]
    if default is None:
        raise ValueError(
            f"key map covers {len(key_map)} keys, {n_keys} needed: pass default= "
            "(the KG engine of every dense key id) to pad it"
        )
    default = np.asarray(default)
    if len(default) < n_keys:
        raise ValueError(f"default covers {len(default)} keys, {n_keys} needed")
    return np.concatenate([key_map, default[len(key_map) : n_keys]])


def _moved_to_or_from(
    e: int, owner_now: np.ndarray, owner_other: np.ndarray, default: np.ndarray | None
) -> np.ndarray:
    """Dense ids owned by ``e`` in ``owner_now`` and by someone else in ``owner_other``."""
    n_keys = max(len(owner_now), len(owner_other))
    now = owners(owner_now, n_keys, default)
    other = owners(owner_other, n_keys, default)
    return np.flatnonzero((now == e) & (other != e))


def imports(
    e: int,
    prev_map: np.ndarray | None,
    cur_map: np.ndarray,
    default: np.ndarray | None = None,
) -> np.ndarray:
    """Dense ids engine ``e`` imports in batch t (from documents of batch t-1), sorted.

    ``prev_map`` is ``M[t-1]``, None in batch 0; ``cur_map`` is ``M[t]``.
    """
    if prev_map is None:
        return np.empty(0, dtype=np.intp)
    return _moved_to_or_from(e, np.asarray(cur_map), np.asarray(prev_map), default)


def exports(
    e: int,
    cur_map: np.ndarray,
    next_map: np.ndarray,
    default: np.ndarray | None = None,
) -> np.ndarray:
    """Dense ids engine ``e`` exports at the end of batch t (as documents of t), sorted.

    ``cur_map`` is ``M[t]``, ``next_map`` is ``M[t+1]``.
    """
    return _moved_to_or_from(e, np.asarray(cur_map), np.asarray(next_map), default)
