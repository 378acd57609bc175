"""A ladder as one file: export, restore (through the ladders', games' and seasons' services) and scheduled
backups."""
