"""Ladders: creation, lookup, the ladder's rating matrix, and the audit replay."""

from __future__ import annotations

import secrets

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import rating
from app.errors import Conflict, InvalidInput, NotFound
from app.games.service import learning_rate, read_log
from app.ladders.schemas import DEFAULT_INIT_V0, AuditOut, LadderCreate, LadderCreated, LadderOut
from app.models import Game, Ladder, Player
from app.security import hash_key, new_key


def get_ladder(session: Session, slug: str) -> Ladder:
    ladder = session.scalar(select(Ladder).where(Ladder.slug == slug))
    if ladder is None:
        raise NotFound(f"There is no ladder {slug!r}.")
    return ladder


def create_ladder(session: Session, data: LadderCreate) -> LadderCreated:
    if data.init_offset is not None and len(data.init_offset) != 2 * data.k:
        raise InvalidInput(
            f"init_offset needs {2 * data.k} numbers for k = {data.k}",
            errors=[{"field": "init_offset", "message": f"expected {2 * data.k} numbers"}],
        )
    key = new_key()
    if data.init_offset is None:
        data = data.model_copy(update={"init_offset": [0.0, DEFAULT_INIT_V0] + [0.0] * (2 * data.k - 2)})
    ladder = Ladder(
        **data.model_dump(exclude={"seed"}),
        seed=data.seed if data.seed is not None else secrets.randbits(62),
        write_key_hash=hash_key(key),
    )
    session.add(ladder)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(f"A ladder {data.slug!r} exists already.") from exc
    return LadderCreated(**ladder_out(session, ladder).model_dump(), write_key=key)


def list_ladders(session: Session) -> list[LadderOut]:
    ladders = session.scalars(select(Ladder).order_by(Ladder.slug)).all()
    return [ladder_out(session, ladder) for ladder in ladders]


def ladder_out(session: Session, ladder: Ladder) -> LadderOut:
    players = session.scalar(select(func.count()).select_from(Player).where(Player.ladder_id == ladder.id))
    games = session.scalar(select(func.count()).select_from(Game).where(Game.ladder_id == ladder.id))
    fields = {c: getattr(ladder, c) for c in LadderOut.model_fields if c not in ("players", "games")}
    return LadderOut(**fields, players=players or 0, games=games or 0)


def initial_vector(ladder: Ladder, key: str) -> np.ndarray:
    return rating.initial_vectors([key], ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)[0]


def audit(session: Session, ladder: Ladder) -> AuditOut:
    """Replay the event log from the latest checkpoint (or the initial vectors) and compare (SPEC §9, §13)."""
    state = read_log(session, ladder)
    rate = learning_rate(ladder)
    replayed = rating.replay(state.start, state.log, rate, games0=state.start_games) if len(state.keys) else state.start
    diff = float(np.abs(replayed - state.stored).max()) if len(state.keys) else 0.0
    games = session.scalar(select(func.count()).select_from(Game).where(Game.ladder_id == ladder.id)) or 0
    return AuditOut(
        consistent=bool(np.array_equal(replayed, state.stored)),
        games=games,
        players=len(state.keys),
        max_abs_diff=diff,
        replayed_games=state.log.n_games,
        checkpoint_after_game=state.after_game_id or None,
    )
