"""cep: complex event processing with EPL-like rules, a reference evaluator and a Spark runtime.

    import cep
    events = cep.compile_rules("rules/fsd.epl").run("tweets.jsonl")
"""

from cep.api import Rules, compile_rules

__version__ = "0.1.0"
__all__ = ["Rules", "__version__", "compile_rules"]
