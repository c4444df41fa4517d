"""cep: complex event processing with EPL-like rules, a reference evaluator and a Spark runtime."""

__version__ = "0.1.0"
