"""The read model: this process's copy of each ladder's player table, which leaderboards, profiles and reports read.

A :class:`Table` holds a ladder's players at one ladder version, in id order,
as columns; it is never changed in place, and each process keeps the newest it
has read per database engine and ladder (:func:`held_table`).  A reader gets a
current one with :func:`current_table`, which brings the copy up to the
ladder's version by reading only the rows changed since (``changed_version``),
or every row after a change that cannot be followed row by row (a merge, a new
k); the async read path does the same with :data:`CHANGED` and keeps what it
read with :func:`hold_newest`.  A game commit notes the rows it wrote
(:func:`note_commit`), and its own process's copy catches up from those notes
without reading them back (:func:`apply_notes`, at once for a small ladder,
else by the next reader).  A write transaction reads with ``cached=False``:
what it sees may never commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session

from app.core.ladder import LadderRow
from app.storage import cache, codec, ladders, refits
from app.storage.players import COUNTERS, Written
from app.storage.sql import driver_chunks, driver_fetchall


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
    last_played: np.ndarray  # microseconds since the epoch (int64), codec.NO_TIME for never
    created: np.ndarray  # microseconds since the epoch (int64)
    active: np.ndarray  # of bool
    #: Hodge strength just after each player's last game (NaN: unknown).
    strength_then: np.ndarray
    #: What the results tell of each player, in games, as their next step counts it (app.rating.experience): their
    #: games, worn by their breaks where the ladder's steps follow time away.
    experience: np.ndarray
    #: Each player's variance under the variance rule (mathematics §3b); NaN: none (yet, or the other rule).
    variance: np.ndarray
    #: Who the latest applied refit found its results do not place.
    placement: refits.Placement
    memo: dict[Hashable, Any] = field(default_factory=dict)
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

    def derived(self, name: Hashable, compute: Callable[[], Any]) -> Any:
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


COLUMNS = (
    "ids",
    "keys",
    "names",
    "C",
    "counts",
    "last_played",
    "created",
    "active",
    "strength_then",
    "experience",
    "variance",
)
_SELECT = (
    "SELECT id, key, name, vector, games, wins, draws, losses, comparisons, last_played_at, created_at, active, "
    "strength_then, changed_version, experience, variance FROM players WHERE ladder_id = ?"
)
#: Every player of a ladder, and the players changed after a version.
EVERYONE = _SELECT + " ORDER BY id"
CHANGED = _SELECT + " AND changed_version > ? ORDER BY id"

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
        # A chunk at a time: NumPy converts a list in one call that holds the interpreter (over a million rows,
        # long enough to stall every other thread and /healthz).
        chunks: list[np.ndarray] = [
            np.array(pick(rows[lo : lo + codec.CHUNK_ROWS]), dtype=dtype)
            for lo in range(0, len(rows), codec.CHUNK_ROWS)
        ]
        return np.concatenate(chunks) if chunks else np.array(pick([]), dtype=dtype)

    return Table(
        version=version,
        ids=numbers(lambda part: [r[0] for r in part], np.int64),
        keys=objects([r[1] for r in rows]),
        names=objects([r[2] for r in rows]),
        C=codec.unpack_rows((r[3] for r in rows), dim),
        counts=numbers(lambda part: [r[4:9] for r in part], np.int64).reshape(-1, 5),
        last_played=codec.micros_column([r[9] for r in rows], stamp),
        created=codec.micros_column([r[10] for r in rows], stamp),
        active=numbers(lambda part: [bool(r[11]) for r in part], bool),
        strength_then=numbers(lambda part: [np.nan if r[12] is None else r[12] for r in part], np.float64),
        experience=numbers(lambda part: [r[14] for r in part], np.float64),
        variance=numbers(lambda part: [np.nan if r[15] is None else r[15] for r in part], np.float64),
        placement=refits.Placement(),
    )


def from_chunks(
    chunks: Iterable[list[tuple]], version: int, dim: int, stamp: Callable[[Any], datetime | None]
) -> Table:
    """:func:`from_rows` of rows read a chunk at a time: a ladder's rows as the driver's tuples would take some 500
    bytes a player at once (50 MB at 100,000), memory the worker would keep, pinned by the keys the table keeps;
    a chunk's tuples are freed before the next chunk is read, which reuses their memory."""
    parts = [from_rows(chunk, version, dim, stamp) for chunk in chunks] or [from_rows([], version, dim, stamp)]
    if len(parts) == 1:
        return parts[0]
    columns: dict[str, Any] = {name: np.concatenate([getattr(part, name) for part in parts]) for name in COLUMNS}
    return replace(parts[0], version=max(part.version for part in parts), **columns)


def held_table(engine: Engine | Connection, ladder_id: int) -> Table | None:
    """This process's copy of the ladder's player table, at whatever version it is."""
    return cache.of(engine, "tables").get(ladder_id)


def hold_newest(engine: Engine | Connection, ladder_id: int, fresh: Table) -> Table:
    """Keep ``fresh`` as this process's copy, unless a newer one is kept already; the copy kept."""
    tables = cache.of(engine, "tables")
    held = tables.get(ladder_id)
    if held is not None and held.version >= fresh.version:
        return held
    if len(tables) >= MAX_TABLES:
        tables.clear()
    tables[ladder_id] = fresh
    return fresh


def current_table(session: Session, ladder: LadderRow, cached: bool = True) -> Table:
    """The ladder's players as of now: this process's copy brought up to date, or read anew.

    The copy catches up by reading only the players changed since its version
    (one indexed statement), unless a change since could not be followed row
    by row (a merge).  Version and rows are read in one snapshot on
    PostgreSQL; on SQLite a read transaction is one.  A write transaction
    reads with ``cached=False``: what it sees may never commit.
    """
    current, reset = ladders.version_and_reset(session, ladder.id)
    held = apply_notes(session.get_bind(), ladder.id) if cached else None
    if held is not None and held.version == current:
        return held
    stamp = codec.time_converter(session.get_bind().dialect)
    connection, dim = session.connection(), 2 * ladder.k
    placement = refits.placement(session, ladder.id)
    if held is not None and held.version >= reset:
        changed = from_rows(driver_fetchall(connection, CHANGED, (ladder.id, held.version)), current, dim, stamp)
        fresh = held.caught_up(changed, changed.version, placement)
    else:
        fresh = from_chunks(driver_chunks(connection, EVERYONE, (ladder.id,)), current, dim, stamp)
        fresh.placement = placement
    return hold_newest(session.get_bind(), ladder.id, fresh) if cached else fresh


def note_commit(engine: Engine, ladder_id: int, version: int, written: Written) -> bool:
    """Note, for this process's copy of the ladder, that the commit of ``version`` wrote the rows ``written``:
    the copy is brought up to date from the notes (:func:`apply_notes`), without reading the rows back, at once for
    a ladder of up to :data:`APPLY_AT_ONCE` players, else by its next reader in one step however many commits
    it spans.  False (readers will read the rows) if the notes and the copy do not reach ``version - 1``."""
    notes = cache.of(engine, "commit notes")
    with _notes_lock:
        held = held_table(engine, ladder_id)
        kept = notes.get(ladder_id, [])
        last = kept[-1][0] if kept else (held.version if held is not None else None)
        if last != version - 1:
            notes.pop(ladder_id, None)
            return False
        notes[ladder_id] = [*kept, (version, written)]
    if held is not None and len(held.ids) <= APPLY_AT_ONCE:
        apply_notes(engine, ladder_id)  # cheap here, and it spares the next reader a thread
    return True


#: Up to this many players, the committing writer applies its notes at once (a copy of each column costs about a
#: millisecond per 100,000 players); beyond, its readers apply them, once for however many commits.
APPLY_AT_ONCE = 200_000


def apply_notes(engine: Engine | Connection, ladder_id: int) -> Table | None:
    """This process's copy of the ladder with the commits noted since (:func:`note_commit`) applied: the rows they
    wrote replace the copy's, with one copy of each column for all of them."""
    with _notes_lock:
        held, notes = held_table(engine, ladder_id), cache.of(engine, "commit notes").pop(ladder_id, None)
    if not notes or held is None or notes[0][0] != held.version + 1:
        return held
    # player id -> (key, vector, counts, last played, strength then, created, experience, variance)
    rows: dict[int, tuple] = {}
    born_names: dict[int, str] = {}  # the names the noted commits gave the players they created
    for _, written in notes:
        locked = written.locked
        created_keys = set(locked.created)
        for n, (player, key) in enumerate(zip(locked.ids.tolist(), locked.index, strict=True)):
            born = codec.micros(locked.created_at) if key in created_keys else rows.get(player, (None,) * 8)[5]
            if key in locked.created_names:
                born_names[player] = locked.created_names[key]
            then, known = written.strength_then[n], written.experience[n]
            variance = np.nan if written.variance is None else written.variance[n]
            rows[player] = (key, written.C[n], written.counts[n], written.last_played[n], then, born, known, variance)
    ids = np.array(sorted(rows), dtype=np.int64)
    at = np.minimum(np.searchsorted(held.ids, ids), max(len(held.ids) - 1, 0))
    known = held.ids[at] == ids if len(held.ids) else np.zeros(len(ids), dtype=bool)
    if any(rows[player][5] is None for player in ids[~known].tolist()):
        return held  # a row neither held nor created by a noted commit: readers read the rows
    values = [rows[player] for player in ids.tolist()]
    names = np.array([born_names.get(player) for player in ids.tolist()], dtype=object)
    names[known] = held.names[at[known]]
    created = np.array([row[5] if row[5] is not None else 0 for row in values], dtype=np.int64)
    created[known] = held.created[at[known]]
    active = np.ones(len(ids), dtype=bool)  # they played: active again (:func:`app.storage.players.save`)
    changed = Table(
        version=notes[-1][0],
        ids=ids,
        keys=np.array([row[0] for row in values], dtype=object),
        names=names,
        C=np.array([row[1] for row in values], dtype=np.float64).reshape(len(ids), held.C.shape[1]),
        counts=np.array([row[2] for row in values], dtype=np.int64).reshape(len(ids), len(COUNTERS)),
        last_played=np.array([codec.micros(row[3]) for row in values], dtype=np.int64),
        created=created,
        active=active,
        strength_then=np.array([row[4] for row in values], dtype=np.float64),
        experience=np.array([row[6] for row in values], dtype=np.float64),
        variance=np.array([row[7] for row in values], dtype=np.float64),
        placement=held.placement,
    )
    return hold_newest(engine, ladder_id, held.caught_up(changed, changed.version, held.placement))


_notes_lock = threading.Lock()
