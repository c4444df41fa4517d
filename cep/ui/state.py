"""What the live view knows of a run: totals since its first batch, a bounded window of
per-batch figures, and the latest of everything else.

Every batch record is folded in once, in batch order (``add``). What grows with the run
is only ever a number: totals per rule, engine, dead-letter kind and stage. What is kept
per batch is a window of the last HISTORY_KEPT batches (older ones are read again from
the metrics when the page asks, ``RunSource.history``), so a server that watches a run
for months holds as much as one that watched it for an hour.
"""

from __future__ import annotations

from collections import deque

from cep.ui.points import batch_point

HISTORY_KEPT = 600  # batches of figures in memory (and sent to a page that opens)
MOVES_KEPT = 20  # the latest batches that handed keys over
REASONS_KEPT = 5  # the latest dead letters
TOTALS = ("events_in", "events_out", "dead_lettered", "blank_lines", "exported_keys",
          "exported_bytes", "imported_keys", "keys_moved", "state_bytes", "late_events")


class LiveState:
    """The fold of a run's batch records (see the module docstring)."""

    def __init__(self, kept: int = HISTORY_KEPT) -> None:
        self.points: deque[dict] = deque(maxlen=kept)
        self.batches = 0
        self.first_batch: int | None = None
        self.started: float | None = None  # wall time the first batch began (about)
        self.last: dict = {}  # the last record whole: settings, input, latest events
        self.totals = dict.fromkeys(TOTALS, 0)
        self.handover_s = 0.0
        self.per_rule: dict[str, int] = {}
        self.dead_kinds: dict[str, int] = {}
        self.engine_rows: list[int] = []
        self.engine_busy: list[float] = []
        self.engine_cpu: list[float] = []
        self.stage_s: dict[str, float] = {}
        self.restored: dict[str, int] = {}  # engines by where they came from, and log reads
        self.latest_events: dict[str, list[dict]] = {}  # rule -> [{batch, line}]
        self.dead_latest: deque[dict] = deque(maxlen=REASONS_KEPT)
        self.moves: deque[dict] = deque(maxlen=MOVES_KEPT)
        self.rule_changes: deque[dict] = deque(maxlen=MOVES_KEPT)  # batches a version began
        # --engines auto's decisions to change the count, and how many of each
        self.scale_decisions: deque[dict] = deque(maxlen=MOVES_KEPT)
        self.scale_counts = {"out": 0, "in": 0}

    @property
    def last_batch(self) -> int | None:
        return self.last.get("batch")

    def add(self, record: dict) -> None:
        """Fold in the next batch's record."""
        previous = self.last.get("wall_time")
        point = batch_point(record, previous)
        if self.first_batch is None:
            self.first_batch = record["batch"]
            wall = record.get("wall_time")
            self.started = wall - (point["duration"] or 0.0) if wall is not None else None
        self.batches += 1
        self.last = record
        self.points.append(point)
        for name in TOTALS:
            self.totals[name] += record.get(name, 0)
        self.handover_s += point["handover_s"] or 0.0
        _add_into(self.per_rule, record.get("outputs_per_rule", {}))
        _add_into(self.dead_kinds, record.get("dead_letter_kinds", {}))
        self.engine_rows = _add_lists(self.engine_rows, record.get("rows_per_engine", []))
        self.engine_busy = _add_lists(self.engine_busy, record.get("busy_s_per_engine", []))
        self.engine_cpu = _add_lists(self.engine_cpu, record.get("cpu_s_per_engine", []))
        _add_into(self.stage_s, record.get("stage_s", {}))
        _add_into(self.restored, record.get("keys_restored", {}))
        for rule, lines in record.get("latest_events", {}).items():
            self.latest_events[rule] = [{"batch": record["batch"], "line": line}
                                        for line in lines]
        for entry in record.get("dead_letter_latest", []):
            self.dead_latest.append({"batch": record["batch"], **entry})
        if point["rules_changed"]:
            self.rule_changes.append({"batch": record["batch"],
                                      "version": point["rules_version"]})
        if point.get("autoscale") in self.scale_counts:
            self.scale_counts[point["autoscale"]] += 1
            self.scale_decisions.append({
                "batch": record["batch"], "action": point["autoscale"],
                "from": point["engines"], "to": point["autoscale_target"],
                "reason": point["autoscale_reason"]})
        if point["handed_over"] or point["imported"] or point["decided"]:
            self.moves.append({k: point[k] for k in (
                "batch", "decided", "handed_over", "handover_bytes", "imported",
                "handover_s")})

    def snapshot(self, since: int | None = None) -> dict:
        """Everything the page shows; ``points`` only of the batches after ``since``
        (the last batch a page already has), all kept ones without it."""
        points = [p for p in self.points if since is None or p["batch"] > since]
        last = self.last
        return {
            "batches": self.batches,
            "first_batch": self.first_batch,
            "last_batch": self.last_batch,
            "started": self.started,
            "last_wall": last.get("wall_time"),
            "settings": last.get("settings", {}),
            "totals": {**self.totals, "handover_s": round(self.handover_s, 4)},
            "per_rule": self.per_rule,
            "dead_kinds": self.dead_kinds,
            "dead_latest": list(self.dead_latest),
            "latest_events": self.latest_events,
            "engines": {"rows": self.engine_rows,
                        "busy_s": [round(b, 4) for b in self.engine_busy],
                        "cpu_s": [round(c, 4) for c in self.engine_cpu],
                        "last_rows": last.get("rows_per_engine", []),
                        "last_busy_s": last.get("busy_s_per_engine", [])},
            "stage_s": {k: round(v, 4) for k, v in self.stage_s.items()},
            "last_stage_s": last.get("stage_s", {}),
            "restored": self.restored,
            "input": last.get("input"),
            "moves": list(self.moves),
            # the rules the last batch ran: version, and each rule's version and start batch
            "rules": {"version": (last.get("rules") or {}).get("version", 0),
                      "running": (last.get("rules") or {}).get("running", []),
                      "changes": list(self.rule_changes)},
            "balance": {k: last[k] for k in ("keys", "batch_keys", "capacity_shares",
                                             "keys_restored", "watermark", "keys_held")
                        if k in last},
            "autoscale": {"bounds": last.get("settings", {}).get("autoscale"),
                          "last": last.get("autoscale"),
                          "decisions": list(self.scale_decisions),
                          "counts": dict(self.scale_counts)},
            "points": points,
            "kept": self.points.maxlen,
        }


def _add_into(totals: dict, values: dict) -> None:
    for name, value in values.items():
        totals[name] = totals.get(name, 0) + value


def _add_lists(totals: list, values: list) -> list:
    if len(values) > len(totals):
        totals = [*totals, *[0] * (len(values) - len(totals))]
    return [t + (values[i] if i < len(values) else 0) for i, t in enumerate(totals)]
