"""Challenges: one player challenges another, the other accepts or declines, and the game that settles it is
recorded against it in one call."""
