"""Players: creation, profiles, leaderboards, history and matchmaking (mathematics §7, §8).

Everything that ranks players reads the ladder's player table through
:func:`app.storage.read_model.current_table`, a per-process copy kept until the ladder's
version moves; the strengths and orders derived from it are computed once
per version.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.cursors import decode_cursor, encode_cursor, is_id
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.schemas import iso
from app.domain.replays import replay_from, replay_log
from app.players.schemas import PlayerCreate, PlayerPatch
from app.rating.analysis import canonical
from app.rating.identifiability import Results, comparing_opponents
from app.rating.leaderboard import STRENGTH_PRIOR_PRECISION
from app.rating.model import omega_apply
from app.storage.codec import NO_TIME
from app.storage.ladders import LadderRow
from app.storage.read_model import Table

#: The leaderboard orders (``by``).
ORDERS = ("hodge", "field", "disc", "conservative")


def create_player(session: Session, ladder: LadderRow, data: PlayerCreate) -> None:
    """Add the player (the caller reads the profile once this has committed: :func:`get_player`)."""
    if data.vector is not None and len(data.vector) != 2 * ladder.k:
        raise InvalidInput(
            f"vector needs 2k = {2 * ladder.k} numbers",
            errors=[{"field": "vector", "message": f"expected {2 * ladder.k} numbers, got {len(data.vector)}"}],
        )
    key = storage.ladders.fold(data.key) if ladder.case_insensitive_keys else data.key
    name = data.name if data.name is not None or key == data.key else data.key  # the spelling folding changed
    if data.vector is not None:
        vector = np.asarray(data.vector, dtype=np.float64)
    else:
        vector = rating.initial_vectors([key], ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)[0]
    _not_an_alias(session, ladder, key, "key")
    if not storage.players.insert(session, ladder.id, key, name, vector):
        raise Conflict(f"Player {key!r} exists already.", errors=[{"field": "key", "message": "taken"}])
    storage.ladders.add_to_field(session, ladder, np.asarray(vector, dtype=np.float64)[None, :])
    storage.events.add(session, ladder.id, "player", {"action": "created", "key": key})
    storage.ladders.bump(session, [ladder.id])


def _table(session: Session, ladder: LadderRow) -> Table:
    return storage.read_model.current_table(session, ladder)


def _hodge(table: Table) -> np.ndarray:
    return table.derived("hodge", lambda: rating.hodge_strength(table.C))


#: The fewest results against others that place a rating on the Elo scale, whatever the ladder's k.
ELO_RESULTS = 3


def _provisional(table: Table, k: int) -> np.ndarray:
    """Every player's flag: not yet placed against the others (mathematics §10).

    Fewer than :data:`ELO_RESULTS` results against others (checked on every
    read), or outside the connected field of the latest applied refit.  A
    player placed on the Elo scale whose cyclic coordinates are not pinned down
    yet (fewer than 2k+1 results, or not comparable in that refit) is
    established, and :func:`_provisional_reason` says what their place rests on.
    """

    def compute() -> np.ndarray:
        return (table.counts[:, 4] < ELO_RESULTS) | table.placement.is_outside(table.ids)

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
    return round(float((_hodge(table)[n] - then) * rating.ELO_PER_LOGIT), 6) + 0.0


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
    known = table.experience if rows is None else table.experience[rows]
    drift = ladder.drift / rating.ELO_PER_LOGIT
    idle_years = _idle(table, rows) / YEAR
    field = table.derived("field prior", lambda: _field_prior(table, ladder))
    return rating.strength_se(table.C, known, ladder.learning_rate(), rows, idle_years, drift, field)


def _field_prior(table: Table, ladder: LadderRow) -> tuple[float, float, float]:
    """The field's prior and early lag from every player's record: games, and points (a win 1, a draw ½)
    (mathematics §8), once per version of the ladder."""
    points = table.counts[:, 1] + 0.5 * table.counts[:, 2]
    return rating.field_prior(table.C, table.counts[:, 0], points, ladder.learning_rate())


def _strength_se(table: Table, ladder: LadderRow) -> np.ndarray:
    """Standard error of every Hodge strength, in logits, grown by the time since each player's last game
    (mathematics §8)."""
    return table.derived("se", lambda: _se(table, ladder))


def _page_se(table: Table, ladder: LadderRow, rows: np.ndarray) -> np.ndarray:
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


def _listed(table: Table, ladder: LadderRow) -> np.ndarray:
    """Whether each player is on the default leaderboard (and suggested as an opponent): active, and not away
    longer than the ladder's ``inactive_after_days``."""
    return table.derived(("listed", ladder.inactive_after_days), lambda: table.active & ~_idle_out(table, ladder))


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


def _conservative(table: Table, ladder: LadderRow) -> np.ndarray:
    """Elo-equivalent strength minus two standard errors: what a player has shown at least."""
    return table.derived("conservative", lambda: rating.conservative(_hodge(table), _strength_se(table, ladder)))


def _not_an_alias(session: Session, ladder: LadderRow, key: str, field: str, player_id: int | None = None) -> None:
    """409 if ``key`` leads to another player than ``player_id`` already (read in the caller's transaction)."""
    of = storage.aliases.find(session, ladder.id, [key]).get(key)
    if of is not None and (player_id is None or storage.players.get_row(session, ladder.id, of)[0] != player_id):
        message = f"{key!r} is an alias of player {of!r}"
        raise Conflict(f"{field}: {message}.", errors=[{"field": field, "message": message}])


def _row(table: Table, ladder: LadderRow, key: str) -> int:
    """The table row of the player ``key`` names (case-folded, through the aliases, as the ladder matches)."""
    row = table.row(ladder.player_key(key))
    if row is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    return row


def get_player(session: Session, ladder: LadderRow, key: str, as_of: datetime | None = None) -> dict:
    """A player's profile with the ladder version it was read at; ``as_of``: as they stood then."""
    table = _table(session, ladder) if as_of is None else past_table(session, ladder, as_of)
    if as_of is not None and table.row(ladder.player_key(key)) is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r} before {iso(as_of)}.")
    return profile(table, ladder, key) | {"ladder_version": table.version}


def past_table(session: Session, ladder: LadderRow, moment: datetime) -> Table:
    """The players as they stood after the last game of the log played before ``moment`` (mathematics §8): those
    who had played by then or were created before it, none before the first game, today's table after the newest.
    One pass over the memberships up to that game (:mod:`app.storage.as_of`), in one snapshot."""
    now = _table(session, ladder)
    game = storage.as_of.last_game_before(session, ladder.id, moment)
    newest = game is not None and game == storage.as_of.last_game(session, ladder.id)
    return storage.as_of.table_after(session, ladder, now, game, moment, iso(moment), newest)


def profile(table: Table, ladder: LadderRow, key: str, aliases: list[str] | None = None) -> dict:
    """A player's vector, strength, record, provisional flag and aliases (``PlayerOut``); ``aliases`` as the
    ladder row holds them unless given."""
    n = _row(table, ladder, key)
    key = table.keys[n]
    if aliases is None:
        aliases = sorted(alias for alias, of in ladder.aliases.items() if of == key)
    return {
        "key": key,
        "aliases": aliases,
        **_record(table, ladder, n, _page_se(table, ladder, np.array([n]))[0]),
        "vector": table.C[n].tolist(),
        "strength": float(_hodge(table)[n]),
        "created_at": iso(storage.codec.moment(table.created[n])),
        "ladder_clock": iso(storage.codec.moment(clock(table))),
    }


def _record(table: Table, ladder: LadderRow, n: int, se: float) -> dict:
    """What a profile and a leaderboard row both show of player ``n``: name, Elo and its standard error ``se``
    (logits), W/D/L, flags."""
    games, wins, draws, losses, _ = table.counts[n].tolist()
    return {
        "name": table.names[n],
        "elo": float(rating.elo_equivalent(_hodge(table)[n])),
        "strength_se": float(se * rating.ELO_PER_LOGIT),
        "conservative": float(rating.conservative(_hodge(table)[n], se)),
        "change_since_last_game": _moved(table, n),
        "games": games,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "provisional": bool(_provisional(table, ladder.k)[n]),
        "provisional_reason": _provisional_reason(table, ladder.k, n),
        "last_played_at": iso(storage.codec.moment(table.last_played[n])),
        "active": bool(table.active[n]),
        "inactive_reason": _inactive_reason(table, ladder, n),
    }


def change_player(session: Session, ladder: LadderRow, key: str, patch: PlayerPatch) -> str:
    """Rename the player, change their key (the old one becomes an alias) or whether they are active; the key
    they have now (the caller then reads the profile)."""
    values = patch.model_dump(exclude_unset=True)
    for name in ("active", "key"):
        if name in values and values[name] is None:
            message = "must be true or false" if name == "active" else "must be a player key"
            raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}])
    key = ladder.player_key(key)
    new_key = values.pop("key", key)
    if values and not storage.players.change(session, ladder.id, key, values):
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    if not values and storage.players.get_row(session, ladder.id, key) is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    if ladder.case_insensitive_keys:
        new_key = storage.ladders.fold(new_key)
    if new_key != key:
        _rekey(session, ladder, key, new_key)
    change = {"action": "updated", "key": new_key} | ({"was": key} if new_key != key else {})
    storage.events.add(session, ladder.id, "player", change)
    storage.ladders.bump(session, [ladder.id], reset=new_key != key)  # every worker reads the aliases anew
    return new_key


def _rekey(session: Session, ladder: LadderRow, key: str, new_key: str) -> None:
    """The player ``key`` becomes ``new_key`` in the players, the log and the aliases; ``key`` becomes an alias
    (an alias ``new_key`` of theirs stops being one).  409 if another player has ``new_key``, or it leads to one."""
    storage.players.lock_all(session, ladder.id)  # no game commits while the log is rewritten
    row = storage.players.get_row(session, ladder.id, key)
    if row is None:  # merged or erased meanwhile
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    player_id = row[0]
    if storage.players.get_row(session, ladder.id, new_key) is not None:
        message = f"player {new_key!r} exists already"
        raise Conflict(f"key: {message}.", errors=[{"field": "key", "message": message}])
    _not_an_alias(session, ladder, new_key, "key", player_id)
    storage.aliases.remove(session, ladder.id, [new_key])
    games = storage.games.of_player_all(session, ladder.id, player_id)
    storage.games.rename_player(session, ladder.id, games, key, new_key)
    storage.players.rekey(session, ladder.id, player_id, new_key)
    storage.aliases.add(session, ladder.id, [key], player_id)


def merge_players(session: Session, ladder: LadderRow, key: str, into: str) -> dict:
    """Every game of ``key`` becomes a game of ``into``, and ``key`` is gone; the games it reaches are
    replayed exactly from its first game on, as for a void (they equal those of a ladder that had
    received these games with ``into``)."""
    key, into = ladder.player_key(key), ladder.player_key(into)
    if key == into:
        raise InvalidInput("into: a player cannot be merged into itself.", field="into")
    source = storage.players.get_row(session, ladder.id, key)
    if source is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    target = storage.players.get_row(session, ladder.id, into)
    if target is None:
        raise InvalidInput(
            f"into: there is no player {into!r}", errors=[{"field": "into", "message": "unknown player"}]
        )
    storage.players.lock_all(session, ladder.id)
    games = storage.games.of_player_all(session, ladder.id, source[0])
    shared = {g for g, _, _ in storage.games.of_player_all(session, ladder.id, target[0])} & {g for g, _, _ in games}
    if shared:
        first = min(shared)
        raise Conflict(
            f"{key!r} and {into!r} both played in game {first}: they cannot be one player.", field="into", game=first
        )
    storage.games.rename_player(session, ladder.id, games, key, into)
    storage.games.move_memberships(session, ladder.id, source[0], target[0])
    storage.aliases.move(session, ladder.id, source[0], target[0])  # the merged player's aliases, and its key, lead on
    storage.aliases.add(session, ladder.id, [key], target[0])
    storage.players.merge_counters(session, ladder.id, source[0], target[0])
    counting = [g for g, _, voided in games if not voided]
    storage.seasons.mark_changed(session, ladder.id, counting, datetime.now(UTC))  # their archives stay as they were
    if counting:
        if storage.refits.supersede_checkpoints(session, ladder.id, counting[0]):
            replay_log(session, ladder)  # players the tail does not reach held that checkpoint's vectors
        else:
            replay_from(session, ladder, counting[0], [into])
    storage.events.add(session, ladder.id, "player", {"action": "merged", "key": key, "into": into})
    storage.ladders.bump(session, [ladder.id], reset=True)  # the merged player's row is gone, an alias is new
    aliases = storage.aliases.of_players(session, ladder.id, [target[0]]).get(target[0], [])
    return profile(storage.read_model.current_table(session, ladder, cached=False), ladder, into, aliases)


def erase_player(session: Session, ladder: LadderRow, key: str) -> str:
    """Erase the person: their name is removed and their key replaced by an opaque pseudonym, in the players,
    the log and the stored responses, and their aliases forgotten; the games and everyone's ratings stay.  The
    pseudonym."""
    key = ladder.player_key(key)
    row = storage.players.get_row(session, ladder.id, key)
    if row is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    pseudonym = "erased-" + secrets.token_hex(8)
    storage.players.lock_all(session, ladder.id)
    storage.games.rename_player(
        session, ladder.id, storage.games.of_player_all(session, ladder.id, row[0]), key, pseudonym
    )
    former = storage.aliases.of_players(session, ladder.id, [row[0]]).get(row[0], [])
    for old in [key, *former]:  # responses recorded under a former key name the person too
        storage.idempotency.scrub_responses(session, ladder.id, old, pseudonym)
    storage.players.erase(session, ladder.id, row[0], pseudonym)
    had_aliases = bool(former)
    storage.aliases.drop(session, ladder.id, row[0])
    storage.events.scrub(session, ladder.id, [key, *former], pseudonym)
    storage.seasons.scrub(session, ladder.id, [key, *former], pseudonym)
    storage.events.add(session, ladder.id, "player", {"action": "erased", "key": pseudonym})
    storage.ladders.bump(session, [ladder.id], reset=had_aliases)
    return pseudonym


def _disc_strength(C: np.ndarray) -> np.ndarray:
    """ũ = u/v of the dominant disc, or a 409 saying why there is none (mathematics §8)."""
    form = canonical(C)
    if not form.blocks or not form.blocks[0].transitive:
        share = form.blocks[0].share if form.blocks else 0.0
        raise Conflict(
            "The dominant disc of this ladder is cyclic "
            f"({share:.0%} of ‖A‖²): its players form a cycle, so no disc ordering exists. Use by=hodge or by=field.",
            field="by",
        )
    return form.disc_strength()


class Ranking(NamedTuple):
    """One leaderboard order over every player: sorted by (group, -score, key), ``order`` the rows listed."""

    score: np.ndarray
    group: np.ndarray  # 0, or 1 for the provisional players below the others (by=conservative)
    order: np.ndarray


def _ranking(table: Table, ladder: LadderRow, by: str, inactive: bool) -> Ranking:
    """One leaderboard order, computed once per table.

    The scores are over every player (inactive ones are still part of the field); the order leaves the
    inactive ones out unless ``inactive``.  ``by=conservative`` lists the established players first and the
    provisional ones below, each group by conservative strength.
    """

    def compute() -> Ranking:
        score, group = _scores(table, ladder, by)
        order = np.lexsort((table.key_rank(), -score, group))
        if not inactive:
            order = order[_listed(table, ladder)[order]]
        return Ranking(score, group, order)

    return table.derived(("ranking", by, inactive), compute)


def _scores(table: Table, ladder: LadderRow, by: str) -> tuple[np.ndarray, np.ndarray]:
    """Every player's score in the order ``by`` and their group (0, or 1 for the provisional players listed
    below the others by=conservative), once per table."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        group = np.zeros(len(table.keys), dtype=np.int64)
        if by == "disc":
            return _disc_strength(table.C), group
        if by == "field":
            return rating.field_score(table.C), group
        if by == "conservative":
            return _conservative(table, ladder), _provisional(table, ladder.k).astype(np.int64)
        return _hodge(table), group

    return table.derived(("scores", by), compute)


def standings(table: Table, ladder: LadderRow, counts: np.ndarray) -> list[tuple]:
    """A season's final standings: the players with games in ``counts`` (their records in the season, COUNTERS
    by row), in the conservative order (established players first, each group by conservative strength, ties
    by key), as rows of (rank, key, name, elo, strength_se in Elo points, conservative, provisional, games, wins,
    draws, losses).  Standard errors for these players only, the same numbers the leaderboard shows."""
    rows = np.flatnonzero(counts[:, 0] > 0)
    se = _page_se(table, ladder, rows)
    score = rating.conservative(_hodge(table)[rows], se)
    group = _provisional(table, ladder.k)[rows]
    order = np.lexsort((table.key_rank()[rows], -score, group))
    elo = rating.elo_equivalent(_hodge(table)[rows])
    se_elo = se * rating.ELO_PER_LOGIT
    out = []
    for rank, n in enumerate(order.tolist(), start=1):
        i = rows[n]
        record = counts[i, :4].tolist()
        out.append(
            (
                rank,
                table.keys[i],
                table.names[i],
                float(elo[n]),
                float(se_elo[n]),
                float(score[n]),
                bool(group[n]),
                *record,
            )
        )
    return out


def _first_page(table: Table, ladder: LadderRow, by: str, limit: int, inactive: bool) -> _Page:
    """The first page of an order without sorting everyone: the rows at or above the ``limit``-th (group, score)
    by one linear selection, then those few sorted.

    ``by=conservative`` does not compute every player's standard error (a
    sample of the field per player): each player's conservative strength is
    at most the one a perfectly informative record would give
    (:func:`_conservative_bound`), so the exact values of the players with the
    highest bounds settle the page once the ``limit``-th of them is above
    every bound left out.
    """
    if inactive:
        listed = np.arange(len(table.keys))
    else:
        mask = _listed(table, ladder)
        listed = table.derived(("listed rows", ladder.inactive_after_days), lambda: np.flatnonzero(mask))
    if by != "conservative":
        score, group = _scores(table, ladder, by)
        rows = _top(score, listed, limit)
        page = _sorted(table, rows, score[rows], group[rows])[:limit]
        return _Page(page, score[page], group[page], len(listed) > limit)
    group = _provisional(table, ladder.k)
    rows, values = [], []
    for g in (0, 1):  # the established players first, then the provisional ones
        members = listed[group[listed] == g]
        found, exact = _top_conservative(table, ladder, members, limit - sum(map(len, rows)))
        rows.append(found)
        values.append(exact)
    chosen, score = np.concatenate(rows), np.concatenate(values)
    order = np.lexsort((table.key_rank()[chosen], -score, group[chosen]))[:limit]
    return _Page(chosen[order], score[order], group[chosen[order]], len(listed) > limit)


class _Page(NamedTuple):
    rows: np.ndarray
    score: np.ndarray  # of each row, in the order asked for
    group: np.ndarray
    more: bool  # whether players follow


def _top(score: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """The ``rows`` whose scores are at or above the ``count``-th highest among them (ties included)."""
    if len(rows) <= count:
        return rows
    values = score[rows]
    threshold = -np.partition(-values, count - 1)[count - 1]
    return rows[values >= threshold]


def _sorted(table: Table, rows: np.ndarray, score: np.ndarray, group: np.ndarray) -> np.ndarray:
    return rows[np.lexsort((table.key_rank()[rows], -score, group))]


def _conservative_bound(table: Table) -> np.ndarray:
    """An upper bound of every conservative strength: the standard error can be no smaller than with every game
    as informative as a game can be (σ(1 - σ) ≤ 1/4) and no wandering of the online rule."""

    def compute() -> np.ndarray:
        floor = np.sqrt(1.0 / (STRENGTH_PRIOR_PRECISION + table.experience / 4.0))
        return rating.conservative(_hodge(table), floor)

    return table.derived("conservative bound", compute)


def _top_conservative(table: Table, ladder: LadderRow, rows: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``rows`` at or above the ``count``-th highest conservative strength among them, with their exact
    conservative strengths, computing those for a few more rows than the answer needs."""
    if count <= 0 or len(rows) == 0:
        return rows[:0], np.zeros(0)
    bound = _conservative_bound(table)[rows]
    take = min(len(rows), 2 * count + 64)
    while True:
        if take < len(rows):
            split = np.argpartition(-bound, take - 1)
            candidates, rest = rows[split[:take]], float(bound[split[take:]].max())
        else:
            candidates, rest = rows, -np.inf
        exact = rating.conservative(_hodge(table)[candidates], _page_se(table, ladder, candidates))
        threshold = -np.partition(-exact, min(count, len(exact)) - 1)[min(count, len(exact)) - 1]
        if threshold > rest:  # everyone left out is below the threshold
            keep = exact >= threshold
            return candidates[keep], exact[keep]
        take = min(len(rows), 4 * take)


def leaderboard(table: Table, ladder: LadderRow, by: str, limit: int, cursor: str | None, inactive: bool) -> bytes:
    """Players ordered by an invariant of A (mathematics §8), keyset-paginated on (score, key), as a JSON body.

    The first page of each order and size is rendered once per table (it is
    what nearly every request asks for).
    """

    def render() -> bytes:
        return json.dumps(_leaderboard(table, ladder, by, limit, cursor, inactive)).encode()

    return render() if cursor is not None else table.derived(("page", by, limit, inactive), render)


#: Results a leaderboard's ``form`` shows, and their letters.
FORM_GAMES = 5
LETTERS = {1: "W", 0: "D", -1: "L"}


def with_form(session: Session, ladder: LadderRow, table: Table, body: bytes) -> bytes:
    """A leaderboard page (a JSON body) of the ladder with each player's ``form``: their last results, newest
    first."""
    page = json.loads(body)
    ids = [int(table.ids[table.row(item["key"])]) for item in page["items"]]
    recent = storage.games.recent_results(session, ladder.id, ids, FORM_GAMES)
    for item, player_id in zip(page["items"], ids, strict=True):
        games = np.array(recent[player_id], dtype=np.float64).reshape(-1, 2)
        item["form"] = [LETTERS[r] for r in rating.results(games[:, 0], games[:, 1]).tolist()]
    return json.dumps(page).encode()


def rendered_page(table: Table, by: str, limit: int, cursor: str | None, inactive: bool) -> bytes | None:
    """The first page if it is rendered already (no work to do), else None."""
    return table.memo.get(("page", by, limit, inactive)) if cursor is None else None


def _leaderboard(table: Table, ladder: LadderRow, by: str, limit: int, cursor: str | None, inactive: bool) -> dict:
    if cursor is None:
        return _page(table, ladder, by, inactive, _first_page(table, ladder, by, limit, inactive), 0)
    ranking = _ranking(table, ladder, by, inactive)
    order = ranking.order
    start = 0
    if cursor is not None:
        last_group, last_score, last_key = _leaderboard_position(cursor, by, inactive, table.as_of)
        g, s, keys = ranking.group[order], ranking.score[order], table.keys[order].astype(str)
        same = (g == last_group) & ((s > last_score) | ((s == last_score) & (keys <= last_key)))
        start = int(np.count_nonzero((g < last_group) | same))
    rows = order[start : start + limit]
    page = _Page(rows, ranking.score[rows], ranking.group[rows], start + limit < len(order))
    return _page(table, ladder, by, inactive, page, start)


def _page(table: Table, ladder: LadderRow, by: str, inactive: bool, page: _Page, start: int) -> dict:
    items = []
    errors = _page_se(table, ladder, page.rows)
    rows = zip(page.rows.tolist(), errors.tolist(), page.score.tolist(), strict=True)
    for rank, (i, se, score) in enumerate(rows, start=start + 1):
        items.append({"rank": rank, "key": table.keys[i], **_record(table, ladder, i, se), "strength": score})
    next_cursor = None
    if page.more and len(page.rows):
        last = len(page.rows) - 1
        after = [int(page.group[last]), page.score[last].item(), str(table.keys[page.rows[last]])]
        listing = {"by": by, "inactive": inactive} | ({"as_of": table.as_of} if table.as_of else {})
        next_cursor = encode_cursor(listing | {"after": after})
    clock_now = iso(storage.codec.moment(clock(table)))
    return {"items": items, "next_cursor": next_cursor, "ladder_version": table.version, "ladder_clock": clock_now}


def _listing(by: str, inactive: bool, as_of: str | None) -> str:
    return f"by={by}&inactive={str(inactive).lower()}" + (f"&as_of={as_of}" if as_of else "")


def _leaderboard_position(cursor: str, by: str, inactive: bool, as_of: str | None) -> tuple[int, float, str]:
    """(group, score, key) of the last row of the page a leaderboard cursor came after.

    A cursor names the listing it was made for (the order ``by``, ``inactive`` and ``as_of``): its score is that
    listing's, so it cannot place a row in another (an empty or a shifted page); there it is a 422 naming
    ``cursor``.
    """
    value = decode_cursor(cursor, _valid_cursor)
    if (value["by"], value["inactive"], value.get("as_of")) != (by, inactive, as_of):
        made, asked = _listing(value["by"], value["inactive"], value.get("as_of")), _listing(by, inactive, as_of)
        message = f"made for {made}, not {asked}: a cursor continues only its own listing; start again without one"
        raise InvalidInput(f"cursor: {message}", errors=[{"field": "cursor", "message": message}])
    group, score, key = value["after"]
    return group, score, key


def _valid_cursor(v: Any) -> bool:
    """{"by": order, "inactive": bool, "after": [group, score, key]} (and "as_of": a time), the group 0 or
    (by=conservative) 1."""

    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool) and abs(x) < 1e300

    if not (isinstance(v, dict) and set(v) - {"as_of"} == {"by", "inactive", "after"}):
        return False
    if not isinstance(v.get("as_of", ""), str):
        return False
    by, inactive, after = v["by"], v["inactive"], v["after"]
    return (
        by in ORDERS
        and isinstance(inactive, bool)
        and isinstance(after, list)
        and len(after) == 3
        and after[0] in ((0, 1) if by == "conservative" else (0,))
        and not isinstance(after[0], bool | float)
        and number(after[1])
        and isinstance(after[2], str)
    )


#: A result as the API names it (:func:`app.rating.results`).
RESULTS = {1: "win", 0: "draw", -1: "loss"}


def history(session: Session, ladder: LadderRow, key: str, limit: int, cursor: str | None) -> dict:
    """The player's games, newest first, with vectors and expected scores before and after."""
    table = _table(session, ladder)
    key = table.keys[_row(table, ladder, key)]
    before_id = None
    if cursor is not None:
        before_id = decode_cursor(cursor, is_id)
    records = storage.games.of_player(session, ladder.id, key, limit, before_id)
    field_mean = table.derived("mean", lambda: rating.field_mean(table.C))
    items = []
    for record in records:
        me = next(m for m in record.members if m.key == key)
        n_sides = max(m.side for m in record.members) + 1
        sides = [[i for i, m in enumerate(record.members) if m.side == s] for s in range(n_sides)]
        after = np.array([m.after for m in record.members])
        game = rating.Game(tuple(tuple(s) for s in sides), tuple(range(1, n_sides + 1)))
        _, expected_after = rating.predict_match(after, game)
        elo_before, elo_after = rating.elo_equivalent(
            rating.hodge_strength_against(np.array([me.before, me.after]), field_mean)
        ).tolist()
        result = RESULTS[int(rating.results(me.actual_score, n_sides))]
        items.append(
            {
                "game_id": record.seq,
                "seq": record.seq,
                "played_at": iso(record.played_at),
                "side": me.side,
                "opponents": [m.key for m in record.members if m.side != me.side],
                "partners": [m.key for m in record.members if m.side == me.side and m.key != key],
                "result": result,
                "before": me.before,
                "after": me.after,
                "actual_score": me.actual_score,
                "expected_score": me.expected_score,
                "expected_after": float(expected_after[me.side]),
                "elo_before": elo_before,
                "elo_after": elo_after,
                "elo_change": elo_after - elo_before,
            }
        )
    next_cursor = encode_cursor(records[-1].id) if len(records) == limit else None
    return {"items": items, "next_cursor": next_cursor}


#: Opponents are suggested from the best this many (later pages of the list end there).
MAX_OPPONENTS = 1000


def opponents_page(session: Session, ladder: LadderRow, key: str, limit: int, offset: int, purpose: str) -> dict:
    """The page of :func:`opponents` after the first ``offset`` (a page's cursor is where the next starts)."""
    end = min(offset + limit, MAX_OPPONENTS)
    found = opponents(session, ladder, key, end + 1, purpose)
    more = len(found) > end and end < MAX_OPPONENTS
    return {"items": found[offset:end], "next_cursor": str(end) if more else None}


def opponents(session: Session, ladder: LadderRow, key: str, limit: int, purpose: str = "balanced") -> list[dict]:
    """The players against whom ``key`` has the most even chances (mathematics §7), or, for ``purpose="comparable"``,
    those whose games would best make a player who is not yet comparable comparable (mathematics §10)."""
    table = _table(session, ladder)
    i = _row(table, ladder, key)
    if purpose == "comparable":
        found = _comparing(session, ladder, table, _listed(table, ladder), i, limit)
        if found is not None:
            return found
    listed = _listed(table, ladder)  # inactive players are not suggested
    active = table.derived(("listed rows", ladder.inactive_after_days), lambda: np.flatnonzero(listed))
    best = rating.balanced_opponents(table.C, i, limit=limit, candidates=active) if len(table.keys) > 1 else []
    probs = rating.pair_probability(table.C, np.full(len(best), i), np.asarray(best, dtype=int))
    return [
        {"key": table.keys[j], "name": table.names[j], "probability": float(p), "gain": None}
        for j, p in zip(np.asarray(best, dtype=int).tolist(), probs.tolist(), strict=True)
    ]


def _comparing(
    session: Session, ladder: LadderRow, table: Table, listed: np.ndarray, i: int, limit: int
) -> list[dict] | None:
    """Opponents along the witness direction of player ``i``'s results; None if they are comparable already."""
    played = storage.games.of_player_all(session, ladder.id, int(table.ids[i]))
    games = [payload for _, payload, voided in played if not voided]
    W = np.zeros((table.C.shape[1], 0))
    if games:
        log = storage.log.encode(games, {key: n for n, key in enumerate(table.keys.tolist())}, ladder.seat_index())
        W = Results.of(log).directions(omega_apply(table.C), i)
    found = comparing_opponents(table.C, i, W, limit, among=listed)
    if found is None:
        return None
    best, gain = found
    probs = rating.pair_probability(table.C, np.full(len(best), i), best)
    return [
        {"key": table.keys[j], "name": table.names[j], "probability": float(p), "gain": float(g)}
        for j, p, g in zip(best.tolist(), probs.tolist(), gain.tolist(), strict=True)
    ]
