"""What a ladder's player table says of each player: Hodge strength, standard error, conservative strength,
provisional and inactive flags, the ladder's clock, and the record a profile and a leaderboard row both show
(mathematics §8, §10).

Everything that ranks players reads the ladder's player table through
:func:`app.storage.read_model.current_table`, a per-process copy kept until the ladder's
version moves; the strengths and orders derived from it are computed once
per version.
"""

from __future__ import annotations

import numpy as np

from app import rating, storage
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.rating import ranking
from app.rating.ranking import ELO_RESULTS
from app.storage.codec import NO_TIME
from app.storage.read_model import Table


def hodge(table: Table) -> np.ndarray:
    """Every player's Hodge strength (logits), once per table."""
    return table.derived("hodge", lambda: rating.hodge_strength(table.C))


def provisional(table: Table, k: int) -> np.ndarray:
    """Every player's flag: not yet placed against the others (mathematics §10).

    Fewer than :data:`app.rating.ranking.ELO_RESULTS` results against others (checked on every
    read), or outside the connected field of the latest applied refit.  A
    player placed on the Elo scale whose cyclic coordinates are not pinned down
    yet (fewer than 2k+1 results, or not comparable in that refit) is
    established, and :func:`_provisional_reason` says what their place rests on.
    """

    def compute() -> np.ndarray:
        return ranking.provisional(table.counts[:, 4], table.placement.is_outside(table.ids))

    return table.derived(("provisional", k), compute)


def _provisional_reason(table: Table, k: int, n: int) -> str | None:
    comparisons, ids = int(table.counts[n, 4]), table.ids[n : n + 1]
    if comparisons < ELO_RESULTS:
        return f"{comparisons} of the {ELO_RESULTS} results against others needed to place a rating"
    if table.placement.is_outside(ids)[0]:
        return (
            "the latest applied refit found they have not both won and lost (or drawn) against the connected "
            "field, so no rating places them against it yet"
        )
    if comparisons < 2 * k + 1:
        why = f"{comparisons} of the {2 * k + 1} results against others needed to pin down all {2 * k} coordinates"
    elif table.placement.is_not_comparable(ids)[0]:
        why = "the latest applied refit found their results do not pin down every coordinate"
    else:
        return None
    return f"established on the Elo scale; the cyclic coordinates are not pinned down yet ({why})"


def _moved(table: Table, n: int) -> float | None:
    """How far (Elo points) the field has moved player ``n`` since their last game; None if unknown."""
    then = table.strength_then[n]
    if np.isnan(then):
        return None
    # Rounded to a millionth of a point: floating-point noise of a field that did not move is 0, not ±1e-14.
    return round(float((hodge(table)[n] - then) * rating.ELO_PER_LOGIT), 6) + 0.0


DAY = 86_400 * 10**6  # microseconds, as the table keeps times
YEAR = 365.25 * DAY


def clock(table: Table) -> int:
    """The ladder's clock: the newest ``played_at`` of its games (microseconds since the epoch), NO_TIME before
    any.  Standard errors and inactivity count time by it, so the same log gives the same answers whenever they
    are read, and a cached page stays right until the next game."""
    return table.derived("clock", lambda: int(table.last_played.max()) if len(table.last_played) else NO_TIME)


def _idle(table: Table, rows: np.ndarray | None = None) -> np.ndarray:
    """Microseconds from each player's last game to the ladder's clock (0 for those who have not played)."""
    last = table.last_played if rows is None else table.last_played[rows]
    idle = np.zeros(len(last), dtype=np.int64)
    played = last != NO_TIME
    idle[played] = clock(table) - last[played]
    return idle


def _se(table: Table, ladder: LadderRow, rows: np.ndarray | None = None) -> np.ndarray:
    # What the results tell of each player: their experience (their games, worn by earlier breaks where the steps
    # follow time away), and the time since their last game on top.
    rule = ladder.learning_rate()
    # Under the variance rule the variance is what the results tell; the field's lag counts the games.
    state = table.counts[:, 0].astype(np.float64) if isinstance(rule, rating.VarianceRule) else table.experience
    known = state if rows is None else state[rows]
    drift = ladder.drift / rating.ELO_PER_LOGIT
    idle_years = _idle(table, rows) / YEAR
    field = field_prior(table, ladder)
    if isinstance(rule, rating.VarianceRule):  # the players' variances are the standard errors (§3b)
        variance = variances(table, rule)
        mine = variance if rows is None else variance[rows]
        return rating.strength_se(table.C, known, None, rows, idle_years, drift, field, variance=mine)
    return rating.strength_se(table.C, known, rule, rows, idle_years, drift, field, mean=mean_vector(table))


def mean_vector(table: Table) -> np.ndarray:
    """The field's mean vector, once per version of the ladder."""
    return table.derived("mean", lambda: rating.field_mean(table.C))


def field_prior(table: Table, ladder: LadderRow) -> tuple[float, float, float]:
    """The field's prior and early lag from every player's record: games, and points (a win 1, a draw ½)
    (mathematics §8), once per version of the ladder."""
    return table.derived("field prior", lambda: _field_prior(table, ladder))


def variances(table: Table, rule: rating.VarianceRule) -> np.ndarray:
    """Every player's variance under the variance rule: a newcomer's where none is kept yet."""
    return np.where(np.isnan(table.variance), rule.start, table.variance)


def _field_prior(table: Table, ladder: LadderRow) -> tuple[float, float, float]:
    points = table.counts[:, 1] + 0.5 * table.counts[:, 2]
    rule = ladder.learning_rate()
    if isinstance(rule, rating.VarianceRule):
        return rating.field_prior(table.C, table.counts[:, 0], points, variance=variances(table, rule))
    return rating.field_prior(table.C, table.counts[:, 0], points, rule)


def _strength_se(table: Table, ladder: LadderRow) -> np.ndarray:
    """Standard error of every Hodge strength, in logits, grown by the time since each player's last game
    (mathematics §8)."""
    return table.derived("se", lambda: _se(table, ladder))


def page_se(table: Table, ladder: LadderRow, rows: np.ndarray) -> np.ndarray:
    """The standard errors of the players ``rows``: from the whole table's if a leaderboard computed them, else
    for these rows alone (each against the field: cheap for a page or a profile)."""
    if "se" in table.memo:
        return table.memo["se"][rows]
    return _se(table, ladder, rows)


def _idle_out(table: Table, ladder: LadderRow) -> np.ndarray:
    """Every player's flag: has games, and none in the ladder's last ``inactive_after_days`` days."""
    if ladder.inactive_after_days is None:
        return np.zeros(len(table.keys), dtype=bool)
    return _idle(table) > ladder.inactive_after_days * DAY


def is_listed(table: Table, ladder: LadderRow) -> np.ndarray:
    """Whether each player is on the default leaderboard (and suggested as an opponent): active, and not away
    longer than the ladder's ``inactive_after_days``."""
    return table.derived(("listed", ladder.inactive_after_days), lambda: table.active & ~_idle_out(table, ladder))


def listed_rows(table: Table, ladder: LadderRow) -> np.ndarray:
    """The rows of the players :func:`is_listed`, once per table."""
    mask = is_listed(table, ladder)
    return table.derived(("listed rows", ladder.inactive_after_days), lambda: np.flatnonzero(mask))


def _inactive_reason(table: Table, ladder: LadderRow, n: int) -> str | None:
    if not table.active[n]:
        return "set inactive: off the standings until a write key makes them active again"
    days = ladder.inactive_after_days
    if days is None or table.last_played[n] == NO_TIME:
        return None
    idle = int(clock(table) - table.last_played[n])
    if idle <= days * DAY:
        return None
    away = idle // DAY
    listing = f"the ladder lists those who played in the last {days} days, and their next game brings them back"
    return f"last played {away} day{'s' if away != 1 else ''} ago: {listing}"


def conservative(table: Table, ladder: LadderRow) -> np.ndarray:
    """Elo-equivalent strength minus two standard errors: what a player has shown at least."""
    return table.derived("conservative", lambda: rating.conservative(hodge(table), _strength_se(table, ladder)))


def row_of(table: Table, ladder: LadderRow, key: str) -> int:
    """The table row of the player ``key`` names (case-folded, through the aliases, as the ladder matches)."""
    row = table.row(ladder.player_key(key))
    if row is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    return row


def record_fields(table: Table, ladder: LadderRow, n: int, se: float) -> dict:
    """What a profile and a leaderboard row both show of player ``n``: name, Elo and its standard error ``se``
    (logits), W/D/L, flags."""
    games, wins, draws, losses, _ = table.counts[n].tolist()
    return {
        "name": table.names[n],
        "elo": float(rating.elo_equivalent(hodge(table)[n])),
        "strength_se": float(se * rating.ELO_PER_LOGIT),
        "conservative": float(rating.conservative(hodge(table)[n], se)),
        "change_since_last_game": _moved(table, n),
        "games": games,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "provisional": bool(provisional(table, ladder.k)[n]),
        "provisional_reason": _provisional_reason(table, ladder.k, n),
        "results_to_rank": max(0, ELO_RESULTS - int(table.counts[n, 4])),
        "last_played_at": iso(storage.codec.moment(table.last_played[n])),
        "active": bool(table.active[n]),
        "inactive_reason": _inactive_reason(table, ladder, n),
    }
