"""``--engines auto[:LO-HI]`` as a run option (without Spark): the option's parse, the
bounds of a bare ``auto`` per master, the partitions a scalable job starts with, the
run directory of an ``auto`` key-grouping job (routed by key maps from its start, or
from the batch a restart resumes at) and the refusals. Oracles: the documented
defaults (docs/guide.md#automatic-scaling---engines-auto) and ``engine_partitions``'
rule (a partition per engine up to the most, at most a local master's slots)."""

from __future__ import annotations

import json
import os

import pytest

from cep.api import compile_rules
from cep.cli.dispatch import build_parser
from cep.cli.run import run_config
from cep.run_config import RunConfig
from cep.spark.run_dir import SparkRunError, run_manifest
from cep.spark.runtime import run_on_spark
from splitter.engine_labels import engine_partitions, local_slots


def _config(*options: str) -> RunConfig:
    args = build_parser("run").parse_args(["run", "r.epl", "--input", "x.jsonl", *options])
    return run_config(args, "dead.jsonl")


def test_the_option_s_forms():
    assert (_config().engines, _config().autoscale) == (5, None)
    assert (_config("--engines", "3").engines, _config("--engines", "3").autoscale) == (3, None)
    auto = _config("--engines", "auto:2-8")
    assert (auto.engines, auto.autoscale, auto.autoscale_band) == (2, (2, 8), (0.3, 0.8))
    bare = _config("--engines", "auto", "--master", "local[3]")
    assert (bare.engines, bare.autoscale) == (1, (1, 3))
    star = _config("--engines", "auto")  # local[*]: the machine's cores
    assert star.autoscale == (1, os.cpu_count() or 1)
    cluster = _config("--engines", "auto", "--master", "spark://host:7077")
    assert cluster.autoscale == (1, 16)
    assert _config("--engines", "auto:1-4", "--autoscale-band", "0.1:0.5").autoscale_band \
        == (0.1, 0.5)
    for bad in ("0", "auto:3-2", "auto:0-4", "auto:1-999", "auto:x", "lots"):
        with pytest.raises(SystemExit):
            _config("--engines", bad)
    with pytest.raises(SystemExit):
        _config("--engines", "auto", "--autoscale-band", "0.8:0.3")
    with pytest.raises(ValueError, match="autoscale bounds"):
        RunConfig(("x.jsonl",), engines=9, autoscale=(2, 8))


def test_a_scalable_job_gets_a_partition_per_engine_up_to_its_most():
    assert local_slots("local[3]") == 3 and local_slots("spark://h:7077") is None
    assert engine_partitions(16, "spark://h:7077") == 16
    assert engine_partitions(16, "local[4]") == 4 and engine_partitions(3, "local[4]") == 3


def test_an_auto_key_grouping_run_routes_by_maps(tmp_path):
    run = tmp_path / "run"
    _, _, layout = run_manifest(run, 2, "kg", {"S": "in/"}, 8, scalable=True)
    assert layout.maps and layout.kg_maps is None
    fixed = tmp_path / "fixed"
    assert not run_manifest(fixed, 2, "kg", {"S": "in/"}, 2)[2].maps
    _, partitions, layout = run_manifest(fixed, 2, "kg", {"S": "in/"}, 8, scalable=True)
    assert layout.maps and layout.kg_maps == (0, 2) and partitions == 2  # the checkpoint's
    assert json.loads((fixed / "run.json").read_text())["maps"] is True


def test_pkg_is_refused_before_spark_starts(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text('{"k": "a", "v": 1}\n')
    rules = compile_rules("CREATE SCHEMA S (k string, v int);\n"
                          "@Name('n') SELECT k, count(*) AS n FROM S#groupwin(k)#length(2);")
    config = RunConfig((str(data),), engines=1, autoscale=(1, 4), strategy="pkg",
                       progress=False)
    with pytest.raises(SparkRunError, match="PKG"):
        run_on_spark(rules.module, config)
