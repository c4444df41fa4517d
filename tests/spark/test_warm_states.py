"""Which warm key states a Python worker keeps between an engine's batches."""

from __future__ import annotations

from cep.spark.engine_batch import drop_stale


def test_states_of_an_ended_query_are_dropped_whatever_their_batch():
    warm = {("old", 0): (29, {"k": {}}), ("old", 1): (29, {"k": {}}),
            ("new", 1): (2, {"k": {}})}
    drop_stale(warm, "new", 3)
    assert warm == {("new", 1): (2, {"k": {}})}


def test_an_engine_whose_later_batch_ran_elsewhere_is_dropped():
    warm = {("q", 0): (4, {}), ("q", 1): (5, {}), ("q", 2): (6, {})}
    drop_stale(warm, "q", 6)  # batch 6 can use batch 5's states, never batch 4's
    assert set(warm) == {("q", 1), ("q", 2)}
