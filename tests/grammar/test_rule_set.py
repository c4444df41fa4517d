"""Composing a running job's rule set from its change log (``grammar.rule_set``): what
a deploy replaces and adds, what is refused and with which message, and which rules keep
their state across a change."""

from __future__ import annotations

import pytest

from grammar.compile import compile_text
from grammar.rule_set import (
    Change,
    carried_rules,
    output_order,
    rule_changes,
    versions,
)

SCHEMA = ("CREATE SCHEMA Reading (sensor string, ts timestamp, temp double, ok boolean) "
          "TIMESTAMP ts;\n")
START = SCHEMA + """CREATE VARIABLE double limit = 30.0;
@Name('hot')
SELECT sensor, avg(temp) AS a FROM Reading#groupwin(sensor)#length(3) GROUP BY sensor
HAVING avg(temp) > limit;
SELECT sensor, temp FROM Reading(temp > 40);
"""


def _one(text: str, overrides: dict | None = None):
    module = compile_text(START, "start.epl", overrides)
    every = versions(module, [Change(1, "deploy", "new.epl", text)])
    return module, every[1]


def test_a_deploy_adds_and_replaces_rules_in_place():
    module, version = _one(SCHEMA + """
@Name('cold') SELECT sensor, count(*) AS n FROM Reading#groupwin(sensor)#length(2)
GROUP BY sensor;
@Name('hot') SELECT sensor, max(temp) AS m FROM Reading#groupwin(sensor)#length(3)
GROUP BY sensor HAVING avg(temp) > limit;""")
    assert version.refused is None
    assert list(version.module.outputs) == ["hot", "rule2", "cold"]
    assert carried_rules(module, version.module) == {"hot": "compatible", "cold": "added"}
    assert output_order([module, version.module]) == {"hot": 0, "rule2": 1, "cold": 2}


def test_a_variable_deployed_wins_over_set_and_keeps_the_state():
    module, version = _one("CREATE VARIABLE double limit = 20.0;", {"limit": "35"})
    assert rule_changes(module, version.module) == {"hot": "compatible", "rule2": "kept"}


def test_what_changes_state_is_a_replacement():
    module, version = _one("@Name('hot') SELECT sensor, avg(temp) AS a "
                           "FROM Reading#groupwin(sensor)#length(4) GROUP BY sensor;")
    assert carried_rules(module, version.module) == {"hot": "replaced"}


def test_a_window_rule_that_reads_a_field_its_window_did_not_keep_is_a_replacement():
    """A window keeps only the fields its rule reads: SELECT reading ``ok`` (which the
    running form never read) cannot take the state; SELECT dropping a field can."""
    module, reads_more = _one("@Name('hot') SELECT sensor, avg(temp) AS a, last(ok) AS o "
                              "FROM Reading#groupwin(sensor)#length(3) GROUP BY sensor "
                              "HAVING avg(temp) > limit;")
    assert carried_rules(module, reads_more.module) == {"hot": "replaced"}
    module, reads_less = _one("@Name('hot') SELECT count(*) AS n "
                              "FROM Reading#groupwin(sensor)#length(3) GROUP BY sensor "
                              "HAVING avg(temp) > limit;")
    assert carried_rules(module, reads_less.module) == {"hot": "compatible"}


def test_removing_a_rule_never_renames_the_unnamed_rules_after_it():
    module = compile_text(SCHEMA + "SELECT sensor FROM Reading(temp > 1);\n"
                          "SELECT sensor FROM Reading(temp > 2);", "s.epl")
    every = versions(module, [Change(1, "undeploy", names=("rule1",))])
    assert list(every[1].module.outputs) == ["rule2"]
    assert rule_changes(module, every[1].module) == {"rule2": "kept", "rule1": "removed"}


@pytest.mark.parametrize(("text", "message"), [
    (SCHEMA.replace("ok boolean", "ok boolean, x int"),
     "new.epl:1:1: error: schema 'Reading' differs from the running job's"),
    ("CREATE SCHEMA Other (a int);", "new.epl:1:1: error: stream 'Other' is not one of"),
    ("SELECT sensor FROM Reading;", "new.epl:1:1: error: a deployed rule needs a name"),
    ("@Name('x') SELECT sensor FROM Readin;", "new.epl:1:31: error: unknown stream"),
    ("@Name('x') SELECT sensor FROM", "new.epl:1:30: error:"),
    ("@Name('x') SELECT ok, count(*) AS n FROM Reading#groupwin(ok)#length(2) "
     "GROUP BY ok;", "new.epl:1:1: error: rule 'x' is keyed by ok"),
    ("@Name('x') INSERT INTO Hot SELECT sensor, count(*) AS n FROM "
     "Reading#groupwin(sensor)#length(2) GROUP BY sensor;\n"
     "@Name('y') SELECT sensor FROM Hot;",
     "the change makes 2 INSERT INTO stages of the running job's 1"),
])
def test_a_change_that_cannot_apply_is_refused_in_one_line(text, message):
    module, version = _one(text)
    assert version.refused is not None and version.refused.startswith(message), \
        version.refused
    assert "\n" not in version.refused
    assert version.module is module, "the job goes on unchanged"


def test_a_stage_key_cannot_change_while_its_keys_are_placed():
    module = compile_text(START, "start.epl")
    every = versions(module, [
        Change(1, "undeploy", names=("hot",)),
        Change(2, "deploy", "k.epl", "@Name('k') SELECT ok, count(*) AS n FROM "
               "Reading#groupwin(ok)#length(2) GROUP BY ok;")])
    assert every[1].refused is None and every[1].module.key is None
    assert every[2].refused is None, "no stateful rule held keys: a new key is free"


def test_undeploying_an_unknown_rule_is_refused_and_later_changes_still_apply():
    module = compile_text(START, "start.epl")
    every = versions(module, [Change(1, "undeploy", names=("nope",)),
                              Change(2, "undeploy", names=("rule2",))])
    assert every[1].refused.startswith("no running rule is named 'nope'")
    assert every[2].refused is None and list(every[2].module.outputs) == ["hot"]
