"""Ladders: creation, settings, keys, their configuration and size, and the audit replay."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, refit_policy, storage
from app.access import Caller
from app.errors import Conflict, InvalidInput, NotFound
from app.ladders.schemas import (
    DEFAULT_INIT_V0,
    AuditOut,
    KeyCreate,
    KeyCreated,
    KeyOut,
    LadderCreate,
    LadderCreated,
    LadderDelete,
    LadderDeleted,
    LadderOut,
    LadderPatch,
    SeatOut,
)
from app.replays import replay_log
from app.security import hash_key, new_key
from app.storage.keys import KeyRow
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
    storage.keys.insert(session, ladder.id, "created with the ladder", "admin", hash_key(key))
    return LadderCreated(**ladder_out(session, ladder).model_dump(), admin_key=key, write_key=key)


def delete_ladder(session: Session, ladder: LadderRow, confirm: LadderDelete) -> LadderDeleted:
    """Delete the ladder and everything in it, in one transaction, if the body repeats its slug (422 otherwise)."""
    if confirm.slug != ladder.slug:
        raise InvalidInput(
            f"slug: repeat the ladder's slug {ladder.slug!r} to confirm deleting it",
            errors=[{"field": "slug", "message": f"must be {ladder.slug!r}, the ladder being deleted"}],
        )
    players, games = storage.ladders.counted_sizes(session, ladder.id, voided=True)
    storage.ladders.delete(session, ladder)
    return LadderDeleted(slug=ladder.slug, players=players, games=games)


def list_ladders(session: Session, caller: Caller) -> list[LadderOut]:
    """Every ladder, by slug; private ones only for the server admin key."""
    ladders = storage.ladders.all_ladders(session)
    return [ladder_out(session, ladder) for ladder in ladders if caller.server_admin or not ladder.private]


def ladder_out(session: Session, ladder: LadderRow) -> LadderOut:
    players, games = storage.ladders.sizes(session, ladder.id)
    own = ("players", "games", "seats", "auto_refit_note")
    fields = {c: getattr(ladder, c) for c in LadderOut.model_fields if c not in own}
    note, seats = refit_policy.note(session, ladder), _seats_out(session, ladder)
    return LadderOut(**fields, players=players, games=games, auto_refit_note=note, seats=seats)


def _seats_out(session: Session, ladder: LadderRow) -> list[SeatOut] | None:
    seats = storage.ladders.seat_state(session, ladder)
    if seats is None:
        return None
    elo = rating.ELO_PER_LOGIT
    return [
        SeatOut(name=name, advantage_elo=float(h * elo), advantage_elo_se=float(se * elo))
        for name, h, se in zip(ladder.seats or [], seats.advantage, seats.standard_error, strict=True)
    ]


def change_settings(session: Session, ladder: LadderRow, patch: LadderPatch) -> LadderOut:
    """Change the settings given.  A new learning rate (``eta``, ``eta_tau``) takes effect by replaying the log
    after the latest checkpoint with it, exactly as a void's replay does: the ratings then equal those of a ladder
    that always had it since that checkpoint, which ``/audit`` checks."""
    values = patch.model_dump(exclude_unset=True)
    for name in ("auto_create_players", "auto_refit", "private"):
        if name in values and values[name] is None:
            raise InvalidInput(f"{name}: true or false", errors=[{"field": name, "message": "must be true or false"}])
    if "eta" in values and values["eta"] is None:
        raise InvalidInput("eta: a number", errors=[{"field": "eta", "message": "must be a number from 0 to 10"}])
    rate = {name: values[name] for name in ("eta", "eta_tau") if name in values}
    relearn = any(getattr(ladder, name) != value for name, value in rate.items())
    if relearn:
        storage.players.lock_all(session, ladder.id)  # no game commits while the log is replayed
    if values:
        storage.ladders.change(session, ladder.id, values)
    if relearn:
        replay_log(session, storage.ladders.by_id(session, ladder.id))
    if values:
        # With a new rate, every worker reads the ladder's settings and players anew.
        storage.ladders.bump(session, [ladder.id], reset=relearn)
    return ladder_out(session, storage.ladders.by_id(session, ladder.id))


def _key_out(key: KeyRow) -> KeyOut:
    fields = ("id", "name", "role", "created_at", "revoked_at", "last_used_at", "expires_at")
    return KeyOut(**{name: getattr(key, name) for name in fields})


def create_key(session: Session, ladder: LadderRow, data: KeyCreate) -> KeyCreated:
    secret = new_key()
    key = storage.keys.insert(session, ladder.id, data.name, data.role, hash_key(secret), data.expires_at)
    return KeyCreated(**_key_out(key).model_dump(), key=secret)


def list_keys(session: Session, ladder: LadderRow) -> list[KeyOut]:
    return [_key_out(key) for key in storage.keys.all_keys(session, ladder.id)]


def revoke_key(session: Session, ladder: LadderRow, key_id: int) -> KeyOut:
    """Revoke the key, unless it is the ladder's last admin key that still works (409: the ladder would be left
    without anyone to manage it)."""
    storage.ladders.lock(session, ladder.id)  # two revokes at once cannot each leave the other as the last
    key = storage.keys.get(session, ladder.id, key_id)
    if key is None:
        raise NotFound(f"Ladder {ladder.slug!r} has no key {key_id}.")
    now = datetime.now(UTC)
    working = key.revoked_at is None and (key.expires_at is None or key.expires_at > now)
    if key.role == "admin" and working and storage.keys.admins_left(session, ladder.id, now) <= 1:
        raise Conflict(
            f"Key {key_id} ({key.name!r}) is the ladder's last working admin key: create another admin key "
            "before revoking it.",
            errors=[{"field": "key_id", "message": "the ladder's last working admin key"}],
        )
    return _key_out(storage.keys.revoke(session, ladder.id, key_id))


def audit(session: Session, ladder: LadderRow) -> AuditOut:
    """Replay the event log from the latest checkpoint (or the initial vectors) and compare (mathematics §9, §13)."""
    state = storage.log.read(session, ladder)
    rate = ladder.learning_rate()
    replayed, seats = state.start, state.start_seats
    if len(state.keys):
        history = rating.replay_history(state.start, state.log, rate, games0=state.start_games, seats=seats)
        replayed, seats = history.C, history.seats
    diff = float(np.abs(replayed - state.stored).max()) if len(state.keys) else 0.0
    consistent = bool(np.array_equal(replayed, state.stored))
    if seats is not None:  # the learned seats too
        stored = state.stored_seats
        diff = max(diff, float(np.abs(seats.advantage - stored.advantage).max()))
        consistent &= np.array_equal(seats.advantage, stored.advantage)
        consistent &= np.array_equal(seats.information, stored.information)
    counts = storage.ladders.sizes(session, ladder.id)
    counted = storage.ladders.counted_sizes(session, ladder.id)
    return AuditOut(
        consistent=consistent and counts == counted,
        counts_consistent=counts == counted,
        games=state.games,
        players=len(state.keys),
        max_abs_diff=diff,
        replayed_games=state.log.n_games,
        checkpoint_after_game=storage.games.number_of(session, state.after_game_id or None),
    )
