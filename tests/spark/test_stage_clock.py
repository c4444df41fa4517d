"""StageClock.shift: seconds timed inside one stage counted as another's (the parcels'
reading, timed inside ``restore``, is the import's work, which the gate prices).
Oracle: the laps' sum, which a shift must keep, and the seconds moved."""

from __future__ import annotations

from cep.spark.engines.batch import StageClock


def test_a_shift_moves_seconds_between_stages_and_keeps_their_sum() -> None:
    clock = StageClock()
    clock.laps = {"restore": 0.5, "import": 0.25}
    clock.shift(0.2, "restore", "import")
    assert clock.laps == {"restore": 0.3, "import": 0.45}
    clock.shift(9.0, "restore", "import")  # never more than the source stage holds
    assert clock.laps == {"restore": 0.0, "import": 0.75}
    clock.shift(0.1, "restore", "export")
    assert clock.laps["export"] == 0.0 and sum(clock.laps.values()) == 0.75
