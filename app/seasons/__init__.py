"""Seasons: closing one archives the standings, optionally pulling the ratings back toward the start."""
