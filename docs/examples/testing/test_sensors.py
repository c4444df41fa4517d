"""Tests of sensors.epl, as a user of cep writes them (the guide's "Testing your rules").

Run them with ``pytest docs/examples/testing``: the ``cep_harness`` fixture comes with
cep's pytest plugin."""

from pathlib import Path

from cep.testing import EventStream, assert_events_equal, assert_strategies_equal

RULES = Path(__file__).with_name("sensors.epl")
s = EventStream(start="2026-03-01T12:00:00Z")


def test_a_sensor_is_hot_while_its_minute_averages_above_the_limit(cep_harness):
    h = cep_harness(RULES)
    h.send([s.at("0s", sensor="s1", temp=29.0),
            s.at("20s", sensor="s1", temp=33.0),    # (29 + 33) / 2 = 31 > 30
            s.at("30s", sensor="s2", temp=25.0)])
    h.send([s.at("90s", sensor="s1", temp=30.5)])   # 0s and 20s have left the minute
    assert_events_equal(h.events, [
        {"rule": "hot", "key": "s1", "ts": s.time("20s"), "n": 2, "avg_temp": 31.0},
        {"rule": "hot", "key": "s1", "ts": s.time("90s"), "n": 1, "avg_temp": 30.5},
    ])


def test_a_hot_sensor_that_goes_silent_for_five_minutes(cep_harness):
    h = cep_harness(RULES)
    h.send([s.at("0s", sensor="s1", temp=31.0),     # hot, then nothing more from s1
            s.at("0s", sensor="s2", temp=32.0),
            s.at("2 min", sensor="s2", temp=20.0)])  # s2 speaks again: not silent
    assert h.advance_watermark(by="2 min").empty    # 12:04: not five minutes yet
    fired = h.advance_watermark(by="1 min")         # 12:05: s1's five minutes are up
    assert_events_equal(fired, [{"rule": "silent", "key": "s1", "ts": s.time("5 min"),
                                 "temp": 31.0}])


def test_balancing_strategies_change_no_event():
    skewed = [f"s{i}" for i in range(40)] + ["s0"] * 30 + ["s1"] * 15
    readings = s.every("1s", skewed, n=3000, key="sensor",
                       temp=lambda i: 25 + (i * 7919 % 100) / 10)
    report = assert_strategies_equal(RULES, readings, engines=3, batch_size=200)
    assert report.keys_moved["dlb-h"] > 0   # checked inside too: keys did move
