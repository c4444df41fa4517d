"""Routing, load statistics, balancing strategies and the trace simulator."""
