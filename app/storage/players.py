"""Player rows: vectors, counters and names, locked and written by the write paths, read by key or id."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import rating
from app.storage import aliases, codec, ladders
from app.storage.sql import (
    Fetch,
    bulk_insert,
    bulk_update,
    chunks,
    driver_chunks,
    driver_fetchall,
    driver_sql,
    fetch_typed,
    rowcount,
    unindexed_on_sqlite,
)
from app.storage.tables import Player

#: Above this many players a request locks the ladder's whole player table (in id
#: order, as always) instead of listing the keys, which would exceed driver limits.
MAX_KEYS_IN_QUERY = 10_000
COUNTERS = ("games", "wins", "draws", "losses", "comparisons")
#: ``changed_version`` of a row written by a transaction that has not bumped its ladder's version yet
#: (:func:`app.storage.ladders.bump` stamps it).
PENDING = -1


@dataclass
class Locked:
    """Players' rows locked for a write, with their vectors as the rows of ``C``."""

    index: dict[str, int]  # key -> row
    ids: np.ndarray
    C: np.ndarray
    counts: np.ndarray  # (n, 5): COUNTERS
    last_played: list[datetime | None]
    #: What is known of each player (app.rating.experience), in games.
    experience: np.ndarray
    #: Each player's variance under the variance rule (mathematics §3b); NaN: none yet.
    variance: np.ndarray
    #: The keys this lock created, and when (none if a concurrent creator made some of them first).
    created: list[str] = field(default_factory=list)
    #: The names it gave them (key -> name; a key without one has no name).
    created_names: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    #: A concurrent creator made some of the players first.
    raced: bool = False
    #: How many players this lock created (for the ladder's count).
    inserted: int = 0


def lock(
    session: Session,
    ladder_id: int,
    dim: int,
    keys: list[str],
    initial: Callable[[list[str]], np.ndarray] | None,
    names: Mapping[str, str] | None = None,
) -> Locked:
    """The rows of ``keys``, locked in id order (one order: no deadlocks).

    With ``initial`` (key list -> initial vectors), missing players are created
    first, named as ``names`` says (key -> name); without it they are simply
    absent from the result.  A concurrent creator's rows are kept.  A missing
    key that has just become an alias (a merge committed since the caller
    resolved its keys) is absent too: the caller retries.
    """
    keys = sorted(set(keys))
    return _lock(session, ladder_id, dim, keys, initial, names, _select_for_update(session, ladder_id, keys))


def lock_many(
    session: Session,
    wanted: list[tuple[int, int, list[str], Callable[[list[str]], np.ndarray] | None, Mapping[str, str] | None]],
) -> dict[int, Locked]:
    """:func:`lock` of several ladders' players, each (ladder id, dim, keys, initial, names): one statement for
    them all, the rows locked in id order (one order whatever the ladders: no deadlocks); a ladder with players to
    create then locks its own again, as :func:`lock` does."""
    pairs = [(ladder_id, key) for ladder_id, _, keys, _, _ in wanted for key in sorted(set(keys))]
    if len(wanted) == 1 or len(pairs) > MAX_KEYS_IN_QUERY:
        return {
            ladder_id: lock(session, ladder_id, dim, keys, initial, names)
            for ladder_id, dim, keys, initial, names in wanted
        }
    order = "+players.id" if session.get_bind().dialect.name == "sqlite" else "players.id"
    values = ", ".join(["(?, ?)"] * len(pairs))
    sql = (
        f"SELECT players.ladder_id, {', '.join(f'players.{c.name}' for c in _LOCK_COLUMNS)} FROM players "
        f"WHERE (players.ladder_id, players.key) IN (VALUES {values}) ORDER BY {order} FOR UPDATE"
    )
    rows = fetch_typed(
        session, sql, tuple(v for pair in pairs for v in pair), [Player.__table__.c.ladder_id, *_LOCK_COLUMNS]
    )
    found: dict[int, list] = {}
    for row in rows:
        found.setdefault(int(row[0]), []).append(row[1:])
    return {
        ladder_id: _lock(session, ladder_id, dim, sorted(set(keys)), initial, names, found.get(ladder_id, []))
        for ladder_id, dim, keys, initial, names in wanted
    }


def _lock(
    session: Session,
    ladder_id: int,
    dim: int,
    keys: list[str],
    initial: Callable[[list[str]], np.ndarray] | None,
    names: Mapping[str, str] | None,
    rows: list,
) -> Locked:
    """:func:`lock`'s result from the rows of ``keys`` (sorted, distinct) found locked: missing players created
    first (``initial``), and the rows locked again."""
    missing: list[str] = []
    given: list[str | None] = []
    now, raced, inserted = None, False, 0
    if len(rows) < len(keys) and initial is not None:
        found = {row[1] for row in rows}
        missing = [k for k in keys if k not in found]
        if taken := aliases.find(session, ladder_id, missing):
            missing = [k for k in missing if k not in taken]
        n, now = len(missing), datetime.now(UTC)
        given = [(names or {}).get(k) for k in missing]
        inserted = create(session, ladder_id, missing, initial(missing), given, [True] * n, [now] * n) if n else 0
        if inserted < n:
            missing, raced = [], True  # a concurrent creator made some first: which ones are this one's is unknown
        rows = _select_for_update(session, ladder_id, keys)
    return Locked(
        index={row[1]: n for n, row in enumerate(rows)},
        ids=np.array([row[0] for row in rows], dtype=np.int64),
        C=codec.unpack_rows((row[2] for row in rows), dim),
        counts=np.array([tuple(row[3:8]) for row in rows], dtype=np.int64).reshape(-1, 5),
        last_played=[row[8] for row in rows],
        experience=np.array([row[9] for row in rows], dtype=np.float64),
        variance=np.array([np.nan if row[10] is None else row[10] for row in rows], dtype=np.float64),
        created=missing,
        created_names={key: name for key, name in zip(missing, given, strict=False) if name is not None},
        created_at=now,
        raced=raced,
        inserted=inserted,
    )


_LOCK_COLUMNS = [
    Player.__table__.c[name] for name in ("id", "key", "vector", *COUNTERS, "last_played_at", "experience", "variance")
]
_LOCK = f"SELECT {', '.join(c.name for c in _LOCK_COLUMNS)} FROM players WHERE ladder_id = ?"


def lock_all(session: Session, ladder_id: int) -> None:
    """Lock every player row of the ladder, in id order, then the ladder's row (a replay or a checkpoint rewrites
    the players and the learned seats); on PostgreSQL the ladder's replay lock (:func:`lock_replays`) first.

    The ladder's row is what keeps out a game between players the ladder did not have yet: their rows are
    not among those locked here, but the game waits for the ladder's row before it reads the seats (one order,
    players then ladder, as game commits take them: no deadlocks)."""
    if session.get_bind().dialect.name == "postgresql":  # SQLite's writer holds the whole database already
        lock_replays(session, ladder_id)
        # The rows are locked as the statement reads them; none is turned into a Python object (a million would
        # hold the interpreter).
        sql = "SELECT id FROM players WHERE ladder_id = ? ORDER BY id FOR UPDATE"
        driver_sql(session.connection(), sql, (ladder_id,)).close()
    ladders.lock(session, ladder_id)


#: The first key of the ladders' replay locks (PostgreSQL advisory locks: this number and the ladder's id).
REPLAY_LOCKS = 0x6D656C6F


def lock_replays(session: Session, ladder_id: int) -> None:
    """PostgreSQL: the ladder's replay lock, until the commit.  :func:`lock_all` takes it first, so whoever rewrites
    the log's history before locking the players (a refit's apply) holds it too, and no void or merge waits on
    those rows while holding the players (a deadlock). Game commits never take it."""
    if session.get_bind().dialect.name == "postgresql":
        sql = "SELECT pg_advisory_xact_lock(?::integer, ?::integer)"
        driver_sql(session.connection(), sql, (REPLAY_LOCKS, ladder_id)).close()


def lock_by_keys(dialect: str, n: int) -> str:
    """The statement that locks ``n`` players of a ladder by key, in id order.  On SQLite "+id" keeps the
    planner on the key index (the rows found are then sorted): ordered by the index of the ladder's players in
    id order instead, it would walk every player of the ladder for each group commit."""
    order = "+id" if dialect == "sqlite" else "id"
    return f"{_LOCK} AND key IN ({', '.join('?' * n)}) ORDER BY {order} FOR UPDATE"


def _select_for_update(session: Session, ladder_id: int, keys: list[str]) -> list:
    if len(keys) <= MAX_KEYS_IN_QUERY:
        sql = lock_by_keys(session.get_bind().dialect.name, len(keys))
        return fetch_typed(session, sql, (ladder_id, *keys), _LOCK_COLUMNS)
    wanted = set(keys)
    rows = fetch_typed(session, f"{_LOCK} ORDER BY id FOR UPDATE", (ladder_id,), _LOCK_COLUMNS)
    return [row for row in rows if row[1] in wanted]


def create(
    session: Session,
    ladder_id: int,
    keys: list[str],
    C0: np.ndarray,
    names: list[str | None],
    active: list[bool],
    created_at: list[datetime],
) -> int:
    """New players with initial vectors ``C0``, in one insert; keys taken already are skipped.  How many were
    new (the caller counts them on the ladder's row)."""
    blobs = codec.pack_rows(C0)
    n, zeros = len(keys), [0] * len(keys)
    columns: dict[str, Sequence[Any]] = {"ladder_id": [ladder_id] * n, "key": keys, "name": names, "active": active}
    columns |= {"initial": blobs, "vector": blobs, "created_at": created_at}
    columns |= {c: zeros for c in COUNTERS}
    return bulk_insert(session.connection(), Player.__table__, columns, on_conflict_do_nothing="ladder_id, key")


_EXPORT_COLUMNS = [Player.__table__.c[name] for name in ("id", "key", "name", "active", "initial", "created_at")]


def export_page(session: Session, ladder_id: int, after_id: int, limit: int) -> list[tuple]:
    """(id, key, name, active, initial, created_at) of up to ``limit`` players with id > ``after_id``, in id order."""
    columns = ", ".join(c.name for c in _EXPORT_COLUMNS)
    sql = f"SELECT {columns} FROM players WHERE ladder_id = ? AND id > ? ORDER BY id LIMIT ?"
    return fetch_typed(session, sql, (ladder_id, after_id, limit), _EXPORT_COLUMNS)


def keys_of(session: Session, ladder_id: int, player_ids: list[int]) -> dict[int, str]:
    """The keys of the ladder's players by id."""
    found: dict[int, str] = {}
    ladder = unindexed_on_sqlite(session, Player.ladder_id) == ladder_id  # found by id
    for lo in range(0, len(player_ids), MAX_KEYS_IN_QUERY):
        part = player_ids[lo : lo + MAX_KEYS_IN_QUERY]
        query = select(Player.id, Player.key).where(ladder, Player.id.in_(part))
        found.update((row[0], row[1]) for row in session.execute(query))
    return found


def initial_rows(session: Session, ladder_id: int, dim: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Ids, keys and initial vectors of every player of the ladder, in id order."""
    rows = driver_fetchall(
        session.connection(), "SELECT id, key, initial FROM players WHERE ladder_id = ? ORDER BY id", (ladder_id,)
    )
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    return ids, [r[1] for r in rows], codec.unpack_rows((r[2] for r in rows), dim)


def initial_and_current(
    session: Session, ladder_id: int, dim: int, state: str = "experience"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ids, initial vectors, vectors and experience (or, with ``state`` "variance", variance; NaN: none yet) of
    every player of the ladder, in id order (what a season's pull reads)."""
    column = "variance" if state == "variance" else "experience"
    sql = f"SELECT id, initial, vector, {column} FROM players WHERE ladder_id = ? ORDER BY id"
    rows = driver_fetchall(session.connection(), sql, (ladder_id,))
    ids = np.array([row[0] for row in rows], dtype=np.int64)
    C0 = codec.unpack_rows((row[1] for row in rows), dim)
    C = codec.unpack_rows((row[2] for row in rows), dim)
    return ids, C0, C, np.array([np.nan if row[3] is None else row[3] for row in rows], dtype=np.float64)


def existing(session: Session, ladder_id: int, keys: list[str]) -> set[str]:
    """Which of ``keys`` are players of the ladder."""
    found: set[str] = set()
    for lo in range(0, len(keys), MAX_KEYS_IN_QUERY):
        part = keys[lo : lo + MAX_KEYS_IN_QUERY]
        found.update(session.scalars(select(Player.key).where(Player.ladder_id == ladder_id, Player.key.in_(part))))
    return found


def save(session: Session, written: list[tuple[int, Written, int]]) -> None:
    """New vectors, counters, last-played times and strengths just after the games of the locked rows of each
    (ladder id, rows, version), stamped with the ladder's ``version`` this commit makes (each row written once,
    not again by :func:`app.storage.ladders.bump`), in one statement whatever the ladders (two if some rate by
    the variance rule and others not).  A player who plays is active again."""
    for variance in (False, True):
        part = [saved for saved in written if (saved[1].variance is not None) == variance]
        if not part:
            continue
        columns: dict[str, list] = {name: [] for name in ("vector", "last_played_at", "strength_then", "experience")}
        columns |= {"active": [], **({"variance": []} if variance else {}), **{name: [] for name in COUNTERS}}
        columns["changed_version"] = []
        keys: list[tuple[int, int]] = []
        for ladder_id, rows, version in part:
            n = len(rows.locked.ids)
            keys += [(ladder_id, player_id) for player_id in rows.locked.ids.tolist()]
            columns["vector"] += codec.pack_rows(rows.C)
            columns["last_played_at"] += rows.last_played
            columns["strength_then"] += rows.strength_then.tolist()
            columns["experience"] += rows.experience.tolist()
            columns["active"] += [True] * n
            if rows.variance is not None:
                columns["variance"] += rows.variance.tolist()
            for c, name in enumerate(COUNTERS):
                columns[name] += rows.counts[:, c].tolist()
            columns["changed_version"] += [version] * n
        ladders = {ladder_id for ladder_id, _ in keys}
        if len(ladders) == 1:  # by ``ladder_id = ?``: routed to the ladder's shard where the ladders are distributed
            ids = [player_id for _, player_id in keys]
            bulk_update(session.connection(), Player.__table__, ladders.pop(), ("id", ids), columns)
        else:
            bulk_update(session.connection(), Player.__table__, None, (("ladder_id", "id"), keys), columns)


def change(session: Session, ladder_id: int, key: str, values: dict) -> bool:
    """Change a player's ``name`` or ``active``; False if there is no such player."""
    where = (Player.ladder_id == ladder_id, Player.key == key)
    query = Player.__table__.update().where(*where).values(**values, changed_version=PENDING)
    return rowcount(session, query) > 0


def deactivate(session: Session, ladder_id: int, keys: list[str]) -> None:
    """Make the players ``keys`` inactive (a restore, after the games that made them active again)."""
    for lo in range(0, len(keys), MAX_KEYS_IN_QUERY):
        part = keys[lo : lo + MAX_KEYS_IN_QUERY]
        query = Player.__table__.update().where(Player.ladder_id == ladder_id, Player.key.in_(part))
        session.execute(query.values(active=False, changed_version=PENDING))


def experience_of(session: Session, ladder_id: int) -> np.ndarray:
    """Every player's experience after their latest game, in id order."""
    sql = "SELECT experience FROM players WHERE ladder_id = ? ORDER BY id"
    return np.array([row[0] for row in driver_fetchall(session.connection(), sql, (ladder_id,))], dtype=np.float64)


def save_vectors(
    session: Session,
    ladder_id: int,
    ids: np.ndarray,
    C: np.ndarray,
    experience: np.ndarray | None = None,
    variance: np.ndarray | None = None,
) -> None:
    """New vectors (and, from a replay, ``experience``, or under the variance rule the ``variance``) from outside a
    game commit (a replay, a checkpoint): the strengths just after the players' last games are then unknown.  The
    caller bumps the ladder's version (:func:`ladders.bump`) before the commit; under the ladder row's lock (taken
    here if it is not held yet) that is the version after this one.  The rows are stamped with it as they are
    written (not written a second time by the bump), unless they are half the ladder or more (a replay of the log,
    a refit's apply): then the ladder's ``rewritten_version`` is set to it instead, so that every reader reads the
    ladder's players anew, and the rows keep their stamps.  On PostgreSQL an update that changes no indexed column
    is written beside the old row, on its page (the table leaves room for it: migration 0041), with no index
    written: every player's rating rewritten in a third of the time, which every game of the ladder waits for."""
    ladders.lock(session, ladder_id)
    sql = "SELECT version, players_count FROM ladders WHERE id = ?"
    version, players = driver_sql(session.connection(), sql, (ladder_id,)).one()
    if not len(ids):
        return
    keys: list[int] = []
    columns: dict[str, list] = {"vector": [], "experience": [], "variance": []}
    for rows in chunks(len(ids)):  # a chunk at a time: one conversion of a million would hold the interpreter
        keys += ids[rows].tolist()
        columns["vector"] += codec.pack_rows(C[rows])
        if experience is not None:
            columns["experience"] += experience[rows].tolist()
        if variance is not None:
            columns["variance"] += variance[rows].tolist()
    columns = {name: values for name, values in columns.items() if values}
    columns["strength_then"] = [None] * len(ids)
    if 2 * len(ids) >= players:
        sql = "UPDATE ladders SET rewritten_version = ? WHERE id = ?"
        driver_sql(session.connection(), sql, (version + 1, ladder_id))
    else:
        columns["changed_version"] = [version + 1] * len(ids)
    bulk_update(session.connection(), Player.__table__, ladder_id, ("id", keys), columns)


def lock_vectors(session: Session, ladder_id: int, ids: np.ndarray, dim: int) -> np.ndarray:
    """Lock the players ``ids`` (sorted, each a player of the ladder) in id order, as game commits do, and read
    their vectors, in that order: a write of their rows outside a game commit (a replay written ahead) that then
    locks the ladder's row takes the locks in the commits' order.  More than :data:`MAX_KEYS_IN_QUERY` of them (a
    void deep in a big log reaches most players) are found among every player of the ladder, read in one statement
    a chunk at a time: lists of ids would cost some 8 µs a player on PostgreSQL (2.4 s for 300,000, every game of
    the ladder waiting)."""
    out = np.empty((len(ids), dim))
    columns = (Player.__table__.c.id, Player.__table__.c.vector)
    if len(ids) > MAX_KEYS_IN_QUERY:
        sql = "SELECT id, vector FROM players WHERE ladder_id = ? ORDER BY id FOR UPDATE"
        if session.get_bind().dialect.name == "sqlite":
            sql = sql.removesuffix(" FOR UPDATE")
        matched = 0
        for rows in driver_chunks(session.connection(), sql, (ladder_id,)):
            every = np.array([row[0] for row in rows], dtype=np.int64)
            at = np.searchsorted(ids, every)
            wanted = (at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == every)
            picked = [row[1] for row, keep in zip(rows, wanted.tolist(), strict=True) if keep]
            out[at[wanted]] = codec.unpack_rows(picked, dim)
            matched += len(picked)
        if matched != len(ids):
            raise LookupError(f"players of ladder {ladder_id} are gone")
        return out
    for span in chunks(len(ids), MAX_KEYS_IN_QUERY):
        part = ids[span].tolist()
        sql = f"SELECT id, vector FROM players WHERE ladder_id = ? AND id IN ({', '.join('?' * len(part))})"
        found = fetch_typed(session, f"{sql} ORDER BY id FOR UPDATE", (ladder_id, *part), columns)
        if [row[0] for row in found] != part:
            raise LookupError(f"players of ladder {ladder_id} are gone")
        out[span] = codec.unpack_rows((row[1] for row in found), dim)
    return out


def insert(session: Session, ladder_id: int, key: str, name: str | None, vector: np.ndarray) -> bool:
    """A new player; False if the key is taken."""
    blob = codec.pack(vector)
    values = {"ladder_id": ladder_id, "key": key, "name": name, "initial": blob, "vector": blob}
    try:
        with session.begin_nested():
            session.execute(Player.__table__.insert().values(**values, **dict.fromkeys(COUNTERS, 0)))
    except IntegrityError:
        return False
    ladders.add_counts(session, ladder_id, players=1)
    return True


async def vectors(
    fetch: Fetch, ladder_id: int, keys: list[str], dim: int
) -> tuple[tuple[int, bool, int, float | None] | None, dict[str, np.ndarray]]:
    """The ladder's (version, private, reset version) as :func:`app.storage.ladders.version_and_privacy` reads
    them, with its fitted draw share (:func:`app.rating.draw_share`; None: it is gone), and the vectors of
    ``keys`` (those that exist), in one statement (one snapshot): the prediction path.

    The statement text depends only on how many keys there are, so the drivers
    keep it prepared (sqlite3's statement cache, psycopg's automatic prepare).
    """
    marks = ", ".join("?" * len(keys))
    sql = (
        "SELECT l.version, l.private, l.reset_version, l.draws, l.draw_room, p.key, p.vector FROM ladders l "
        f"LEFT JOIN players p ON p.ladder_id = l.id AND p.key IN ({marks}) WHERE l.id = ? AND l.deleted_at IS NULL"
    )
    rows = await fetch(sql, (*keys, ladder_id))
    now = (rows[0][0], bool(rows[0][1]), rows[0][2], rating.draw_share(rows[0][3], rows[0][4])) if rows else None
    found = {key: codec.unpack(blob) for *_, key, blob in rows if key is not None and len(blob) == 8 * dim}
    return now, found


@dataclass
class Written:
    """A game commit's player rows as it wrote them, in id order: what lets its own process's copy follow it
    without reading them back (:func:`app.storage.read_model.note_commit`)."""

    locked: Locked
    C: np.ndarray
    counts: np.ndarray
    last_played: list[datetime | None]
    strength_then: np.ndarray
    experience: np.ndarray
    #: Each player's variance after the games, under the variance rule (mathematics §3b); None otherwise.
    variance: np.ndarray | None = None


def uncount(session: Session, ladder_id: int, player_ids: list[int], counts: np.ndarray) -> None:
    """Take counters (rows of COUNTERS) off the ladder's players: a voided game's record."""
    assignments = ", ".join(f"{name} = {name} - ?" for name in COUNTERS)
    rows = [(*row, player, ladder_id) for row, player in zip(counts.tolist(), player_ids, strict=True)]
    sql = f"UPDATE players SET {assignments}, changed_version = -1 WHERE id = ? AND ladder_id = ?"
    driver_sql(session.connection(), sql, rows)


def refresh_last_played(session: Session, ladder_id: int, player_ids: list[int]) -> None:
    """Each of the ladder's players' last-played time from the games that count (after a void)."""
    latest = (
        "SELECT max(g.played_at) FROM participants p JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id "
        "WHERE p.player_id = players.id AND p.ladder_id = players.ladder_id AND g.voided_at IS NULL"
    )
    update = f"UPDATE players SET last_played_at = ({latest}), changed_version = -1 WHERE id = ? AND ladder_id = ?"
    driver_sql(session.connection(), update, [(p, ladder_id) for p in player_ids])


def get_row(session: Session, ladder_id: int, key: str) -> tuple[int, str | None] | None:
    """(id, name) of a player, or None."""
    row = session.execute(
        select(Player.id, Player.name).where(Player.ladder_id == ladder_id, Player.key == key)
    ).first()
    return None if row is None else (row[0], row[1])


def merge_counters(session: Session, ladder_id: int, source_id: int, target_id: int) -> None:
    """Add the source player's counters and last-played time to the target's, then delete the source's row."""
    add = ", ".join(
        f"{name} = {name} + (SELECT {name} FROM players WHERE id = ? AND ladder_id = ?)" for name in COUNTERS
    )
    params = (*([source_id, ladder_id] * len(COUNTERS)), target_id, ladder_id)
    sql = f"UPDATE players SET {add}, changed_version = -1 WHERE id = ? AND ladder_id = ?"
    driver_sql(session.connection(), sql, params)
    refresh_last_played(session, ladder_id, [target_id])
    driver_sql(session.connection(), "DELETE FROM players WHERE id = ? AND ladder_id = ?", (source_id, ladder_id))
    ladders.add_counts(session, ladder_id, players=-1)


def rekey(session: Session, ladder_id: int, player_id: int, key: str, name: str | None = None) -> None:
    """The player's key becomes ``key``, and their name ``name`` if given (the caller rewrites the log and the
    aliases)."""
    named = ", name = ?" if name is not None else ""
    sql = f"UPDATE players SET key = ?{named}, changed_version = -1 WHERE id = ? AND ladder_id = ?"
    params = (key, *([name] if name is not None else []), player_id, ladder_id)
    driver_sql(session.connection(), sql, params)


def keys_and_names(session: Session, ladder_id: int) -> list[tuple[int, str, str | None]]:
    """(id, key, name) of every player of the ladder, in id order."""
    sql = "SELECT id, key, name FROM players WHERE ladder_id = ? ORDER BY id"
    return [tuple(row) for row in driver_fetchall(session.connection(), sql, (ladder_id,))]


def save_initial(session: Session, ladder_id: int, ids: np.ndarray, C0: np.ndarray) -> None:
    """New initial vectors (a new k), which are also the players' vectors until the log is replayed on them."""
    for rows in chunks(len(ids)):
        blobs, n = codec.pack_rows(C0[rows]), len(ids[rows])
        columns: dict[str, Sequence[Any]] = {"initial": blobs, "vector": blobs}
        columns |= {"strength_then": [None] * n, "changed_version": [PENDING] * n}
        bulk_update(session.connection(), Player.__table__, ladder_id, ("id", ids[rows].tolist()), columns)


def erase(session: Session, ladder_id: int, player_id: int, pseudonym: str) -> None:
    """The person is gone: their name removed, their key replaced by an opaque pseudonym, and off the leaderboard
    (inactive)."""
    rename = "UPDATE players SET key = ?, name = NULL, active = ?, changed_version = -1 WHERE id = ? AND ladder_id = ?"
    driver_sql(session.connection(), rename, (pseudonym, False, player_id, ladder_id))


def all_exist(session: Session, ladder_id: int, player_ids: np.ndarray) -> bool:
    """Whether every one of ``player_ids`` is still a player of the ladder: the ladder's ids read a chunk at a
    time through the driver, in id order (one call turning a million rows into objects would hold the interpreter)."""
    sql = "SELECT id FROM players WHERE ladder_id = ? ORDER BY id"
    chunks = driver_chunks(session.connection(), sql, (ladder_id,))
    ids = np.concatenate([np.empty(0, np.int64), *(np.array(rows, dtype=np.int64).reshape(-1) for rows in chunks)])
    return bool(codec.among(player_ids, ids).all())
