"""Key migration (the project card's ``migration/``): key grouping's hash, the key maps that
override it, and the state of keys moving between engines, handed over through MongoDB
(docs/architecture.md#handoff-protocol)."""
