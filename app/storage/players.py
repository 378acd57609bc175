"""Player rows: vectors and counters, locked for writes, and a versioned per-process table for reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import Player
from app.storage import cache, codec, ladders, refits
from app.storage.sql import Fetch, bulk_insert, bulk_update, driver_fetchall, driver_sql, fetch_typed, result_converter

#: Above this many players a request locks the ladder's whole player table (in id
#: order, as always) instead of listing the keys, which would exceed driver limits.
MAX_KEYS_IN_QUERY = 10_000
COUNTERS = ("games", "wins", "draws", "losses", "comparisons")


@dataclass
class Locked:
    """Players' rows locked for a write, with their vectors as the rows of ``C``."""

    index: dict[str, int]  # key -> row
    ids: np.ndarray
    C: np.ndarray
    counts: np.ndarray  # (n, 5): COUNTERS
    last_played: list[datetime | None]
    #: The keys this lock set out to create (a concurrent creator may have made some of them first).
    created: list[str] = field(default_factory=list)


def lock(
    session: Session, ladder_id: int, dim: int, keys: list[str], initial: Callable[[list[str]], np.ndarray] | None
) -> Locked:
    """The rows of ``keys``, locked in id order (one order: no deadlocks).

    With ``initial`` (key list -> initial vectors), missing players are created
    first; without it they are simply absent from the result.  A concurrent
    creator's rows are kept.
    """
    keys = sorted(set(keys))
    rows = _select_for_update(session, ladder_id, keys)
    missing: list[str] = []
    if len(rows) < len(keys) and initial is not None:
        found = {row[1] for row in rows}
        missing = [k for k in keys if k not in found]
        _create(session, ladder_id, missing, initial(missing))
        rows = _select_for_update(session, ladder_id, keys)
    return Locked(
        index={row[1]: n for n, row in enumerate(rows)},
        ids=np.array([row[0] for row in rows], dtype=np.int64),
        C=codec.unpack_rows((row[2] for row in rows), dim),
        counts=np.array([tuple(row[3:8]) for row in rows], dtype=np.int64).reshape(-1, 5),
        last_played=[row[8] for row in rows],
        created=missing,
    )


_LOCK_COLUMNS = [Player.__table__.c[name] for name in ("id", "key", "vector", *COUNTERS, "last_played_at")]
_LOCK = f"SELECT {', '.join(c.name for c in _LOCK_COLUMNS)} FROM players WHERE ladder_id = ?"


def lock_all(session: Session, ladder_id: int) -> None:
    """Lock every player row of the ladder, in id order, then the ladder's row (a replay or a checkpoint rewrites
    the players and the learned seats).

    The ladder's row is what keeps out a game between players the ladder did not have yet: their rows are
    not among those locked here, but the game waits for the ladder's row before it reads the seats (one order,
    players then ladder, as game commits take them: no deadlocks)."""
    session.execute(select(Player.id).where(Player.ladder_id == ladder_id).order_by(Player.id).with_for_update()).all()
    ladders.lock(session, ladder_id)


def _select_for_update(session: Session, ladder_id: int, keys: list[str]) -> list:
    if len(keys) <= MAX_KEYS_IN_QUERY:
        sql = f"{_LOCK} AND key IN ({', '.join('?' * len(keys))}) ORDER BY id FOR UPDATE"
        return fetch_typed(session, sql, (ladder_id, *keys), _LOCK_COLUMNS)
    wanted = set(keys)
    rows = fetch_typed(session, f"{_LOCK} ORDER BY id FOR UPDATE", (ladder_id,), _LOCK_COLUMNS)
    return [row for row in rows if row[1] in wanted]


def _create(session: Session, ladder_id: int, keys: list[str], C0: np.ndarray) -> None:
    create(session, ladder_id, keys, C0, [None] * len(keys), [True] * len(keys), [datetime.now(UTC)] * len(keys))


def create(
    session: Session,
    ladder_id: int,
    keys: list[str],
    C0: np.ndarray,
    names: list[str | None],
    active: list[bool],
    created_at: list[datetime],
) -> None:
    """New players with initial vectors ``C0``, in one insert; keys taken already are skipped."""
    blobs = codec.pack_rows(C0)
    n, zeros = len(keys), [0] * len(keys)
    columns = {"ladder_id": [ladder_id] * n, "key": keys, "name": names, "active": active, "initial": blobs}
    columns |= {"vector": blobs, "created_at": created_at} | {c: zeros for c in COUNTERS}
    bulk_insert(session.connection(), Player.__table__, columns, on_conflict_do_nothing="ladder_id, key")


_EXPORT_COLUMNS = [Player.__table__.c[name] for name in ("id", "key", "name", "active", "initial", "created_at")]


def export_page(session: Session, ladder_id: int, after_id: int, limit: int) -> list[tuple]:
    """(id, key, name, active, initial, created_at) of up to ``limit`` players with id > ``after_id``, in id order."""
    columns = ", ".join(c.name for c in _EXPORT_COLUMNS)
    sql = f"SELECT {columns} FROM players WHERE ladder_id = ? AND id > ? ORDER BY id LIMIT ?"
    return fetch_typed(session, sql, (ladder_id, after_id, limit), _EXPORT_COLUMNS)


def keys_of(session: Session, player_ids: list[int]) -> dict[int, str]:
    """The keys of players by id."""
    found: dict[int, str] = {}
    for lo in range(0, len(player_ids), MAX_KEYS_IN_QUERY):
        part = player_ids[lo : lo + MAX_KEYS_IN_QUERY]
        found.update(
            (row[0], row[1]) for row in session.execute(select(Player.id, Player.key).where(Player.id.in_(part)))
        )
    return found


def initial_rows(session: Session, ladder_id: int, dim: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Ids, keys and initial vectors of every player of the ladder, in id order."""
    rows = driver_fetchall(
        session.connection(), "SELECT id, key, initial FROM players WHERE ladder_id = ? ORDER BY id", (ladder_id,)
    )
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    return ids, [r[1] for r in rows], codec.unpack_rows((r[2] for r in rows), dim)


def existing(session: Session, ladder_id: int, keys: list[str]) -> set[str]:
    """Which of ``keys`` are players of the ladder."""
    found: set[str] = set()
    for lo in range(0, len(keys), MAX_KEYS_IN_QUERY):
        part = keys[lo : lo + MAX_KEYS_IN_QUERY]
        found.update(session.scalars(select(Player.key).where(Player.ladder_id == ladder_id, Player.key.in_(part))))
    return found


def save(
    session: Session,
    locked: Locked,
    C: np.ndarray,
    counts: np.ndarray,
    last_played: list[datetime | None],
    strength_then: np.ndarray,
) -> None:
    """New vectors, counters, last-played times and strengths just after the game of the locked rows, in one
    ``executemany``."""
    columns: dict[str, Any] = {
        "vector": codec.pack_rows(C),
        "last_played_at": last_played,
        "strength_then": strength_then.tolist(),
    }
    columns |= {name: counts[:, n].tolist() for n, name in enumerate(COUNTERS)}
    bulk_update(session.connection(), Player.__table__, ("id", locked.ids.tolist()), columns)


def change(session: Session, ladder_id: int, key: str, values: dict) -> bool:
    """Change a player's ``name`` or ``active``; False if there is no such player."""
    query = Player.__table__.update().where(Player.ladder_id == ladder_id, Player.key == key).values(**values)
    return session.execute(query).rowcount > 0


def save_vectors(session: Session, ids: np.ndarray, C: np.ndarray) -> None:
    """New vectors from outside a game commit (a replay, a checkpoint): the strengths just after the players'
    last games are then unknown.  The caller forgets the ladder's field sum (:func:`ladders.forget_field`)."""
    columns = {"vector": codec.pack_rows(C), "strength_then": [None] * len(ids)}
    bulk_update(session.connection(), Player.__table__, ("id", ids.tolist()), columns)


def insert(session: Session, ladder_id: int, key: str, name: str | None, vector: np.ndarray) -> bool:
    """A new player; False if the key is taken."""
    blob = codec.pack(vector)
    values = {"ladder_id": ladder_id, "key": key, "name": name, "initial": blob, "vector": blob}
    try:
        with session.begin_nested():
            session.execute(Player.__table__.insert().values(**values, **dict.fromkeys(COUNTERS, 0)))
    except IntegrityError:
        return False
    return True


async def vectors(fetch: Fetch, ladder_id: int, keys: list[str], dim: int) -> dict[str, np.ndarray]:
    """The vectors of ``keys`` (those that exist) in one statement: the prediction path.

    The statement text depends only on how many keys there are, so the drivers
    keep it prepared (sqlite3's statement cache, psycopg's automatic prepare).
    """
    marks = ", ".join("?" * len(keys))
    sql = f"SELECT key, vector FROM players WHERE ladder_id = ? AND key IN ({marks})"
    rows = await fetch(sql, (ladder_id, *keys))
    return {key: codec.unpack(blob) for key, blob in rows if len(blob) == 8 * dim}


@dataclass
class Table:
    """A ladder's players at one version, in id order: what leaderboards and profiles read.

    ``memo`` holds what readers derive from it (strengths, orders), computed
    once per version and per process.
    """

    version: int
    ids: np.ndarray
    keys: np.ndarray  # of str
    names: list[str | None]
    C: np.ndarray
    counts: np.ndarray  # (n, 5): COUNTERS
    last_played: list[datetime | None]
    created: list[datetime]
    active: np.ndarray  # of bool
    #: Hodge strength just after each player's last game (NaN: unknown).
    strength_then: np.ndarray
    #: Players the latest finished refit found not comparable.
    not_comparable: frozenset[str]
    memo: dict[str, Any] = field(default_factory=dict)
    _row_of: dict[str, int] | None = None

    def row(self, key: str) -> int | None:
        if self._row_of is None:
            self._row_of = {k: n for n, k in enumerate(self.keys.tolist())}
        return self._row_of.get(key)

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per table (readers in other threads may compute it too; the results agree)."""
        if name not in self.memo:
            self.memo[name] = compute()
        return self.memo[name]


#: Ladders whose tables this process keeps (the most recently read).
MAX_TABLES = 64


def cached_table(engine: Engine, ladder_id: int, version: int) -> Table | None:
    """This process's copy of the ladder's player table (read through ``engine``) if it is at ``version``."""
    held = cache.of(engine, "tables").get(ladder_id)
    return held if held is not None and held.version == version else None


def table(session: Session, ladder: ladders.LadderRow, cached: bool = True) -> Table:
    """The ladder's players as of now: this process's copy if the ladder's version has not moved, else read anew.

    The version is read before the rows, so a table is never older than its
    version says (on PostgreSQL each statement sees the latest commits).  A
    write transaction reads with ``cached=False``: what it sees may never commit.
    """
    current = ladders.version(session, ladder.id)
    tables = cache.of(session, "tables")
    held = tables.get(ladder.id)
    if cached and held is not None and held.version == current:
        return held
    rows = driver_fetchall(
        session.connection(),
        "SELECT id, key, name, vector, games, wins, draws, losses, comparisons, last_played_at, created_at, active, "
        "strength_then FROM players WHERE ladder_id = ? ORDER BY id",
        (ladder.id,),
    )
    stamp = result_converter(Player.__table__.c.last_played_at, session.get_bind().dialect)
    fresh = Table(
        version=current,
        ids=np.array([r[0] for r in rows], dtype=np.int64),
        keys=np.array([r[1] for r in rows], dtype=object),
        names=[r[2] for r in rows],
        C=codec.unpack_rows((r[3] for r in rows), 2 * ladder.k),
        counts=np.array([r[4:9] for r in rows], dtype=np.int64).reshape(-1, 5),
        last_played=[stamp(r[9]) for r in rows],
        created=[stamp(r[10]) for r in rows],
        active=np.array([bool(r[11]) for r in rows], dtype=bool),
        strength_then=np.array([np.nan if r[12] is None else r[12] for r in rows], dtype=np.float64),
        not_comparable=refits.not_comparable_keys(session, ladder.id),
    )
    if cached:
        if len(tables) >= MAX_TABLES:
            tables.clear()
        tables[ladder.id] = fresh
    return fresh


def uncount(session: Session, player_ids: list[int], counts: np.ndarray) -> None:
    """Take counters (rows of COUNTERS) off players: a voided game's record."""
    assignments = ", ".join(f"{name} = {name} - ?" for name in COUNTERS)
    rows = [(*row, player) for row, player in zip(counts.tolist(), player_ids, strict=True)]
    driver_sql(session.connection(), f"UPDATE players SET {assignments} WHERE id = ?", rows)


def refresh_last_played(session: Session, player_ids: list[int]) -> None:
    """Each player's last-played time from the games that count (after a void)."""
    latest = (
        "SELECT max(g.played_at) FROM participants p JOIN games g ON g.id = p.game_id "
        "WHERE p.player_id = players.id AND g.voided_at IS NULL"
    )
    driver_sql(
        session.connection(), f"UPDATE players SET last_played_at = ({latest}) WHERE id = ?", [(p,) for p in player_ids]
    )


def get_row(session: Session, ladder_id: int, key: str) -> tuple[int, str | None] | None:
    """(id, name) of a player, or None."""
    row = session.execute(
        select(Player.id, Player.name).where(Player.ladder_id == ladder_id, Player.key == key)
    ).first()
    return None if row is None else (row[0], row[1])


def merge_counters(session: Session, source_id: int, target_id: int) -> None:
    """Add the source player's counters and last-played time to the target's, then delete the source's row."""
    add = ", ".join(f"{name} = {name} + (SELECT {name} FROM players WHERE id = ?)" for name in COUNTERS)
    params = (*([source_id] * len(COUNTERS)), target_id)
    driver_sql(session.connection(), f"UPDATE players SET {add} WHERE id = ?", params)
    refresh_last_played(session, [target_id])
    driver_sql(session.connection(), "DELETE FROM players WHERE id = ?", (source_id,))


def erase(session: Session, player_id: int, pseudonym: str) -> None:
    """The person is gone: their name removed, their key replaced by an opaque pseudonym."""
    driver_sql(session.connection(), "UPDATE players SET key = ?, name = NULL WHERE id = ?", (pseudonym, player_id))


def all_exist(session: Session, ladder_id: int, player_ids: np.ndarray) -> bool:
    """Whether every one of ``player_ids`` is still a player of the ladder."""
    ids = session.scalars(select(Player.id).where(Player.ladder_id == ladder_id)).all()
    return bool(np.isin(player_ids, np.asarray(ids, dtype=np.int64)).all())
