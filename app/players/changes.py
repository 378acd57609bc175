"""Player changes: create, rename, rekey, (de)activate, merge and erase players."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.ladder import LadderRow, fold
from app.domain.rerating import lock_ladder, replay_from, replay_log
from app.players.last_game import last_game_changes
from app.players.profile import profile
from app.players.schemas import PlayerCreate, PlayerPatch
from app.storage import challenges


def create_player(session: Session, ladder: LadderRow, data: PlayerCreate) -> None:
    """Add the player; the caller reads the profile once this has committed
    (:func:`~app.players.profile.get_player`)."""
    if data.vector is not None and len(data.vector) != 2 * ladder.k:
        raise InvalidInput(
            f"vector needs 2k = {2 * ladder.k} numbers",
            errors=[{"field": "vector", "message": f"expected {2 * ladder.k} numbers, got {len(data.vector)}"}],
        )
    key = fold(data.key) if ladder.case_insensitive_keys else data.key
    name = data.name if data.name is not None or key == data.key else data.key  # the spelling folding changed
    if data.vector is not None:
        vector = np.asarray(data.vector, dtype=np.float64)
    else:
        vector = rating.initial_vectors([key], ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)[0]
    _not_an_alias(session, ladder, key, "key")
    if not storage.players.insert(session, ladder.id, key, name, vector):
        raise Conflict(f"Player {key!r} exists already.", errors=[{"field": "key", "message": "taken"}])
    storage.ladder_state.add_to_field(session, ladder, np.asarray(vector, dtype=np.float64)[None, :])
    storage.events.add(session, ladder.id, "player", {"action": "created", "key": key})
    storage.ladders.bump(session, [ladder.id])


def _not_an_alias(session: Session, ladder: LadderRow, key: str, field: str, player_id: int | None = None) -> None:
    """409 if ``key`` leads to another player than ``player_id`` already (read in the caller's transaction)."""
    of = storage.aliases.find(session, ladder.id, [key]).get(key)
    if of is None:
        return
    if player_id is not None:
        owner = storage.players.get_row(session, ladder.id, of)
        assert owner is not None  # find() joined the alias to this player's row, in this transaction
        if owner[0] == player_id:
            return
    message = f"{key!r} is an alias of player {of!r}"
    raise Conflict(f"{field}: {message}.", errors=[{"field": field, "message": message}])


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
        new_key = fold(new_key)
    if new_key != key:
        _rekey(session, ladder, key, new_key)
    change = {"action": "updated", "key": new_key} | ({"was": key} if new_key != key else {})
    storage.events.add(session, ladder.id, "player", change)
    storage.ladders.bump(session, [ladder.id], reset=new_key != key)  # every worker reads the aliases anew
    return new_key


def _rekey(session: Session, ladder: LadderRow, key: str, new_key: str) -> None:
    """The player ``key`` becomes ``new_key`` in the players, the log and the aliases; ``key`` becomes an alias
    (an alias ``new_key`` of theirs stops being one).  409 if another player has ``new_key``, or it leads to one."""
    lock_ladder(session, ladder.id)  # no game commits while the log is rewritten
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
    lock_ladder(session, ladder.id)
    games = storage.games.of_player_all(session, ladder.id, source[0])
    shared = {g for g, _, _ in storage.games.of_player_all(session, ladder.id, target[0])} & {g for g, _, _ in games}
    if shared:
        first = storage.games.number_of(session, ladder.id, min(shared))  # the ladder's number, as its API shows it
        raise Conflict(
            f"{key!r} and {into!r} both played in game {first}: they cannot be one player.", field="into", game=first
        )
    storage.games.rename_player(session, ladder.id, games, key, into)
    storage.games.move_memberships(session, ladder.id, source[0], target[0])
    storage.aliases.move(session, ladder.id, source[0], target[0])  # the merged player's aliases, and its key, lead on
    storage.aliases.add(session, ladder.id, [key], target[0])
    storage.players.merge_counters(session, ladder.id, source[0], target[0])
    # Two players have one unresolved challenge at most, and none with oneself: the merge withdraws the others.
    if withdrawn := challenges.merge(session, ladder.id, source[0], target[0], datetime.now(UTC)):
        storage.events.add(session, ladder.id, "challenge", *({"action": "withdrawn", "id": n} for n in withdrawn))
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
    table = storage.read_model.current_table(session, ladder, cached=False)
    row = table.row(into)
    assert row is not None  # ``into`` was found above, and the ladder is locked: the merge kept their row
    [change] = last_game_changes(session, ladder, table, [row])
    return profile(table, ladder, into, aliases) | {"last_game_change": change}


def erase_player(session: Session, ladder: LadderRow, key: str) -> str:
    """Erase the person: their name is removed and their key replaced by an opaque pseudonym, in the players,
    the log and the stored responses, and their aliases forgotten; the games and everyone's ratings stay.  The
    pseudonym."""
    key = ladder.player_key(key)
    row = storage.players.get_row(session, ladder.id, key)
    if row is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
    pseudonym = "erased-" + secrets.token_hex(8)
    lock_ladder(session, ladder.id)
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
    challenges.scrub(session, ladder.id, row[0])
    storage.events.add(session, ladder.id, "player", {"action": "erased", "key": pseudonym})
    storage.ladders.bump(session, [ladder.id], reset=had_aliases)
    return pseudonym
