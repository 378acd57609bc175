"""How much of a player is known when they play: their games, worn away by the time they were gone (mathematics §3).

A game against an even opponent tells about a strength what a logistic result
tells about its logit, information ¼ (mathematics §8); a player's *experience*
e counts that information in games.  While a player is away their strength may
drift (a random walk of δ logits a year, mathematics §8 "Time away"), which adds
δ² t to its variance 1 / (¼ e).  So before each game, t years after the player's
previous one,

    e ← e / (1 + e · ¼ δ² · t)

and the game adds one: e ← e + 1.  With δ = 0, e is the number of games played
before.  The learning rate η(e) = η / √(1 + e / τ) then follows what is known of
the player (:class:`~app.rating.update.LearningRate`): small for a settled
regular, large for a newcomer and again for a player back from a long absence,
as Glicko's rating deviation and a Kalman filter's variance do.

Experience depends only on who played when, never on the results or the
ratings, so it is known for every game of a log before the log is replayed,
and the replay stays one vectorised pass over its levels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from app.rating.game_log import IntArray
from app.rating.model import Array
from app.rating.season_pull import pull_experience

#: The information of a game between even players, in the units of experience (one game).
EVEN_GAME_INFORMATION = 0.25
#: Below this many players still playing, their remaining games are taken one player at a time.
_VECTOR_ROUND = 64


def experience_before(
    member_player: IntArray,
    member_time: ArrayLike,
    n_players: int,
    drift: float,
    start: ArrayLike | None = None,
    start_time: ArrayLike | None = None,
) -> tuple[Array, Array, Array]:
    """Every membership's experience just before its game; and every player's after the log, with their latest
    game time.

    ``member_player``/``member_time`` are the memberships in log order, their
    game's time in years (any origin; games may be out of order in time: a
    player's time away is from their latest earlier game, and never negative);
    ``drift`` is δ in logits per year; ``start``/``start_time`` each player's
    experience and latest game time before the log (0 and NaN, none, by
    default).  Each value is the same bits however the log is cut into parts.
    """
    player = np.asarray(member_player, dtype=np.int64)
    time = np.asarray(member_time, dtype=np.float64)
    e = np.zeros(n_players) if start is None else np.array(start, dtype=np.float64)
    last = np.full(n_players, np.nan) if start_time is None else np.array(start_time, dtype=np.float64)
    wear = EVEN_GAME_INFORMATION * drift * drift
    out = np.empty(len(player))
    order = np.argsort(player, kind="stable")  # each player's memberships together, in log order
    counts = np.bincount(player, minlength=n_players)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    playing = np.flatnonzero(counts)
    r = 0
    # Round r takes every player's r-th membership at once; when few players are left, each goes on alone.
    while len(playing) >= _VECTOR_ROUND:
        rows = order[first[playing] + r]
        x, t, before = e[playing], time[rows], last[playing]
        away = t - before
        worn = away > 0  # False for NaN: no earlier game
        x[worn] = x[worn] / (1.0 + x[worn] * wear * away[worn])
        out[rows] = x
        e[playing] = x + 1.0
        last[playing] = np.fmax(before, t)
        r += 1
        playing = playing[counts[playing] > r]
    for p in playing.tolist():  # as above, one player at a time in Python floats (x_p: player p's x, and so on)
        x_p, before_p = float(e[p]), float(last[p])
        for row in order[first[p] + r : first[p] + counts[p]].tolist():
            t_p = float(time[row])
            away_p = t_p - before_p
            if away_p > 0:
                x_p = x_p / (1.0 + x_p * wear * away_p)
            out[row] = x_p
            x_p = x_p + 1.0
            if t_p == t_p and not before_p >= t_p:  # fmax: a NaN before (no earlier game) gives t; a NaN t, no change
                before_p = t_p
        e[p], last[p] = x_p, before_p
    return out, e, last


def experience_before_cutoffs(
    memberships: Iterable[tuple[IntArray, IntArray, Array]],
    player_ids: IntArray,
    cutoffs: IntArray,
    drift: float,
    pulls: Sequence[tuple[int, float]] = (),
) -> tuple[Array, Array]:
    """The experience and latest game time (years, NaN: none) of ``player_ids`` (sorted) just before their game
    ``cutoffs``: their games before it, in log order, worn by the ``drift``, and kept the part 1 - p by each
    season that closed with a pull p before it (``pulls``: (boundary game id, p), in log order;
    :mod:`app.rating.season_pull`).

    ``memberships`` are the log's memberships in game order, in parts of (player id, game id, time in years);
    those of other players, or at or after their player's cutoff, are skipped.  Each part carries on from the
    state the one before left (the recursion is each player's own, so it is the same numbers as one pass).
    """
    pulls = list(pulls)
    experience, last = np.zeros(len(player_ids)), np.full(len(player_ids), np.nan)

    def pull_before(game_id: float) -> None:
        """The pulls of the seasons that closed before game ``game_id``, on the players whose cutoff is later."""
        nonlocal experience
        while pulls and pulls[0][0] < game_id:
            boundary, pull = pulls.pop(0)
            later = cutoffs > boundary
            experience[later] = pull_experience(experience[later], pull)

    for player, game, when in memberships:
        at = np.searchsorted(player_ids, player)
        mine = at < len(player_ids)
        mine[mine] = player_ids[at[mine]] == player[mine]
        mine[mine] = game[mine] < cutoffs[at[mine]]
        at, when, game = at[mine], when[mine], game[mine]
        lo = 0
        while lo < len(game):  # the rows between two seasons' boundaries at a time
            pull_before(int(game[lo]))
            hi = int(np.searchsorted(game, pulls[0][0], "right")) if pulls else len(game)
            _, experience, last = experience_before(at[lo:hi], when[lo:hi], len(player_ids), drift, experience, last)
            lo = hi
    pull_before(math.inf)  # every pull left
    return experience, last
