"""Testing your rules: what a test needs to assert a rule file's events.

* :class:`RuleHarness`: feed events step by step, move event time by hand (advance the
  watermark, end the input) and read what each step produced, on the reference
  evaluator; ``replay(runner="spark")`` runs the same input on Spark.
* :func:`assert_events_equal` (and ``events_approx`` for ``==``): events compared as a
  test means them, with a failure message that names the differing events.
* :func:`assert_strategies_equal`: every key-preserving balancing strategy gives key
  grouping's events while keys move (checked to move), PKG reported beside them.
* :class:`EventStream`: small event streams from time offsets and keys, without files.

The pytest plugin (``cep.testing.plugin``, registered as a ``pytest11`` entry point)
adds fixtures for these. Nothing here starts or imports Spark unless a test asks for it
(``replay(runner="spark")``). The guide's "Testing your rules" shows them at work.
"""

from cep.testing.compare import (
    EventsDiff,
    EventsDiffer,
    assert_events_equal,
    diff_events,
    events_approx,
)
from cep.testing.harness import BadEvents, RuleHarness
from cep.testing.strategies import StrategiesReport, assert_strategies_equal
from cep.testing.streams import EventStream, duration, events_frame, instant

__all__ = [
    "BadEvents", "EventStream", "EventsDiff", "EventsDiffer", "RuleHarness",
    "StrategiesReport", "assert_events_equal", "assert_strategies_equal", "diff_events",
    "duration", "events_approx", "events_frame", "instant",
]
