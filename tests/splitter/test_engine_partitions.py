"""Engines on fewer shuffle partitions than engines (``engine_partitions``): engine e's
labels land in partition e mod P, every label is its own, and with one partition per
engine the labels are the ones each engine always had. Spark's own hash is checked
against ``partition_of`` in tests/spark/test_differential.py."""

from __future__ import annotations

import json

import pytest

from cep.spark.run_dir import STATE_LAYOUT, run_manifest
from splitter.engine_labels import engine_partitions, partition_of, stage_labels


@pytest.mark.parametrize("engines", range(1, 9))
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_engine_e_lands_in_partition_e_mod_p(engines: int, stages: int) -> None:
    for parts in range(1, engines + 1):
        labels = stage_labels(engines, stages, parts)
        flat = [label for stage in labels for label in stage]
        assert len(set(flat)) == len(flat) == engines * stages
        assert all(partition_of(labels[s][e], parts) == e % parts
                   for s in range(stages) for e in range(engines))
    assert stage_labels(engines, stages, engines) == stage_labels(engines, stages)


def test_partitions_are_checked() -> None:
    with pytest.raises(ValueError, match=r"partitions must be 1\.\.3"):
        stage_labels(3, 1, 4)


@pytest.mark.parametrize(("master", "engines", "expected"), [
    ("local[2]", 5, 2), ("local[8]", 5, 5), ("local", 5, 1), ("local[3,2]", 5, 3),
    ("local[2]", 1, 1), ("spark://10.0.0.1:7077", 5, 5), ("yarn", 3, 3)])
def test_a_local_master_gets_a_partition_per_task_slot_a_cluster_one_per_engine(
        master: str, engines: int, expected: int) -> None:
    assert engine_partitions(engines, master) == expected


def test_local_star_counts_the_cores(monkeypatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 3)
    assert engine_partitions(5, "local[*]") == 3


def test_a_restart_keeps_the_partitions_its_checkpoint_was_made_with(tmp_path) -> None:
    run_id, parts, _ = run_manifest(tmp_path, 5, "kg", {"S": "in.jsonl"}, 2)
    assert parts == 2
    # the same directory under a master with more slots: Spark keeps the checkpoint's
    assert run_manifest(tmp_path, 5, "kg", {"S": "in.jsonl"}, 5)[:2] == (run_id, 2)
    # a run directory of a cep that had one partition per engine names none
    old = tmp_path / "old"
    old.mkdir()
    (old / "run.json").write_text(json.dumps({
        "run_id": "r", "state_layout": STATE_LAYOUT, "engines": 5, "strategy": "kg",
        "inputs": {"S": "in.jsonl"}}))
    assert run_manifest(old, 5, "kg", {"S": "in.jsonl"}, 2)[:2] == ("r", 5)


@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_an_engine_keeps_its_label_whatever_the_count(parts: int) -> None:
    """A job routed by key maps knows the labels of ``MAX_ENGINES`` engines and runs the
    first N of them (``runtime``, ``input_tasks.read_input``): engine e's label must be
    the one a job of any count N > e gives it, or a scale change (or a restart of a
    job made before) would look for an engine's Spark state under another label."""
    from cep.io.scale_changes import MAX_ENGINES

    every = stage_labels(MAX_ENGINES, 1, parts)[0]
    for n in range(parts, 12):
        assert stage_labels(n, 1, parts)[0] == every[:n]
