"""Each ladder's change log as server-sent events."""
