"""Comparing complex events as a test does: :func:`assert_events_equal`, :func:`diff_events`
and :func:`events_approx` (``pytest.approx`` for events).

Why these rules:

* **Which fields.** Expected events are written by hand, and a person writes the fields
  that matter (``rule``, ``key``, the SELECT columns) and rarely ``seq``, the event's
  place in the input. So the fields compared are the ones the expected events name
  (their union; a DataFrame's columns), less ``ignore``; an actual event is read on
  those fields alone (one it lacks reads as None).
* **Order.** A run's events come in the reference order (``seq``, then the rule's place
  in the file), but which order a test writes them in says nothing: the comparison is of
  multisets unless ``ordered=True``.
* **Floats.** Equal means equal, as the project's own comparisons of runners and
  strategies are exact; ``rel`` or ``abs`` allow a tolerance when a test asks for one
  (an average written with fewer digits).
* **Timestamps.** ``ts`` and any datetime are compared as instants in UTC, whether
  written as ``pd.Timestamp``, ``datetime`` or ISO-8601 text.
* **Failure message.** The events missing from the actual ones and the extra ones,
  grouped by rule and key, the first few of each shown with their fields: enough to see
  which event differs without printing hundreds.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

Events = pd.DataFrame | Iterable[Mapping[str, Any]]
SHOWN = 5  # events of each group shown in a failure message
GROUPS_SHOWN = 10  # (rule, key) groups shown


class EventsDiffer(AssertionError):
    """Raised by :func:`assert_events_equal`; ``diff`` holds the differences."""

    def __init__(self, diff: EventsDiff, shown: int = SHOWN) -> None:
        super().__init__(diff.report(shown))
        self.diff = diff


def records_of(events: Events) -> list[dict[str, Any]]:
    """Events as a list of dicts (a DataFrame's rows; NaN, NaT and NA as None)."""
    if isinstance(events, pd.DataFrame):
        frame = events.astype(object).where(events.notna(), None)
        return frame.to_dict("records")
    return [dict(e) for e in events]


def _instant(value: Any) -> pd.Timestamp:
    stamp = pd.Timestamp(value)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _canonical(name: str, value: Any) -> Any:
    """A value as it is compared: instants in UTC, numbers as Python numbers, NaN as
    None (a missing value), lists as tuples."""
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, dt.datetime | pd.Timestamp) or (name == "ts" and isinstance(value, str)):
        return _instant(value)
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list | tuple):
        return tuple(_canonical(name, v) for v in value)
    return value


def _shown(value: Any) -> str:
    if isinstance(value, pd.Timestamp):
        return value.isoformat().replace("+00:00", "Z")
    return repr(value)


@dataclass
class EventsDiff:
    """What :func:`diff_events` found: the events expected and not produced
    (``missing``), those produced and not expected (``extra``), each as the fields
    compared, and for ``ordered`` comparisons the first place where the orders part."""

    fields: list[str]
    expected_count: int
    actual_count: int
    missing: list[dict[str, Any]] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    first_out_of_order: int | None = None

    def __bool__(self) -> bool:
        """True when the events differ (so ``if diff:`` reads as "if they differ")."""
        return bool(self.missing or self.extra) or self.first_out_of_order is not None

    def report(self, shown: int = SHOWN) -> str:
        """The differences as a person reads them: counts, then per rule and key the
        first ``shown`` missing and extra events with their fields."""
        if not self:
            return (f"events equal: {self.actual_count} on "
                    f"{', '.join(self.fields) or 'no field'}")
        lines = [f"events differ: {len(self.missing)} missing, {len(self.extra)} extra "
                 f"({self.expected_count} expected, {self.actual_count} actual; compared "
                 f"on {', '.join(self.fields) or 'no field'})"]
        if self.first_out_of_order is not None and not (self.missing or self.extra):
            lines.append(f"the same events in another order: the first to differ is "
                         f"event {self.first_out_of_order} (counting from 0)")
        groups: dict[tuple, dict[str, list]] = defaultdict(lambda: {"missing": [], "extra": []})
        for kind in ("missing", "extra"):
            for event in getattr(self, kind):
                groups[(event.get("rule"), event.get("key"))][kind].append(event)
        for n, ((rule, key), found) in enumerate(sorted(groups.items(), key=_group_order)):
            if n == GROUPS_SHOWN:
                lines.append(f"... and {len(groups) - GROUPS_SHOWN} more rule and key groups")
                break
            head = [f"rule {rule}" if "rule" in self.fields else None,
                    f"key {_shown(key)}" if "key" in self.fields else None]
            counts = ", ".join(f"{len(found[k])} {k}" for k in ("missing", "extra")
                               if found[k])
            lines.append(f"{', '.join(h for h in head if h) or 'events'}: {counts}")
            for kind in ("missing", "extra"):
                for event in found[kind][:shown]:
                    rest = {k: v for k, v in event.items() if k not in ("rule", "key")}
                    text = ", ".join(f"{k}={_shown(v)}" for k, v in rest.items())
                    lines.append(f"  {kind + ':':8} {text}")
                if len(found[kind]) > shown:
                    lines.append(f"  ... and {len(found[kind]) - shown} more {kind}")
        return "\n".join(lines)


def _group_order(item: tuple) -> tuple:
    (rule, key), _ = item
    return (str(rule), str(key))


def diff_events(actual: Events, expected: Events, *, ordered: bool = False,
                rel: float | None = None, abs: float | None = None,
                ignore: Sequence[str] = (), fields: Sequence[str] | None = None) -> EventsDiff:
    """The differences between ``actual`` and ``expected`` events (see the module notes
    for which fields, order, floats and timestamps). ``fields`` overrides the fields
    compared (default: those the expected events name)."""
    got, want = records_of(actual), records_of(expected)
    if fields is None:
        named = (list(expected.columns) if isinstance(expected, pd.DataFrame)
                 else list(dict.fromkeys(k for e in want for k in e)))
        if not named and got:  # nothing expected: compare everything that came
            named = list(dict.fromkeys(k for e in got for k in e))
        fields = named
    fields = [f for f in fields if f not in ignore]
    got_rows = [_project(e, fields) for e in got]
    want_rows = [_project(e, fields) for e in want]
    diff = EventsDiff(list(fields), len(want_rows), len(got_rows))
    if ordered:
        for i, (a, b) in enumerate(zip(got_rows, want_rows, strict=False)):
            if not _same(a, b, rel, abs):
                diff.first_out_of_order = i
                break
    missing, extra = _unmatched(want_rows, got_rows, rel, abs)
    diff.missing = [dict(zip(fields, row, strict=True)) for row in missing]
    diff.extra = [dict(zip(fields, row, strict=True)) for row in extra]
    if ordered and diff.first_out_of_order is None and len(got_rows) != len(want_rows):
        diff.first_out_of_order = min(len(got_rows), len(want_rows))
    return diff


def _project(event: Mapping[str, Any], fields: Sequence[str]) -> tuple:
    return tuple(_canonical(f, event.get(f)) for f in fields)


def _same(a: tuple, b: tuple, rel: float | None, abs_: float | None) -> bool:
    if rel is None and abs_ is None:
        return a == b
    return all(_close(x, y, rel, abs_) for x, y in zip(a, b, strict=True))


def _close(x: Any, y: Any, rel: float | None, abs_: float | None) -> bool:
    numbers = (int, float)
    if (isinstance(x, numbers) and isinstance(y, numbers)
            and not isinstance(x, bool) and not isinstance(y, bool)):
        return math.isclose(x, y, rel_tol=rel or 0.0, abs_tol=abs_ or 0.0) or x == y
    if isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y):
        return all(_close(a, b, rel, abs_) for a, b in zip(x, y, strict=True))
    return x == y


def _unmatched(want: list[tuple], got: list[tuple], rel: float | None, abs_: float | None
               ) -> tuple[list[tuple], list[tuple]]:
    """The expected rows no actual row matches, and the actual rows left over: equal
    rows first (as multisets), then, with a tolerance, each left-over expected row
    against the first left-over actual row close to it."""
    left_want = Counter(want)
    left_got = Counter(got)
    common = left_want & left_got
    left_want -= common
    left_got -= common
    missing = list(left_want.elements())
    extra = list(left_got.elements())
    if (rel is None and abs_ is None) or not missing or not extra:
        return missing, extra
    still: list[tuple] = []
    for row in missing:
        at = next((i for i, other in enumerate(extra) if _close(row, other, rel, abs_)), None)
        if at is None:
            still.append(row)
        else:
            extra.pop(at)
    return still, extra


def assert_events_equal(actual: Events, expected: Events, *, ordered: bool = False,
                        rel: float | None = None, abs: float | None = None,
                        ignore: Sequence[str] = (), fields: Sequence[str] | None = None,
                        shown: int = SHOWN) -> None:
    """Fail with :class:`EventsDiffer` (an ``AssertionError``) unless ``actual`` and
    ``expected`` hold the same events on the fields the expected ones name (see
    :func:`diff_events`); the message groups the missing and extra events by rule and
    key and shows the first ``shown`` of each with their fields."""
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    diff = diff_events(actual, expected, ordered=ordered, rel=rel, abs=abs, ignore=ignore,
                       fields=fields)
    if diff:
        raise EventsDiffer(diff, shown) from None


class EventsApprox:
    """``pytest.approx`` for events: ``assert actual == events_approx(expected, rel=…)``;
    with the ``cep.testing`` plugin a failing assertion shows :meth:`EventsDiff.report`."""

    def __init__(self, expected: Events, **options: Any) -> None:
        self.expected = records_of(expected)
        self.options = options

    def diff(self, actual: Events) -> EventsDiff:
        return diff_events(actual, self.expected, **self.options)

    def __eq__(self, actual: object) -> bool:
        if not isinstance(actual, pd.DataFrame | list | tuple):
            return NotImplemented
        return not self.diff(actual)  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]  # compared, never hashed

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"events_approx({len(self.expected)} events{options})"


def events_approx(expected: Events, *, ordered: bool = False, rel: float | None = None,
                  abs: float | None = None, ignore: Sequence[str] = (),
                  fields: Sequence[str] | None = None) -> EventsApprox:
    """Expected events to compare with ``==`` (see :class:`EventsApprox`)."""
    return EventsApprox(expected, ordered=ordered, rel=rel, abs=abs, ignore=tuple(ignore),
                        fields=fields)
