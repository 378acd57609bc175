"""Win probabilities and expected scores for a pair or any game, with a fast path for the plain pair."""
