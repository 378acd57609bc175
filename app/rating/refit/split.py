"""Which pair terms a refit holds out (mathematics §9): whole matchups, in one random split or dealt into folds."""

from __future__ import annotations

import numpy as np

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog, IntArray


def matchups(log: GameLog, pairs: IntArray | None = None) -> IntArray:
    """For each pair term (of ``pairs``, default all), the number 0, 1, 2, … of its matchup: an unordered pair of
    lineups, the same for every meeting of the same players on the same sides."""
    a, b = _lineups(log)
    if pairs is not None:
        a, b = a[pairs], b[pairs]
    _, matchup = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)]), axis=1, return_inverse=True)
    return matchup.reshape(-1)


def _lineups(log: GameLog) -> tuple[IntArray, IntArray]:
    """A number for the lineup of each pair term's two sides (equal numbers: the same players)."""
    singles = log.single_players()
    if singles is not None:
        return singles
    lineup: dict[tuple[int, ...], int] = {}
    numbers = np.array(
        [lineup.setdefault(tuple(sorted(players)), len(lineup)) for players in log.side_players()], dtype=np.int64
    )
    return numbers[log.pair_a], numbers[log.pair_b]


def split_games(log: GameLog, holdout: float, seed: int) -> tuple[IntArray, IntArray]:
    """Pair terms of a random ``holdout`` fraction of the matchups (test) and of the rest (train).

    A matchup is an unordered pair of lineups (the players of each side), and
    every meeting of one matchup falls on the same side of the split.  Held-out
    loss then measures predictions for pairs never seen together, which is what
    matchmaking asks.  Holding out random games instead leaves a rematch of
    nearly every test pair in training, and rewards a larger k for memorising
    pairs: chosen that way, k was the largest offered even where Elo predicts
    unseen pairs better (bench/bench_select_k.py).
    """
    if not 0.0 <= holdout < 1.0:
        raise RatingInputError("holdout", "must be in [0, 1)")
    matchup = matchups(log)
    test_matchup = np.random.default_rng(seed).random(int(matchup.max(initial=-1)) + 1) < holdout
    test = test_matchup[matchup]
    return np.flatnonzero(~test), np.flatnonzero(test)


def heldout_split(log: GameLog, holdout: float, seed: int) -> tuple[IntArray, IntArray | None, str | None]:
    """(train, test, None) from :func:`split_games`, or (every pair term, None, why) when nothing can be held out.

    Nothing is held out with ``holdout`` 0, or when the split leaves either side
    without a pair term: a log of one matchup (every game between the same
    lineups) never splits, and in a log of a few matchups the random draw may
    hold out none or all of them.  The refit then fits every game and reports
    no held-out metrics, saying why.
    """
    every = np.arange(len(log.pair_a))
    if holdout == 0:
        return every, None, "Nothing held out: holdout is 0. Fitted on all games, no held-out metrics."
    train, test = split_games(log, holdout, seed)
    if len(train) and len(test):
        return train, test, None
    n = int(matchups(log).max(initial=-1)) + 1
    if n == 0:
        why = "the log has no games"
    elif n == 1:
        why = "the log has 1 matchup (pair of lineups that met), and a matchup's games are never split"
    else:
        drawn = "none" if len(test) == 0 else "all"
        why = (
            f"of the log's {n} matchups (pairs of lineups that met), the random {holdout:g} share drawn with seed "
            f"{seed} held out {drawn} (another seed may split them)"
        )
    return every, None, f"Nothing held out: {why}. Fitted on all games, no held-out metrics."


def fold_terms(log: GameLog, folds: int, seed: int) -> IntArray:
    """Each pair term's fold, 0 to ``folds`` - 1 (fewer if the log has fewer matchups): the log's matchups dealt
    at random into folds of as equal a number as can be, every meeting of a matchup in the same fold (as
    :func:`split_games` holds out)."""
    matchup = matchups(log)
    n = int(matchup.max(initial=-1)) + 1
    return (np.random.default_rng(seed).permutation(n) % min(folds, max(n, 1)))[matchup]
