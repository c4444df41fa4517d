"""Key-state handoff through MongoDB: key maps and the state of keys moving between
engines (docs/architecture.md#handoff-protocol)."""
