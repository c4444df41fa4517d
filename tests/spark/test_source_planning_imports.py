"""The input source stays cheap to unpickle where Spark only plans: its creation, its
streaming runner and the read planner each unpickle it in a Python process of their own
before a run's first batch, one after the other (``cep/spark/inputs/source.py``). Making its
stream reader there must not load the rule parser or checker (Lark, ``grammar.check``):
only a job whose rules changed composes a version, and it imports them then."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pyspark import cloudpickle
from support.spark_runs import ROOT

from cep.spark.inputs.config import SourceConfig
from cep.spark.inputs.source import input_source
from grammar.compile import compile_file
from splitter.routing import key_grouping

PLAN = """
import json, sys
import pyspark.sql.worker.create_data_source  # in Spark's process already
from pyspark import cloudpickle
before = set(sys.modules)
source = cloudpickle.loads(sys.stdin.buffer.read())
reader = source(options={}).streamReader(source(options={}).schema())
print(json.dumps({"new": sorted(set(sys.modules) - before),
                  "version": reader.book.latest()}))
"""


def test_planning_the_source_loads_no_parser_and_no_checker(tmp_path):
    module = compile_file(ROOT / "rules" / "fsd.epl")
    config = SourceConfig({"Tweet": str(tmp_path / "in.jsonl")}, str(tmp_path / "run"),
                          follow=True, batch_size=1000, tasks=2, max_record_bytes=1 << 20)
    source = input_source(config, module, [[0, 1]], key_grouping(2))
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    planned = subprocess.run([sys.executable, "-c", PLAN], input=cloudpickle.dumps(source),
                             capture_output=True, check=True, cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": path})  # this checkout's cep
    result = json.loads(planned.stdout)
    assert result["version"] == 0
    assert "cep.spark.inputs.source" in result["new"]
    loaded = [m for m in result["new"]
              if m.split(".")[0] == "lark" or m in ("grammar.parser", "grammar.check",
                                                     "grammar.compile")]
    assert loaded == []
