"""Ladders: creation, settings, keys and deletion."""
