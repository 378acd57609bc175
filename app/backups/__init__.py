"""A ladder as one file: its export, and a restore that replays it through the ladders', games' and seasons'
services."""
