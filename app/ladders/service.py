"""Ladders: creation, their configuration and size, and the audit replay."""

from __future__ import annotations

import secrets

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.errors import Conflict, InvalidInput
from app.ladders.schemas import DEFAULT_INIT_V0, AuditOut, LadderCreate, LadderCreated, LadderOut
from app.security import hash_key, new_key
from app.storage.ladders import LadderRow


def create_ladder(session: Session, data: LadderCreate) -> LadderCreated:
    if data.init_offset is not None and len(data.init_offset) != 2 * data.k:
        raise InvalidInput(
            f"init_offset needs {2 * data.k} numbers for k = {data.k}",
            errors=[{"field": "init_offset", "message": f"expected {2 * data.k} numbers"}],
        )
    key = new_key()
    if data.init_offset is None:
        data = data.model_copy(update={"init_offset": [0.0, DEFAULT_INIT_V0] + [0.0] * (2 * data.k - 2)})
    values = data.model_dump(exclude={"seed"}) | {
        "seed": data.seed if data.seed is not None else secrets.randbits(62),
        "write_key_hash": hash_key(key),
    }
    ladder = storage.ladders.insert(session, values)
    if ladder is None:
        raise Conflict(f"A ladder {data.slug!r} exists already.")
    return LadderCreated(**ladder_out(session, ladder).model_dump(), write_key=key)


def list_ladders(session: Session) -> list[LadderOut]:
    return [ladder_out(session, ladder) for ladder in storage.ladders.all_ladders(session)]


def ladder_out(session: Session, ladder: LadderRow) -> LadderOut:
    players, games = storage.ladders.sizes(session, ladder.id)
    fields = {c: getattr(ladder, c) for c in LadderOut.model_fields if c not in ("players", "games")}
    return LadderOut(**fields, players=players, games=games)


def audit(session: Session, ladder: LadderRow) -> AuditOut:
    """Replay the event log from the latest checkpoint (or the initial vectors) and compare (SPEC §9, §13)."""
    state = storage.log.read(session, ladder)
    rate = rating.LearningRate(ladder.eta, ladder.eta_tau)
    replayed = rating.replay(state.start, state.log, rate, games0=state.start_games) if len(state.keys) else state.start
    diff = float(np.abs(replayed - state.stored).max()) if len(state.keys) else 0.0
    return AuditOut(
        consistent=bool(np.array_equal(replayed, state.stored)),
        games=state.games,
        players=len(state.keys),
        max_abs_diff=diff,
        replayed_games=state.log.n_games,
        checkpoint_after_game=state.after_game_id or None,
    )
