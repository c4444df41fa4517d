"""Inputs (typed readers with dead letters, built-in generators) and sinks."""
