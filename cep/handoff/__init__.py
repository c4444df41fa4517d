"""Key-state handoff through MongoDB and the embedded server lifecycle."""
