"""Players: changes, the leaderboard, a player's profile and history, opponents and season standings."""
