"""The stateful processor stays cheap to unpickle: Spark unpickles it on the driver, in a
Python process of its own, before every query's first batch (``cep/spark/engines/processor.py``),
and every run waits for that. Only what it names may load there: never pandas, pyarrow,
numpy or the engine task's own modules."""

from __future__ import annotations

import json
import subprocess
import sys

from pyspark import cloudpickle
from support.spark_runs import ROOT

from cep.spark.chains.stages import ChainParts
from cep.spark.engines.processor import EngineProcessor
from cep.spark.output.event_parts import EventParts
from grammar.compile import compile_file

LOAD = """
import json, sys
import pyspark.sql.streaming.stateful_processor  # in Spark's process already
from pyspark import cloudpickle
before = set(sys.modules)
processor = cloudpickle.loads(sys.stdin.buffer.read())
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_unpickling_the_processor_loads_no_data_library_and_no_engine(tmp_path):
    module = compile_file(ROOT / "rules" / "fsd.epl")
    processor = EngineProcessor(module, [[0, 1], [2, 3]], EventParts(str(tmp_path / "p")),
                                chain=ChainParts(str(tmp_path / "c")))
    loaded = subprocess.run([sys.executable, "-c", LOAD], input=cloudpickle.dumps(processor),
                            capture_output=True, check=True, cwd=tmp_path)
    new = json.loads(loaded.stdout)
    assert not [m for m in new if m.split(".")[0] in ("pandas", "pyarrow", "numpy")]
    assert {m for m in new if m.split(".")[0] == "cep"} <= {
        "cep", "grammar", "grammar.ir", "cep.spark", "cep.spark.engines",
        "cep.spark.engines.processor", "cep.spark.engines.task"}
    assert processor.task.engine_of_label == {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}
    assert processor.task.parts_at == (str(tmp_path / "p"), "jsonl")
