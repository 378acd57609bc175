"""Players: creation, profiles, leaderboards, history and matchmaking (SPEC §7, §8)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import rating
from app.analysis.service import disc_strength, not_comparable_keys
from app.db import driver_fetchall
from app.errors import Conflict, InvalidInput, NotFound
from app.ladders.service import initial_vector
from app.models import Game, Ladder, Participant, Player, pack, unpack
from app.players.schemas import HistoryItem, LeaderboardItem, OpponentItem, PlayerCreate, PlayerOut
from app.schemas import Page


def is_provisional(player: Player, k: int, not_comparable: frozenset[str]) -> bool:
    """Not yet comparable to the others (SPEC §10).

    Fewer than 2k+1 pairwise results (the directions cannot span R^{2k}: a
    necessary condition checked on every read), or found not comparable by the
    latest finished refit's identifiability check.
    """
    return player.comparisons < 2 * k + 1 or player.key in not_comparable


def encode_cursor(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def decode_cursor(cursor: str, valid: Callable[[Any], bool]) -> Any:
    """The value of a cursor made by :func:`encode_cursor`; 422 if it is not one or ``valid`` rejects it."""
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise InvalidInput("cursor is not a cursor this API returned", errors=[{"field": "cursor"}])
    return value


def create_player(session: Session, ladder: Ladder, data: PlayerCreate) -> PlayerOut:
    if data.vector is not None and len(data.vector) != 2 * ladder.k:
        raise InvalidInput(
            f"vector needs 2k = {2 * ladder.k} numbers",
            errors=[{"field": "vector", "message": f"expected {2 * ladder.k} numbers, got {len(data.vector)}"}],
        )
    vector = np.asarray(data.vector) if data.vector is not None else initial_vector(ladder, data.key)
    player = Player(ladder_id=ladder.id, key=data.key, name=data.name, initial=pack(vector), vector=pack(vector))
    player.games = player.wins = player.draws = player.losses = player.comparisons = 0
    session.add(player)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(f"Player {data.key!r} exists already.") from exc
    return player_out(session, ladder, player)


def get_player(session: Session, ladder: Ladder, key: str) -> Player:
    player = session.scalar(select(Player).where(Player.ladder_id == ladder.id, Player.key == key))
    if player is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    return player


@dataclass
class Ratings:
    """A ladder's keys and rating matrix C (rows in player-id order): what every ranking needs.

    Only the keys and vectors are loaded; the rows shown on a page are read separately.
    """

    keys: np.ndarray
    C: np.ndarray

    @classmethod
    def load(cls, session: Session, ladder: Ladder) -> Ratings:
        sql = "SELECT key, vector FROM players WHERE ladder_id = ? ORDER BY id"
        rows = driver_fetchall(session.connection(), sql, (ladder.id,))
        blob = b"".join(row[1] for row in rows)
        C = np.frombuffer(blob, dtype="<f8").astype(np.float64).reshape(len(rows), 2 * ladder.k)
        return cls(np.array([row[0] for row in rows], dtype=object), C)

    def strength(self) -> np.ndarray:
        return rating.hodge_strength(self.C)

    def row(self, key: str) -> int:
        found = np.flatnonzero(self.keys == key)
        if len(found) == 0:
            raise NotFound(f"There is no player {key!r}.")
        return int(found[0])


def player_out(session: Session, ladder: Ladder, player: Player) -> PlayerOut:
    ratings = Ratings.load(session, ladder)
    strength = float(ratings.strength()[ratings.row(player.key)])
    return PlayerOut(
        key=player.key,
        name=player.name,
        vector=unpack(player.vector).tolist(),
        strength=strength,
        elo=float(rating.elo_equivalent(strength)),
        games=player.games,
        wins=player.wins,
        draws=player.draws,
        losses=player.losses,
        provisional=is_provisional(player, ladder.k, not_comparable_keys(session, ladder)),
        last_played_at=player.last_played_at,
        created_at=player.created_at,
    )


def leaderboard(session: Session, ladder: Ladder, by: str, limit: int, cursor: str | None) -> Page[LeaderboardItem]:
    """Players ordered by an invariant of A (SPEC §8), keyset-paginated on (score, key)."""
    ratings = Ratings.load(session, ladder)
    hodge = ratings.strength()
    if by == "disc":
        score = disc_strength(ratings.C)
    elif by == "field":
        score = rating.field_score(ratings.C)
    else:
        score = hodge
    flagged = not_comparable_keys(session, ladder)
    keys = ratings.keys.astype(str)
    order = np.lexsort((keys, -score))
    start = 0
    if cursor is not None:
        after = decode_cursor(cursor, lambda v: isinstance(v, list) and len(v) == 2)
        last_score, last_key = float(after[0]), str(after[1])
        s, k = score[order], keys[order]
        start = int(np.count_nonzero((s > last_score) | ((s == last_score) & (k <= last_key))))
    page = order[start : start + limit]
    details = {
        p.key: p
        for p in session.scalars(
            select(Player).where(Player.ladder_id == ladder.id, Player.key.in_(ratings.keys[page].tolist()))
        )
    }
    items = []
    for n, i in enumerate(page.tolist(), start=start + 1):
        p = details[ratings.keys[i]]
        items.append(
            LeaderboardItem(
                rank=n,
                key=p.key,
                name=p.name,
                strength=float(score[i]),
                elo=float(rating.elo_equivalent(hodge[i])),
                games=p.games,
                wins=p.wins,
                draws=p.draws,
                losses=p.losses,
                provisional=is_provisional(p, ladder.k, flagged),
                last_played_at=p.last_played_at,
            )
        )
    more = start + limit < len(order)
    next_cursor = encode_cursor([float(score[page[-1]]), str(keys[page[-1]])]) if more and len(page) else None
    return Page[LeaderboardItem](items=items, next_cursor=next_cursor)


def history(session: Session, ladder: Ladder, key: str, limit: int, cursor: str | None) -> Page[HistoryItem]:
    """The player's games, newest first, with vectors and expected scores before and after."""
    player = get_player(session, ladder, key)
    query = select(Participant).where(Participant.player_id == player.id)
    if cursor is not None:
        before_id = decode_cursor(cursor, lambda v: isinstance(v, int))
        query = query.where(Participant.game_id < before_id)
    mine = list(session.scalars(query.order_by(Participant.game_id.desc()).limit(limit)))
    game_ids = [m.game_id for m in mine]
    everyone = session.execute(
        select(Participant, Player.key, Game.played_at)
        .join(Player, Player.id == Participant.player_id)
        .join(Game, Game.id == Participant.game_id)
        .where(Participant.game_id.in_(game_ids))
        .order_by(Participant.game_id, Participant.side, Player.id)
    ).all()
    field_mean = Ratings.load(session, ladder).C.mean(axis=0)
    by_game: dict[int, list] = {}
    for row in everyone:
        by_game.setdefault(row.Participant.game_id, []).append(row)
    items = []
    for m in mine:
        rows = by_game[m.game_id]
        n_sides = max(r.Participant.side for r in rows) + 1
        sides = [[i for i, r in enumerate(rows) if r.Participant.side == s] for s in range(n_sides)]
        after = np.array([unpack(r.Participant.after) for r in rows])
        game = rating.Game(tuple(tuple(s) for s in sides), tuple(range(1, n_sides + 1)))
        _, expected_after = rating.predict_match(after, game)
        items.append(
            HistoryItem(
                game_id=m.game_id,
                seq=m.game_id,
                played_at=rows[0].played_at,
                side=m.side,
                opponents=[r.key for r in rows if r.Participant.side != m.side],
                before=unpack(m.before).tolist(),
                after=unpack(m.after).tolist(),
                actual_score=m.actual_score,
                expected_score=m.expected_score,
                expected_after=float(expected_after[m.side]),
                elo_after=float(rating.elo_equivalent(rating.hodge_strength_against(unpack(m.after), field_mean))),
            )
        )
    next_cursor = encode_cursor(game_ids[-1]) if len(mine) == limit else None
    return Page[HistoryItem](items=items, next_cursor=next_cursor)


def opponents(session: Session, ladder: Ladder, key: str, limit: int) -> list[OpponentItem]:
    """The players against whom ``key`` has the most even chances (SPEC §7)."""
    ratings = Ratings.load(session, ladder)
    i = ratings.row(key)
    best = rating.balanced_opponents(ratings.C, i, limit=limit) if len(ratings.keys) > 1 else []
    probs = rating.pair_probability(ratings.C, np.full(len(best), i), np.asarray(best, dtype=int))
    query = select(Player.key, Player.name).where(
        Player.ladder_id == ladder.id, Player.key.in_(ratings.keys[best].tolist())
    )
    names = {row.key: row.name for row in session.execute(query)}
    return [
        OpponentItem(key=ratings.keys[j], name=names[ratings.keys[j]], probability=float(p))
        for j, p in zip(best, probs, strict=True)
    ]
