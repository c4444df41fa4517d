"""The Spark runtime."""
