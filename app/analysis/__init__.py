"""Offline analysis of a ladder: refit jobs (queue, run, guard, learning-rate choice, apply) and the ladder-wide
reports (audit, identifiability, intransitivity)."""
