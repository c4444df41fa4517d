"""cep: complex event processing with EPL-like rules, a reference evaluator and a Spark runtime.

    import cep
    events = cep.compile_rules("rules/fsd.epl").run("tweets.jsonl")

The API is imported on first use: Spark's Python workers import ``cep.engine`` modules
for every stateful task pool, and should not pay for pyspark's driver side or MongoDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Rules", "__version__", "compile_rules"]

if TYPE_CHECKING:
    from cep.api import Rules, compile_rules


def __getattr__(name: str) -> Any:
    if name in ("Rules", "compile_rules"):
        from cep import api

        return getattr(api, name)
    raise AttributeError(f"module 'cep' has no attribute {name!r}")
