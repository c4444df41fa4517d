"""A failed query's one line: cep's own errors as they are, anything else with where
Spark's log (which holds the traces) is."""

from __future__ import annotations

from cep.spark.jvm.session import SPARK_LOG
from cep.spark.runtime import _failure

TRACE = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
         "ZeroDivisionError: division by zero\n\tat org.apache.spark.Foo(Foo.java:1)\n"
         "=== Streaming Query ===\nplan")


def test_an_unnamed_failure_names_the_spark_log(tmp_path):
    line = _failure(Exception(TRACE), None, tmp_path, None)
    assert line == f"ZeroDivisionError: division by zero (Spark's log: {SPARK_LOG})"


def test_cep_own_errors_stay_as_they_are(tmp_path):
    error = Exception("py4j...\nRuleError: rules.epl:3:7: no stream Foo\n\tat java.Bar")
    assert _failure(error, None, tmp_path, None) == "RuleError: rules.epl:3:7: no stream Foo"
