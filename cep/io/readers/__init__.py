"""The input readers: one per format (JSON lines, CSV, Parquet) beside the typed
conversion they share; :mod:`cep.io.readers.ranges` is the entry."""
