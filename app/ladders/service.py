"""Ladders: creation, settings, keys, their configuration and size, and the audit replay."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Literal, get_args, get_origin

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.cursors import decode_cursor, encode_cursor
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.ladder import VARIANCE, LadderRow, fold
from app.core.ladder_settings import SETTINGS
from app.core.schemas import Page, one_more
from app.core.security import hash_key, new_key
from app.domain import refit_policy, season_periods
from app.domain.access import Caller
from app.domain.rerating import Prepared, lock_ladder, replay_log, replay_prepared
from app.ladders.schemas import (
    DEFAULT_ETA,
    DEFAULT_INIT_V0,
    DEFAULT_VARIANCE_ETA,
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
from app.storage.keys import KeyRow


def create_ladder(session: Session, data: LadderCreate) -> LadderCreated:
    if data.init_offset is not None and len(data.init_offset) != 2 * data.k:
        raise InvalidInput(
            f"init_offset needs {2 * data.k} numbers for k = {data.k}",
            errors=[{"field": "init_offset", "message": f"expected {2 * data.k} numbers"}],
        )
    key = new_key()
    if data.init_offset is None:
        data = data.model_copy(update={"init_offset": [0.0, DEFAULT_INIT_V0] + [0.0] * (2 * data.k - 2)})
    if data.eta is None:
        data = data.model_copy(update={"eta": DEFAULT_VARIANCE_ETA if data.rate_rule == "variance" else DEFAULT_ETA})
    values = data.model_dump(exclude={"seed"}) | {
        "seed": data.seed if data.seed is not None else secrets.randbits(62),
        "write_key_hash": hash_key(key),
        "season_due": season_due(data.season_every),
    }
    ladder = storage.ladders.insert(session, values)
    if ladder is None:
        raise Conflict(f"A ladder {data.slug!r} exists already.", field="slug")
    ladder.learning_rate()  # a rule it cannot rate with (a noise too small to be > 0 in logits²): 422, nothing made
    storage.keys.insert(session, ladder.id, "created with the ladder", "admin", hash_key(key))
    return LadderCreated(**ladder_out(session, ladder).model_dump(), admin_key=key, write_key=key)


def season_due(every: str | None) -> datetime | None:
    """When a ladder whose seasons close ``every`` month or quarter closes its next one: the end of the period
    running now (None: never)."""
    return None if every is None else season_periods.period_at(every, datetime.now(UTC)).end


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


def list_ladders(session: Session, caller: Caller, limit: int, cursor: str | None) -> Page[LadderOut]:
    """A page of the ladders, by slug; private ones only for the server admin key."""
    after = decode_cursor(cursor, lambda value: isinstance(value, str)) if cursor is not None else None
    ladders = storage.ladders.page_of_ladders(session, one_more(limit), after, private=caller.server_admin)
    return Page[LadderOut].of(ladders, limit, lambda row: ladder_out(session, row), lambda row: encode_cursor(row.slug))


def ladder_out(session: Session, ladder: LadderRow) -> LadderOut:
    players, games = storage.ladders.sizes(session, ladder.id)
    own = ("players", "games", "seats", "auto_refit_note", "rate_choice")
    fields = {c: getattr(ladder, c) for c in LadderOut.model_fields if c not in own}
    note, seats = refit_policy.note(session, ladder), _seats_out(session, ladder)
    choice = storage.ladders.rate_choice(session, ladder.id)
    return LadderOut(**fields, players=players, games=games, auto_refit_note=note, seats=seats, rate_choice=choice)


def _seats_out(session: Session, ladder: LadderRow) -> list[SeatOut] | None:
    seats = storage.ladder_state.seat_state(session, ladder)
    if seats is None:
        return None
    elo = rating.ELO_PER_LOGIT
    return [
        SeatOut(name=name, advantage_elo=float(h * elo), advantage_elo_se=float(se * elo))
        for name, h, se in zip(ladder.seats or [], seats.advantage, seats.standard_error, strict=True)
    ]


def replay_settings(ladder: LadderRow, patch: LadderPatch) -> dict | None:
    """The rate ``patch`` replays the ladder's log at (its columns), for the replay to be prepared before the
    write (:func:`app.domain.rerating.prepared_replay`, holding no lock); None if it replays nothing, or if what
    it changes is replayed under the writer (a new k, keys folded) or is refused anyway."""
    values = patch.model_dump(exclude_unset=True)
    if any(value is None for value in values.values()):
        return None
    values = {name: value for name, value in values.items() if name != "play" and getattr(ladder, name) != value}
    rate = _rate(ladder, values)
    if not rate or "k" in rate or values.get("case_insensitive_keys") is True:
        return None
    return rate


def _rate(ladder: LadderRow, values: dict) -> dict:
    """The columns among the changed ``values`` that change how the ladder rates its games (its learning rate
    and k): the log is replayed with them."""
    steps = values.get("drift_steps", ladder.drift_steps)  # the steps follow the drift: it is part of the rate
    variance_rule = values.get("rate_rule", ladder.rate_rule) == VARIANCE
    rate = {name: values[name] for name in ("eta", "eta_tau", "k", "drift_steps") if name in values}
    if "drift" in values and steps:
        rate["drift"] = values["drift"]
    if "seat_prior" in values and ladder.seats:  # the seats start from it: a replay from the start shows it
        rate["seat_prior"] = values["seat_prior"]
    if "rate_rule" in values:
        rate["rate_rule"] = values["rate_rule"]
    for name in ("noise", "cycles"):  # the variance rule's settings
        if name in values and variance_rule:
            rate[name] = values[name]
    return rate


def change_settings(
    session: Session, ladder: LadderRow, patch: LadderPatch, prepared: Prepared | None = None
) -> LadderOut:
    """Change the settings given.  A new k or learning rate (``eta``, ``eta_tau``, ``drift_steps``, ``drift``
    where the steps follow it, ``seat_prior`` where there are seats, ``rate_rule``, and ``noise`` and ``cycles``
    under the variance rule; setting one pins the rate, as
    ``auto_rate: false``, unless ``auto_rate`` is given too) takes effect by replaying the
    log with it, exactly as a void's replay does: the ratings then equal those of a ladder that always had it (for
    a new k, from the start; for a new rate, since the latest checkpoint), which ``/audit`` checks.  Matching keys
    case-insensitively from now on folds every key and alias (:func:`_fold_keys`).

    With ``prepared`` (the log replayed at the new rate before this transaction, :func:`replay_settings`), only
    its writes and the games committed since are done here, holding the writer for them, not for the replay; one
    that no longer holds (the log or the settings changed meanwhile) is dropped and the log replayed here."""
    values = patch.model_dump(exclude_unset=True)
    steps = values.get("drift_steps", ladder.drift_steps)  # the steps follow the drift: it is part of the rate
    rule = {"eta", "eta_tau", "drift_steps"} & values.keys() or ("drift" in values and steps)
    rule = rule or ("seat_prior" in values and bool(ladder.seats))  # part of the rate where there are seats
    variance_rule = values.get("rate_rule", ladder.rate_rule) == VARIANCE
    rule = rule or "rate_rule" in values or (bool({"noise", "cycles"} & values.keys()) and variance_rule)
    if rule and "auto_rate" not in values:
        values["auto_rate"] = False  # an admin's rate is pinned
    for name in NOT_NULL:
        if name in values and values[name] is None:
            message = null_message(name)
            raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}])
    if "play" in values:
        values["play"] = _play(ladder, values["play"])
    values = {name: value for name, value in values.items() if getattr(ladder, name) != value}
    if "season_every" in values:  # the first automatic close ends the period running now
        values["season_due"] = season_due(values["season_every"])
    rate = _rate(ladder, values)
    if rate.keys() - {"k"}:
        values["rate_choice"] = None  # the rate is the admin's now, not a refit's choice
    folding = values.get("case_insensitive_keys") is True
    # Every worker reads the settings and players anew (the drift and inactivity change what reads derive).
    reset = bool(rate) or bool({"case_insensitive_keys", "drift", "inactive_after_days"} & set(values))
    usable = prepared is not None and bool(rate) and "k" not in rate and not folding
    if rate or folding or prepared is not None:  # no game commits while the log is rewritten or replayed
        lock_ladder(session, ladder.id, prepared if usable else None)
    if folding:
        _fold_keys(session, ladder)
    if "k" in values:
        values["init_offset"] = _resized(ladder.init_offset, 2 * values["k"])
    if values:
        storage.ladders.change(session, ladder.id, values)
    if "k" in values:
        _new_dimension(session, ladder, _reread(session, ladder))
    if rate:
        changed = _reread(session, ladder)
        if not usable or prepared is None or replay_prepared(session, changed, prepared) is None:
            replay_log(session, changed)
    if values:
        storage.ladders.bump(session, [ladder.id], reset=reset)
    return ladder_out(session, _reread(session, ladder))


#: The settings a patch may not set to null (``play``'s kinds are checked one by one: :func:`_play`).
NOT_NULL = [name for name, setting in SETTINGS.items() if setting.patch and not setting.nullable and name != "play"]


def null_message(name: str) -> str:
    """What a patch that sends null for the setting ``name`` is told: the values it takes, from its type in
    ``LadderOut`` and its bounds."""
    kind, setting = LadderOut.model_fields[name].annotation, SETTINGS[name]
    if kind is bool:
        return "must be true or false"
    if get_origin(kind) is Literal:
        return "must be " + " or ".join(repr(value) for value in get_args(kind))
    low = f"above {setting.gt:g}" if setting.gt is not None else f"{setting.ge:g}"
    high = f"below {setting.lt:g}" if setting.lt is not None else f"{setting.le:g}"
    return f"must be a {'whole number' if kind is int else 'number'} from {low} to {high}"


def _reread(session: Session, ladder: LadderRow) -> LadderRow:
    """The ladder as this transaction has changed it (its row is locked: it is there)."""
    changed = storage.ladders.by_id(session, ladder.id)
    assert changed is not None
    return changed


def _play(ladder: LadderRow, given: dict | None) -> dict:
    """The ladder's kinds of games with those ``given`` changed (422 naming a kind sent as null, or a ladder left
    without any kind of game)."""
    if given is None:
        raise InvalidInput("play: send the kinds of games to change", field="play")
    for name, value in given.items():
        if value is None and name != "points":
            message = "must be 1, 3 or 5" if name == "best_of" else "must be true or false"
            raise InvalidInput(f"play.{name}: {message}", errors=[{"field": f"play.{name}", "message": message}])
    play = (ladder.play or {}) | given  # (always set: LadderRow fills it in)
    if not (play["singles"] or play["doubles"] or play["free_for_all"]):
        message = "a ladder plays at least one of singles, doubles and free_for_all"
        raise InvalidInput(f"play: {message}", errors=[{"field": "play", "message": message}])
    return play


def _resized(vector: list[float] | None, n: int) -> list[float] | None:
    """The first ``n`` numbers of ``vector``, padded with zeros."""
    return None if vector is None else (list(vector) + [0.0] * n)[:n]


def _new_dimension(session: Session, old: LadderRow, new: LadderRow) -> None:
    """Every player's initial vector at the new k: the seeded one a new player would get, with the first numbers
    of the one they had; their vectors start there again, as the checkpoints of earlier refits (at the old k) are
    set aside.  A voided game's recorded vectors are cut or padded with zeros (it counts nowhere)."""
    ids, keys, initial = storage.players.initial_rows(session, old.id, 2 * old.k)
    C0 = rating.initial_vectors(keys, new.k, new.seed, new.init_scale, new.init_offset)
    kept = min(2 * old.k, 2 * new.k)
    C0[:, :kept] = initial[:, :kept]
    storage.players.save_initial(session, old.id, ids, C0)
    storage.refits.supersede_checkpoints(session, old.id, 0)
    storage.games.resize_voided_history(session, old.id, 2 * new.k)
    storage.ladder_state.forget_field(session, old.id)


def _fold_keys(session: Session, ladder: LadderRow) -> None:
    """Every key and alias of the ladder becomes its case-folded form, in the players, the log and the aliases; a
    player without a name keeps the old spelling as their name, and an alias that folds into a key, or into
    another alias of its player, goes.  409 naming them if keys or aliases of two players would become one."""
    players = storage.players.keys_and_names(session, ladder.id)
    owners = storage.aliases.owners(session, ladder.id)
    groups: dict[str, dict[str, int]] = {}  # folded -> {key or alias: its player's id}
    for player_id, key, _ in players:
        groups.setdefault(fold(key), {})[key] = player_id
    for alias, player_id in owners.items():
        groups.setdefault(fold(alias), {})[alias] = player_id
    clashes = [sorted(group) for group in groups.values() if len(set(group.values())) > 1]
    if clashes:
        named = "; ".join(" and ".join(map(repr, keys)) for keys in clashes[:10])
        more = f" (and {len(clashes) - 10} more)" if len(clashes) > 10 else ""
        raise Conflict(
            f"case_insensitive_keys: these keys of different players would become one: {named}{more}. Merge or "
            "rename them first.",
            errors=[{"field": "case_insensitive_keys", "message": f"{len(clashes)} keys would clash"}],
        )
    for player_id, key, name in players:
        if fold(key) != key:
            games = storage.games.of_player_all(session, ladder.id, player_id)
            storage.games.rename_player(session, ladder.id, games, key, fold(key))
            storage.players.rekey(session, ladder.id, player_id, fold(key), name if name is not None else key)
    keys = {fold(key) for _, key, _ in players}
    # Aliases to drop: those not folded, and folded ones that are a key now (a merged "ann" of "Ann"); then each
    # folded form that is neither a key nor an alias left, once.
    dropped = [alias for alias in owners if fold(alias) != alias or alias in keys]
    storage.aliases.remove(session, ladder.id, dropped)
    kept = set(owners) - set(dropped)
    for folded in sorted({fold(alias) for alias in dropped} - keys - kept):
        storage.aliases.add(session, ladder.id, [folded], next(iter(groups[folded].values())))


def _key_out(key: KeyRow) -> KeyOut:
    fields = ("id", "name", "role", "created_at", "revoked_at", "last_used_at", "expires_at")
    return KeyOut(**{name: getattr(key, name) for name in fields})


def create_key(session: Session, ladder: LadderRow, data: KeyCreate) -> KeyCreated:
    secret = new_key()
    key = storage.keys.insert(session, ladder.id, data.name, data.role, hash_key(secret), data.expires_at)
    return KeyCreated(**_key_out(key).model_dump(), key=secret)


def list_keys(session: Session, ladder: LadderRow, limit: int | None, cursor: int | None) -> Page[KeyOut]:
    keys = storage.keys.page_of_keys(session, ladder.id, one_more(limit), cursor)
    return Page[KeyOut].of(keys, limit, _key_out, lambda key: str(key.id))


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
    revoked = storage.keys.revoke(session, ladder.id, key_id)
    assert revoked is not None  # found above, under the ladder's lock
    if key.revoked_at is None:  # in the ladder's log, in commit order: open event streams check their key again
        storage.events.add(session, ladder.id, "access", {"key": key_id})
        storage.ladders.log_events(session, ladder.id)
    return _key_out(revoked)


def audit(session: Session, ladder: LadderRow) -> AuditOut:
    """Replay the event log from the latest checkpoint (or the initial vectors) and compare (mathematics §9, §13)."""
    state = storage.log.read(session, ladder)
    rate = ladder.learning_rate()
    replayed, seats = state.start, state.start_seats
    if len(state.keys):
        history = rating.replay_history(
            state.start, state.log, rate, games0=state.start_games, seats=seats, times=state.times
        )
        replayed, seats = history.C, history.seats
    diff = float(np.abs(replayed - state.stored).max()) if len(state.keys) else 0.0
    consistent = bool(np.array_equal(replayed, state.stored))
    if isinstance(rate, rating.VarianceRule) and len(state.keys):  # the variances too (mathematics §3b)
        assert history.variance is not None  # the variance rule's state after the log
        stored_variance = storage.players.initial_and_current(session, ladder.id, 2 * ladder.k, "variance")[3]
        replayed_variance = np.where(np.isnan(stored_variance), np.nan, history.variance)
        consistent &= np.array_equal(replayed_variance, stored_variance, equal_nan=True)
    if seats is not None:  # the learned seats too
        stored = state.stored_seats
        assert stored is not None  # a ladder that learns seats keeps them
        diff = max(diff, float(np.abs(seats.advantage - stored.advantage).max()))
        consistent &= np.array_equal(seats.advantage, stored.advantage)
        consistent &= np.array_equal(seats.information, stored.information)
    ladders = storage.ladders
    counts = (*ladders.sizes(session, ladder.id), ladders.comparisons(session, ladder.id))
    counted = (*ladders.counted_sizes(session, ladder.id), ladders.counted_comparisons(session, ladder.id))
    return AuditOut(
        consistent=consistent and counts == counted,
        counts_consistent=counts == counted,
        games=state.games,
        players=len(state.keys),
        max_abs_diff=diff,
        replayed_games=state.log.n_games,
        checkpoint_after_game=storage.games.number_of(session, ladder.id, state.after_game_id or None),
    )
