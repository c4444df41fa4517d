"""The driver keeps one udf_error letter per (record, function) across batches, replays
and restarts (``cep.spark.output.udf_seen``); no Spark needed."""

from __future__ import annotations

import json

from cep.spark.output.udf_seen import SeenFailures


def _letter(offset: int, reason: str, kind: str = "udf_error") -> bytes:
    return (json.dumps({"source": "in.jsonl", "offset": offset, "kind": kind,
                        "reason": reason, "record": "{}"}) + "\n").encode()


def test_a_letter_is_delivered_once_across_batches_replays_and_restarts(tmp_path):
    seen = SeenFailures(tmp_path / "udf-seen")
    first = _letter(5, "f() raised ValueError: x") + _letter(9, "g() raised KeyError: 'k'")
    assert seen.filter(3, first) == first
    again = _letter(5, "f() raised ValueError: x") + _letter(7, "bad", kind="wrong_type")
    assert seen.filter(4, again) == _letter(7, "bad", kind="wrong_type")  # others kept
    assert seen.filter(4, _letter(5, "h() raised ValueError: x")) == _letter(
        5, "h() raised ValueError: x")  # another function on the same record: its own
    # a restart that replays batch 4 (its letters were truncated from the file): batch
    # 3's letters stay delivered, batch 4's are delivered again
    restarted = SeenFailures(tmp_path / "udf-seen")
    assert restarted.filter(4, _letter(5, "f() raised ValueError: x")) == b""
    assert restarted.filter(4, _letter(5, "h() raised ValueError: x")) == _letter(
        5, "h() raised ValueError: x")
    assert restarted.filter(5, _letter(9, "g() raised KeyError: 'k'")) == b""
