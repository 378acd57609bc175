"""The event log read back for replays, audits and refits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app import rating
from app.models import Game, Participant
from app.storage import codec, refits
from app.storage.ladders import LadderRow
from app.storage.sql import driver_fetchall


def encode(payloads: Sequence[dict], index: dict[str, int]) -> rating.GameLog:
    """Stored game payloads (sides of player keys, ranks, advantages) as a GameLog; ``index`` maps key → row."""
    if all(len(p["sides"]) == 2 and len(p["sides"][0]) == len(p["sides"][1]) == 1 for p in payloads):
        # Two single players per game, the common case: encoded without a Python object per game.
        i = np.array([index[p["sides"][0][0]] for p in payloads], dtype=np.int64)
        j = np.array([index[p["sides"][1][0]] for p in payloads], dtype=np.int64)
        ranks = np.array([p["ranks"] for p in payloads], dtype=np.float64).reshape(-1, 2)
        outcome = np.where(ranks[:, 0] < ranks[:, 1], 1.0, np.where(ranks[:, 0] == ranks[:, 1], 0.5, 0.0))
        h = np.array([p["advantages"] or (0.0, 0.0) for p in payloads], dtype=np.float64).reshape(-1, 2)
        return rating.GameLog.from_pairs(i, j, outcome, h[:, 0] - h[:, 1])
    encoded = [
        rating.Game(tuple(tuple(index[k] for k in side) for side in p["sides"]), p["ranks"], p["advantages"])
        for p in payloads
    ]
    return rating.GameLog.from_games(encoded)


@dataclass
class LadderLog:
    """A ladder's players (id order) and event log, ready for replay or a refit.

    ``start`` are the vectors the log replays from: the latest checkpoint's (for
    players it holds) and the initial vectors otherwise, or all initial vectors
    when read ``from_start``; ``start_games`` the games each player had played by
    then; ``log`` holds the games after that point, in order (``game_ids``);
    ``stored`` the current vectors.  Voided games are left out everywhere.
    """

    player_ids: np.ndarray
    keys: list[str]
    start: np.ndarray
    start_games: np.ndarray
    stored: np.ndarray
    log: rating.GameLog
    game_ids: np.ndarray
    after_game_id: int
    last_game_id: int
    games: int


def read(session: Session, ladder: LadderRow, from_start: bool = False) -> LadderLog:
    """Players and log from the latest checkpoint (or from the initial vectors)."""
    rows = driver_fetchall(
        session.connection(),
        "SELECT id, key, initial, vector FROM players WHERE ladder_id = ? ORDER BY id",
        (ladder.id,),
    )
    dim = 2 * ladder.k
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    keys = [r[1] for r in rows]
    start, after = codec.unpack_rows((r[2] for r in rows), dim), 0
    start_games = np.zeros(len(ids))
    checkpoint = None if from_start else refits.latest_checkpoint(session, ladder.id)
    if checkpoint is not None:
        held = codec.unpack_ids(checkpoint.player_ids)
        start[np.searchsorted(ids, held)] = codec.unpack_rows([checkpoint.vectors], dim)
        after = checkpoint.after_game_id
        counts = session.execute(
            select(Participant.player_id, func.count())
            .join(Game, Game.id == Participant.game_id)
            .where(Game.ladder_id == ladder.id, Game.id <= after, Game.voided_at.is_(None))
            .group_by(Participant.player_id)
        ).all()
        for player_id, n in counts:
            start_games[np.searchsorted(ids, player_id)] = n
    counted = (Game.ladder_id == ladder.id, Game.voided_at.is_(None))
    logged = session.execute(select(Game.id, Game.payload).where(*counted, Game.id > after).order_by(Game.id)).all()
    last, games = session.execute(select(func.max(Game.id), func.count()).select_from(Game).where(*counted)).one()
    index = {key: n for n, key in enumerate(keys)}
    stored = codec.unpack_rows((r[3] for r in rows), dim)
    log = encode([row[1] for row in logged], index)
    game_ids = np.array([row[0] for row in logged], dtype=np.int64)
    return LadderLog(ids, keys, start, start_games, stored, log, game_ids, after, last or 0, games)
