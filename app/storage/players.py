"""Player rows: vectors and counters, locked for writes, and a versioned per-process table for reads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Dialect, Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import rating
from app.storage import aliases, cache, codec, ladders, refits
from app.storage.sql import (
    Fetch,
    bulk_insert,
    bulk_update,
    chunks,
    driver_chunks,
    driver_fetchall,
    driver_sql,
    fetch_typed,
    result_converter,
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
    #: The keys this lock created, and when (none if a concurrent creator made some of them first).
    created: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    #: A concurrent creator made some of the players first.
    raced: bool = False


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
    rows = _select_for_update(session, ladder_id, keys)
    missing: list[str] = []
    now, raced = None, False
    if len(rows) < len(keys) and initial is not None:
        found = {row[1] for row in rows}
        missing = [k for k in keys if k not in found]
        if taken := aliases.find(session, ladder_id, missing):
            missing = [k for k in missing if k not in taken]
        n, now = len(missing), datetime.now(UTC)
        given = [(names or {}).get(k) for k in missing]
        if n and create(session, ladder_id, missing, initial(missing), given, [True] * n, [now] * n) < n:
            missing, raced = [], True  # a concurrent creator made some first: which ones are this one's is unknown
        rows = _select_for_update(session, ladder_id, keys)
    return Locked(
        index={row[1]: n for n, row in enumerate(rows)},
        ids=np.array([row[0] for row in rows], dtype=np.int64),
        C=codec.unpack_rows((row[2] for row in rows), dim),
        counts=np.array([tuple(row[3:8]) for row in rows], dtype=np.int64).reshape(-1, 5),
        last_played=[row[8] for row in rows],
        experience=np.array([row[9] for row in rows], dtype=np.float64),
        created=missing,
        created_at=now,
        raced=raced,
    )


_LOCK_COLUMNS = [
    Player.__table__.c[name] for name in ("id", "key", "vector", *COUNTERS, "last_played_at", "experience")
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
        # hold the interpreter for most of a second).
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
    id order instead, it walked every player of the ladder for each group commit."""
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
    new."""
    blobs = codec.pack_rows(C0)
    n, zeros = len(keys), [0] * len(keys)
    columns = {"ladder_id": [ladder_id] * n, "key": keys, "name": names, "active": active, "initial": blobs}
    columns |= {"vector": blobs, "created_at": created_at} | {c: zeros for c in COUNTERS}
    inserted = bulk_insert(session.connection(), Player.__table__, columns, on_conflict_do_nothing="ladder_id, key")
    ladders.count(session, ladder_id, players=inserted)
    return inserted


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


def existing(session: Session, ladder_id: int, keys: list[str]) -> set[str]:
    """Which of ``keys`` are players of the ladder."""
    found: set[str] = set()
    for lo in range(0, len(keys), MAX_KEYS_IN_QUERY):
        part = keys[lo : lo + MAX_KEYS_IN_QUERY]
        found.update(session.scalars(select(Player.key).where(Player.ladder_id == ladder_id, Player.key.in_(part))))
    return found


def save(session: Session, ladder_id: int, rows: Written, version: int) -> None:
    """New vectors, counters, last-played times and strengths just after the game of the locked rows, in one
    statement, stamped with the ladder's ``version`` this commit makes (each row written once, not again by
    :func:`app.storage.ladders.bump`).  A player who plays is active again."""
    columns: dict[str, Any] = {
        "vector": codec.pack_rows(rows.C),
        "last_played_at": rows.last_played,
        "strength_then": rows.strength_then.tolist(),
        "experience": rows.experience.tolist(),
        "active": [True] * len(rows.locked.ids),
    }
    columns |= {name: rows.counts[:, n].tolist() for n, name in enumerate(COUNTERS)}
    columns["changed_version"] = [version] * len(rows.locked.ids)
    bulk_update(session.connection(), Player.__table__, ladder_id, ("id", rows.locked.ids.tolist()), columns)


def change(session: Session, ladder_id: int, key: str, values: dict) -> bool:
    """Change a player's ``name`` or ``active``; False if there is no such player."""
    where = (Player.ladder_id == ladder_id, Player.key == key)
    query = Player.__table__.update().where(*where).values(**values, changed_version=PENDING)
    return session.execute(query).rowcount > 0


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
    session: Session, ladder_id: int, ids: np.ndarray, C: np.ndarray, experience: np.ndarray | None = None
) -> None:
    """New vectors (and, from a replay, ``experience``) from outside a game commit (a replay, a checkpoint): the
    strengths just after the players' last games are then unknown.  The caller bumps the ladder's version
    (:func:`ladders.bump`) before the commit; under the ladder row's lock (taken here if it is not held yet) that
    is the version after this one, so the rows are stamped with it as they are written, not written a second time
    by the bump (a replay rewrites every player)."""
    ladders.lock(session, ladder_id)
    version = driver_sql(session.connection(), "SELECT version FROM ladders WHERE id = ?", (ladder_id,)).scalar_one()
    for rows in chunks(len(ids)):  # a chunk at a time: a million players' conversion held the interpreter
        n = len(ids[rows])
        columns = {"vector": codec.pack_rows(C[rows]), "strength_then": [None] * n}
        if experience is not None:
            columns["experience"] = experience[rows].tolist()
        columns["changed_version"] = [version + 1] * n
        bulk_update(session.connection(), Player.__table__, ladder_id, ("id", ids[rows].tolist()), columns)


def insert(session: Session, ladder_id: int, key: str, name: str | None, vector: np.ndarray) -> bool:
    """A new player; False if the key is taken."""
    blob = codec.pack(vector)
    values = {"ladder_id": ladder_id, "key": key, "name": name, "initial": blob, "vector": blob}
    try:
        with session.begin_nested():
            session.execute(Player.__table__.insert().values(**values, **dict.fromkeys(COUNTERS, 0)))
    except IntegrityError:
        return False
    ladders.count(session, ladder_id, players=1)
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
class Table:
    """A ladder's players at one version, in id order, as columns: what leaderboards and profiles read.

    ``memo`` holds what readers derive from it (strengths, orders), computed
    once per version and per process.  A table is never changed in place:
    :meth:`caught_up` makes the next version's from the rows changed since.
    """

    version: int
    ids: np.ndarray
    keys: np.ndarray  # of str
    names: np.ndarray  # of str | None
    C: np.ndarray
    counts: np.ndarray  # (n, 5): COUNTERS
    last_played: np.ndarray  # microseconds since the epoch (int64), NO_TIME for never
    created: np.ndarray  # microseconds since the epoch (int64)
    active: np.ndarray  # of bool
    #: Hodge strength just after each player's last game (NaN: unknown).
    strength_then: np.ndarray
    #: What the results tell of each player, in games, as their next step counts it (app.rating.experience): their
    #: games, worn by their breaks where the ladder's steps follow time away.
    experience: np.ndarray
    #: Who the latest applied refit found its results do not place.
    placement: refits.Placement
    memo: dict[str, Any] = field(default_factory=dict)
    #: A past table's time (``as_of``, ISO 8601), which its leaderboard cursors name; None for the current one.
    as_of: str | None = None
    _row_of: dict[str, int] | None = None
    _key_rank: np.ndarray | None = None

    def row(self, key: str) -> int | None:
        if self._row_of is None:
            self._row_of = {k: n for n, k in enumerate(self.keys.tolist())}
        return self._row_of.get(key)

    def key_rank(self) -> np.ndarray:
        """Each row's place among the keys in sorted order: ties between equal scores are broken by key, and
        sorting by these numbers costs far less than by the strings."""
        if self._key_rank is None:
            rank = np.empty(len(self.keys), dtype=np.int64)
            rank[np.argsort(self.keys.astype(str), kind="stable")] = np.arange(len(self.keys))
            self._key_rank = rank
        return self._key_rank

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per table (readers in other threads may compute it too; the results agree)."""
        if name not in self.memo:
            self.memo[name] = compute()
        return self.memo[name]

    def caught_up(self, changed: Table, version: int, placement: refits.Placement) -> Table:
        """The table at ``version``: this one with the rows of ``changed`` (the players written since, in id
        order) in place of theirs, and new players in their place by id."""
        at = np.searchsorted(self.ids, changed.ids)
        known = at < len(self.ids)
        known[known] = self.ids[at[known]] == changed.ids[known]
        columns = {}
        for name in COLUMNS:
            old, new = getattr(self, name), getattr(changed, name)
            if known.all() and np.array_equal(old[at], new):  # unchanged (keys, names): shared, never written
                columns[name] = old
                continue
            column = old.copy()
            column[at[known]] = new[known]
            if not known.all():
                column = np.concatenate([column, new[~known]])
            columns[name] = column
        row_of, key_rank = self._row_of, self._key_rank  # kept while the keys stay as they were
        if not known.all():
            order = np.argsort(columns["ids"], kind="stable")
            columns = {name: column[order] for name, column in columns.items()}
            row_of = key_rank = None
        elif not np.array_equal(self.keys[at], changed.keys):  # an erased player's new key
            row_of = key_rank = None
        return Table(version=version, placement=placement, _row_of=row_of, _key_rank=key_rank, **columns)


COLUMNS = ("ids", "keys", "names", "C", "counts", "last_played", "created", "active", "strength_then", "experience")
_SELECT = (
    "SELECT id, key, name, vector, games, wins, draws, losses, comparisons, last_played_at, created_at, active, "
    "strength_then, changed_version, experience FROM players WHERE ladder_id = ?"
)
#: Every player of a ladder, and the players changed after a version.
EVERYONE = _SELECT + " ORDER BY id"
CHANGED = _SELECT + " AND changed_version > ? ORDER BY id"

#: Rows per NumPy conversion when a table is read (:func:`from_rows`).
CHUNK_ROWS = 50_000
#: Ladders whose tables this process keeps (the most recently read).
MAX_TABLES = 64


def from_rows(rows: list[tuple], version: int, dim: int, stamp: Callable[[Any], datetime | None]) -> Table:
    """A table of the rows of :data:`EVERYONE` or :data:`CHANGED`; ``stamp`` converts the driver's times.

    Its version is ``version`` (read before the rows) or the latest that changed a row read, if later: on
    PostgreSQL each statement sees the latest commits, and versions are given out in commit order, so rows
    of version v mean every change up to v is in.
    """
    version = max([version, *(r[13] for r in rows)])

    def objects(values: list) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    def numbers(pick: Callable[[list[tuple]], list], dtype: type) -> np.ndarray:
        # A chunk at a time: NumPy converts a list in one call that holds the interpreter (a million rows'
        # counts took a third of a second, stalling every other thread and /healthz).
        chunks = [np.array(pick(rows[lo : lo + CHUNK_ROWS]), dtype=dtype) for lo in range(0, len(rows), CHUNK_ROWS)]
        return np.concatenate(chunks) if chunks else np.array(pick([]), dtype=dtype)

    return Table(
        version=version,
        ids=numbers(lambda part: [r[0] for r in part], np.int64),
        keys=objects([r[1] for r in rows]),
        names=objects([r[2] for r in rows]),
        C=codec.unpack_rows((r[3] for r in rows), dim),
        counts=numbers(lambda part: [r[4:9] for r in part], np.int64).reshape(-1, 5),
        last_played=micros_column([r[9] for r in rows], stamp),
        created=micros_column([r[10] for r in rows], stamp),
        active=numbers(lambda part: [bool(r[11]) for r in part], bool),
        strength_then=numbers(lambda part: [np.nan if r[12] is None else r[12] for r in part], np.float64),
        experience=numbers(lambda part: [r[14] for r in part], np.float64),
        placement=refits.Placement(),
    )


#: ``last_played`` of a player who has not played.
NO_TIME = np.iinfo(np.int64).min
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(moment: datetime | None) -> int:
    """A time as whole microseconds since the epoch (exact, unlike seconds in a float), NO_TIME for None."""
    if moment is None:
        return NO_TIME
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


MICROS_PER_DAY = 86_400_000_000


def day_years(us: np.ndarray) -> np.ndarray:
    """The UTC days of times of :func:`micros`, in years (of 365.25 days) since the epoch, as the online steps
    count time away (:mod:`app.rating.experience`): games of one day do not wear each other, and a replay gives
    the same steps whenever it runs (NaN for NO_TIME)."""
    us = np.asarray(us, dtype=np.int64)
    return np.where(us == NO_TIME, np.nan, (us // MICROS_PER_DAY) / 365.25)


def micros_column(values: list, stamp: Callable[[Any], datetime | None]) -> np.ndarray:
    """:func:`micros` of a column of the driver's times: SQLite's text (UTC digits) parsed by NumPy at once (a
    million rows in 0.1 s, against 2 s one by one), other drivers' values one by one."""
    present = [v for v in values if v is not None]
    if present and isinstance(present[0], str):
        try:  # a chunk at a time, for the other threads (see from_rows)
            chunks = range(0, len(present), CHUNK_ROWS)
            parsed = np.concatenate(
                [np.array(present[lo : lo + CHUNK_ROWS], dtype="datetime64[us]").astype(np.int64) for lo in chunks]
            )
        except ValueError:  # not the digits SQLAlchemy writes: convert them one by one
            parsed = None
        if parsed is not None:
            out = np.full(len(values), NO_TIME, dtype=np.int64)
            out[np.array([v is not None for v in values], dtype=bool)] = parsed
            return out
    return np.array([micros(stamp(v)) for v in values], dtype=np.int64)


def moment(us: int) -> datetime | None:
    """The time of :func:`micros`."""
    return None if us == NO_TIME else _EPOCH + timedelta(microseconds=int(us))


def time_converter(dialect: Dialect) -> Callable[[Any], datetime | None]:
    """What the driver's times become, as the ORM would convert them."""
    return result_converter(Player.__table__.c.last_played_at, dialect)


def held_table(engine: Engine, ladder_id: int) -> Table | None:
    """This process's copy of the ladder's player table, at whatever version it is."""
    return cache.of(engine, "tables").get(ladder_id)


def keep(engine: Engine, ladder_id: int, fresh: Table) -> Table:
    """Keep ``fresh`` as this process's copy, unless a newer one is kept already; the copy kept."""
    tables = cache.of(engine, "tables")
    held = tables.get(ladder_id)
    if held is not None and held.version >= fresh.version:
        return held
    if len(tables) >= MAX_TABLES:
        tables.clear()
    tables[ladder_id] = fresh
    return fresh


def table(session: Session, ladder: ladders.LadderRow, cached: bool = True) -> Table:
    """The ladder's players as of now: this process's copy brought up to date, or read anew.

    The copy catches up by reading only the players changed since its version
    (one indexed statement), unless a change since could not be followed row
    by row (a merge).  Version and rows are read in one snapshot on
    PostgreSQL; on SQLite a read transaction is one.  A write transaction
    reads with ``cached=False``: what it sees may never commit.
    """
    current, reset = ladders.version_and_reset(session, ladder.id)
    held = settled(session.get_bind(), ladder.id) if cached else None
    if held is not None and held.version == current:
        return held
    stamp = time_converter(session.get_bind().dialect)
    connection, dim = session.connection(), 2 * ladder.k
    placement = refits.placement(session, ladder.id)
    if held is not None and held.version >= reset:
        changed = from_rows(driver_fetchall(connection, CHANGED, (ladder.id, held.version)), current, dim, stamp)
        fresh = held.caught_up(changed, changed.version, placement)
    else:
        fresh = from_rows(driver_fetchall(connection, EVERYONE, (ladder.id,)), current, dim, stamp)
        fresh.placement = placement
    return keep(session.get_bind(), ladder.id, fresh) if cached else fresh


@dataclass
class Written:
    """A game commit's player rows as it wrote them, in id order: what lets its own process's copy follow it
    without reading them back (:func:`follow`)."""

    locked: Locked
    C: np.ndarray
    counts: np.ndarray
    last_played: list[datetime | None]
    strength_then: np.ndarray
    experience: np.ndarray


def follow(engine: Engine, ladder_id: int, version: int, written: Written) -> bool:
    """Note, for this process's copy of the ladder, that the commit of ``version`` wrote the rows ``written``:
    the copy is brought up to date from the notes (:func:`settled`), without reading the rows back, at once for
    a ladder of up to :data:`FOLLOW_AT_ONCE` players, else by its next reader in one step however many commits
    it spans.  False (readers will read the rows) if the notes and the copy do not reach ``version - 1``."""
    notes = cache.of(engine, "following")
    with _following:
        held = held_table(engine, ladder_id)
        kept = notes.get(ladder_id, [])
        last = kept[-1][0] if kept else (held.version if held is not None else None)
        if last != version - 1:
            notes.pop(ladder_id, None)
            return False
        notes[ladder_id] = [*kept, (version, written)]
    if held is not None and len(held.ids) <= FOLLOW_AT_ONCE:
        settled(engine, ladder_id)  # cheap here, and it spares the next reader a thread
    return True


#: Up to this many players, the committing writer applies its notes at once (a copy of each column costs about a
#: millisecond per 100,000 players); beyond, its readers apply them, once for however many commits.
FOLLOW_AT_ONCE = 200_000


def settled(engine: Engine, ladder_id: int) -> Table | None:
    """This process's copy of the ladder with the commits noted since (:func:`follow`) applied: the rows they
    wrote replace the copy's, with one copy of each column for all of them."""
    with _following:
        held, notes = held_table(engine, ladder_id), cache.of(engine, "following").pop(ladder_id, None)
    if not notes or held is None or notes[0][0] != held.version + 1:
        return held
    rows: dict[int, tuple] = {}  # player id -> (key, vector, counts, last played, strength then, created, experience)
    for _, written in notes:
        locked = written.locked
        created = set(locked.created)
        for n, (player, key) in enumerate(zip(locked.ids.tolist(), locked.index, strict=True)):
            born = micros(locked.created_at) if key in created else rows.get(player, (None,) * 7)[5]
            then, known = written.strength_then[n], written.experience[n]
            rows[player] = (key, written.C[n], written.counts[n], written.last_played[n], then, born, known)
    ids = np.array(sorted(rows), dtype=np.int64)
    at = np.minimum(np.searchsorted(held.ids, ids), max(len(held.ids) - 1, 0))
    known = held.ids[at] == ids if len(held.ids) else np.zeros(len(ids), dtype=bool)
    if any(rows[player][5] is None for player in ids[~known].tolist()):
        return held  # a row neither held nor created by a noted commit: readers read the rows
    values = [rows[player] for player in ids.tolist()]
    names = np.full(len(ids), None, dtype=object)
    names[known] = held.names[at[known]]
    created = np.array([row[5] if row[5] is not None else 0 for row in values], dtype=np.int64)
    created[known] = held.created[at[known]]
    active = np.ones(len(ids), dtype=bool)  # they played: active again (:func:`save`)
    changed = Table(
        version=notes[-1][0],
        ids=ids,
        keys=np.array([row[0] for row in values], dtype=object),
        names=names,
        C=np.array([row[1] for row in values], dtype=np.float64).reshape(len(ids), held.C.shape[1]),
        counts=np.array([row[2] for row in values], dtype=np.int64).reshape(len(ids), len(COUNTERS)),
        last_played=np.array([micros(row[3]) for row in values], dtype=np.int64),
        created=created,
        active=active,
        strength_then=np.array([row[4] for row in values], dtype=np.float64),
        experience=np.array([row[6] for row in values], dtype=np.float64),
        placement=held.placement,
    )
    return keep(engine, ladder_id, held.caught_up(changed, changed.version, held.placement))


_following = threading.Lock()


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
    ladders.count(session, ladder_id, players=-1)


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
        columns = {"initial": blobs, "vector": blobs, "strength_then": [None] * n, "changed_version": [PENDING] * n}
        bulk_update(session.connection(), Player.__table__, ladder_id, ("id", ids[rows].tolist()), columns)


def erase(session: Session, ladder_id: int, player_id: int, pseudonym: str) -> None:
    """The person is gone: their name removed, their key replaced by an opaque pseudonym, and off the leaderboard
    (inactive)."""
    rename = "UPDATE players SET key = ?, name = NULL, active = ?, changed_version = -1 WHERE id = ? AND ladder_id = ?"
    driver_sql(session.connection(), rename, (pseudonym, False, player_id, ladder_id))


def all_exist(session: Session, ladder_id: int, player_ids: np.ndarray) -> bool:
    """Whether every one of ``player_ids`` is still a player of the ladder: the ladder's ids read a chunk at a
    time through the driver, in id order (one call turning a million rows into objects held the interpreter)."""
    sql = "SELECT id FROM players WHERE ladder_id = ? ORDER BY id"
    chunks = driver_chunks(session.connection(), sql, (ladder_id,))
    ids = np.concatenate([np.empty(0, np.int64), *(np.array(rows, dtype=np.int64).reshape(-1) for rows in chunks)])
    return bool(codec.among(player_ids, ids).all())
