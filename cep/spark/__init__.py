"""The Spark runtime: compiled rules as PySpark Structured Streaming stateful engines."""
