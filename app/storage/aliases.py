"""Player aliases: keys that lead to another player (a merged player's key, a changed key's old one).

A ladder has few of them, so every process keeps a ladder's aliases with its settings
(:attr:`app.core.ladder.LadderRow.aliases`), read again whenever the ladder's reset version moves: every change
of an alias bumps it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from app.storage.sql import driver_sql, unindexed_on_sqlite
from app.storage.tables import Player, PlayerAlias


def of_ladder(session: Session, ladder_id: int) -> dict[str, str]:
    """Every alias of the ladder and the key of the player it leads to."""
    query = (
        select(PlayerAlias.alias, Player.key)
        .join(Player, and_(Player.id == PlayerAlias.player_id, Player.ladder_id == PlayerAlias.ladder_id))
        .where(PlayerAlias.ladder_id == ladder_id)
    )
    return dict(session.execute(query).all())


def find(session: Session, ladder_id: int, keys: list[str]) -> dict[str, str]:
    """Which of ``keys`` are aliases now, and of whom (read in the caller's transaction: a write checks here that
    no key it is about to create a player for has just become an alias)."""
    found: dict[str, str] = {}
    for lo in range(0, len(keys), CHUNK):
        query = (
            select(PlayerAlias.alias, Player.key)
            .join(Player, and_(Player.id == PlayerAlias.player_id, Player.ladder_id == PlayerAlias.ladder_id))
            .where(PlayerAlias.ladder_id == ladder_id, PlayerAlias.alias.in_(keys[lo : lo + CHUNK]))
        )
        found.update(session.execute(query).all())
    return found


#: Keys per query (drivers limit the parameters of one statement).
CHUNK = 10_000


def owners(session: Session, ladder_id: int) -> dict[str, int]:
    """Every alias of the ladder and the id of the player it leads to."""
    query = select(PlayerAlias.alias, PlayerAlias.player_id).where(PlayerAlias.ladder_id == ladder_id)
    return dict(session.execute(query).all())


def changed(session: Session) -> bool:
    """Whether this transaction changed aliases (what it reads of them may then never commit)."""
    return bool(session.info.get("aliases_changed"))


def add(session: Session, ladder_id: int, aliases: list[str], player_id: int) -> None:
    session.info["aliases_changed"] = True
    if aliases:
        now = datetime.now(UTC)
        rows = [{"ladder_id": ladder_id, "alias": a, "player_id": player_id, "created_at": now} for a in aliases]
        session.execute(PlayerAlias.__table__.insert(), rows)


def remove(session: Session, ladder_id: int, aliases: list[str]) -> None:
    session.info["aliases_changed"] = True
    table = PlayerAlias.__table__
    for lo in range(0, len(aliases), CHUNK):
        part = aliases[lo : lo + CHUNK]
        session.execute(table.delete().where(table.c.ladder_id == ladder_id, table.c.alias.in_(part)))


def move(session: Session, ladder_id: int, source_id: int, target_id: int) -> None:
    """Every alias of the ladder's player ``source_id`` leads to ``target_id`` instead (a merge)."""
    session.info["aliases_changed"] = True
    sql = "UPDATE player_aliases SET player_id = ? WHERE player_id = ? AND ladder_id = ?"
    driver_sql(session.connection(), sql, (target_id, source_id, ladder_id))


def drop(session: Session, ladder_id: int, player_id: int) -> None:
    """Forget every alias of the ladder's player (an erased person's former keys)."""
    session.info["aliases_changed"] = True
    sql = "DELETE FROM player_aliases WHERE player_id = ? AND ladder_id = ?"
    driver_sql(session.connection(), sql, (player_id, ladder_id))


def of_players(session: Session, ladder_id: int, player_ids: list[int]) -> dict[int, list[str]]:
    """The aliases of each of the ladder's players ``player_ids`` that has some, sorted."""
    if not player_ids:
        return {}
    ladder = unindexed_on_sqlite(session, PlayerAlias.ladder_id) == ladder_id  # found by player
    query = (
        select(PlayerAlias.player_id, PlayerAlias.alias)
        .where(ladder, PlayerAlias.player_id.in_(player_ids))
        .order_by(PlayerAlias.player_id, PlayerAlias.alias)
    )
    found: dict[int, list[str]] = {}
    for player_id, alias in session.execute(query):
        found.setdefault(player_id, []).append(alias)
    return found
