"""mElo rating service."""
