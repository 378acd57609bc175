"""Ladders: creation, lookup, the ladder's rating matrix, and the audit replay."""

from __future__ import annotations

import secrets

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import rating
from app.errors import Conflict, InvalidInput, NotFound
from app.ladders.schemas import AuditOut, LadderCreate, LadderCreated, LadderOut
from app.models import Game, Ladder, Player, unpack
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


def ladder_out(session: Session, ladder: Ladder) -> LadderOut:
    players = session.scalar(select(func.count()).select_from(Player).where(Player.ladder_id == ladder.id))
    games = session.scalar(select(func.count()).select_from(Game).where(Game.ladder_id == ladder.id))
    fields = {c: getattr(ladder, c) for c in LadderOut.model_fields if c not in ("players", "games")}
    return LadderOut(**fields, players=players or 0, games=games or 0)


def initial_vector(ladder: Ladder, key: str) -> np.ndarray:
    return rating.initial_vectors([key], ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)[0]


def audit(session: Session, ladder: Ladder) -> AuditOut:
    """Replay the whole event log from the initial vectors and compare with the stored ratings (SPEC §9, §13)."""
    rows = session.execute(
        select(Player.key, Player.initial, Player.vector).where(Player.ladder_id == ladder.id).order_by(Player.id)
    ).all()
    index = {row.key: i for i, row in enumerate(rows)}
    dim = 2 * ladder.k
    initial = np.array([unpack(r.initial) for r in rows]).reshape(len(rows), dim)
    stored = np.array([unpack(r.vector) for r in rows]).reshape(len(rows), dim)
    payloads = session.scalars(select(Game.payload).where(Game.ladder_id == ladder.id).order_by(Game.id)).all()
    games = [
        rating.Game(tuple(tuple(index[k] for k in side) for side in p["sides"]), p["ranks"], p["advantages"])
        for p in payloads
    ]
    replayed = rating.replay(initial, games, ladder.eta) if len(rows) else initial
    diff = float(np.abs(replayed - stored).max()) if len(rows) else 0.0
    return AuditOut(
        consistent=bool(np.array_equal(replayed, stored)), games=len(games), players=len(rows), max_abs_diff=diff
    )
