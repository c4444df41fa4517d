#!/usr/bin/env bash
# Creates bench/.flink-venv with PyFlink 2.3 for bench/flink_job.py.
# Flink lives in its own venv because apache-flink pins its own versions of numpy, pandas,
# pyarrow and friends; installing it next to cep would fight over them, and Flink is only
# the yardstick of a bench, never a cep dependency. Needs Java 17 on PATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.flink-venv"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null || python=python3
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet 'apache-flink==2.3.*'
"$venv/bin/python" -c 'import pyflink, importlib.metadata as m; print("pyflink", m.version("apache-flink"))'
