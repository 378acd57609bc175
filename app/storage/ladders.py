"""Ladder rows: settings, sizes, and the version that keys every per-process read cache."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields, replace
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np
from sqlalchemy import Connection, Engine, case, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.core.errors import LadderChanged
from app.core.ladder import LadderRow
from app.core.ladder_settings import SETTINGS
from app.storage import aliases as storage_aliases
from app.storage import cache, events
from app.storage.sql import Fetch, driver_fetchall, driver_sql, fetch_typed, typed
from app.storage.tables import (
    ApiKey,
    Challenge,
    Checkpoint,
    Game,
    IdempotencyKey,
    Ladder,
    LadderEvent,
    LadderSlug,
    Participant,
    Player,
    Refit,
    Season,
    SeasonStanding,
    SlackCommand,
    SlackRequest,
    Webhook,
    WebhookDelivery,
)

_COLUMNS = [Ladder.__table__.c[f.name] for f in fields(LadderRow) if f.name != "aliases"]


def _row(row, session: Session | None = None) -> LadderRow:
    """A ladder row, with its aliases when ``session`` is given: kept per process by reset version (every change
    of an alias moves it), unless this transaction changed some (what it sees may never commit)."""
    ladder = LadderRow(*row)
    if session is None:
        return ladder
    if storage_aliases.changed(session):
        return replace(ladder, aliases=storage_aliases.of_ladder(session, ladder.id))
    held = cache.of(session, "aliases")  # ladder id -> (reset version, aliases)
    kept = held.get(ladder.id)
    if kept is not None and kept[0] == ladder.reset_version:
        return replace(ladder, aliases=kept[1])
    aliases = storage_aliases.of_ladder(session, ladder.id)
    if kept is None or kept[0] < ladder.reset_version:
        held[ladder.id] = (ladder.reset_version, aliases)
    return replace(ladder, aliases=aliases)


_BY_ID = f"SELECT {', '.join(c.name for c in _COLUMNS)} FROM ladders WHERE id = ? AND deleted_at IS NULL"


def by_slug(session: Session, slug: str) -> LadderRow | None:
    """The ladder as it is now (write transactions read it here: its settings may change).

    Read by its id, the column ladders are distributed by (docs/operations.md §6): the id this process last found
    for the slug, else the one ``ladder_slugs`` gives (a slug whose ladder was deleted may name another since).
    """
    held = cache.of(session, "ladders").get(slug)
    ladder = None if held is None else by_id(session, held.id)
    if ladder is None or ladder.slug != slug:
        found = session.execute(select(LadderSlug.ladder_id).where(LadderSlug.slug == slug)).first()
        ladder = None if found is None else by_id(session, found[0])
    if ladder is None:
        cache.of(session, "ladders").pop(slug, None)
        return None
    cache.of(session, "ladders")[slug] = ladder
    return ladder


def by_slugs(session: Session, slugs: list[str]) -> dict[str, LadderRow]:
    """:func:`by_slug` of several ladders in one statement, for those whose id this process knows (the others, to
    be read by :func:`by_slug`, are left out)."""
    held = cache.of(session, "ladders")
    ids = sorted({held[slug].id for slug in slugs if slug in held})
    if not ids:
        return {}
    # One ladder (a lane's group on PostgreSQL) by ``id = ?``, which a database sharded by ladder routes to its shard.
    where = "id = ?" if len(ids) == 1 else f"id IN ({', '.join('?' * len(ids))})"
    sql = f"SELECT {', '.join(c.name for c in _COLUMNS)} FROM ladders WHERE {where} AND deleted_at IS NULL"
    found = {}
    # A row as the driver gave it, but for its version (every commit moves it, and a write reads none of it), that
    # is the row read before makes the same ladder: kept, not converted and built again.
    seen = cache.of(session, "ladder_rows")  # id -> (the row without its version, the ladder)
    fresh = storage_aliases.changed(session)
    for raw in driver_fetchall(session.connection(), sql, tuple(ids)):
        same = raw[:_VERSION] + raw[_VERSION + 1 :]
        kept = None if fresh else seen.get(raw[0])
        if kept is not None and kept[0] == same:
            ladder = kept[1]
        else:
            ladder = _row(typed(session.connection(), [raw], _COLUMNS)[0], session)
            seen[ladder.id] = (same, ladder)
        if ladder.slug in slugs:
            found[ladder.slug] = held[ladder.slug] = ladder
    return found


_VERSION = [c.name for c in _COLUMNS].index("version")


def cached(session: Session, slug: str) -> LadderRow | None:
    """The ladder from this process's cache, read again if a change since moved its reset version (its k, its
    learning rate, how its keys match, its aliases).

    For reads: ``version`` and the settings only writes use (``private``, ``auto_refit``, …) may be stale.
    """
    ladder = cache.of(session, "ladders").get(slug)
    if ladder is not None:
        now = session.execute(select(Ladder.reset_version).where(Ladder.id == ladder.id)).first()
        if now is not None and now[0] == ladder.reset_version:
            return ladder
    return by_slug(session, slug)


def from_cache(engine: Engine, slug: str) -> LadderRow | None:
    """The ladder if this process has read it before through this database engine, else None."""
    return cache.of(engine, "ladders").get(slug)


def by_id(session: Session, ladder_id: int) -> LadderRow | None:
    rows = fetch_typed(session, _BY_ID, (ladder_id,), _COLUMNS)
    return _row(rows[0], session) if rows else None


def page_of_ladders(session: Session, limit: int | None, after: str | None, private: bool) -> list[LadderRow]:
    """Up to ``limit`` ladders (None: all) by slug, after the slug ``after``; the private ones too if ``private``."""
    query = select(*_COLUMNS).where(Ladder.deleted_at.is_(None))
    if after is not None:
        query = query.where(Ladder.slug > after)
    if not private:
        query = query.where(Ladder.private.is_(False))
    return [_row(row) for row in session.execute(query.order_by(Ladder.slug).limit(limit))]


def insert(session: Session, values: dict) -> LadderRow | None:
    """A new ladder; None if its slug is taken."""
    try:
        with session.begin_nested():
            ladder_id = session.execute(Ladder.__table__.insert().values(**values).returning(Ladder.id)).scalar_one()
            session.execute(LadderSlug.__table__.insert().values(slug=values["slug"], ladder_id=ladder_id))
    except IntegrityError:
        return None
    return by_id(session, ladder_id)


def delete(session: Session, ladder: LadderRow) -> None:
    """Delete everything in the ladder (players, games and their participants, keys, idempotency records, refits,
    checkpoints, events, challenges) and leave its row as a tombstone: slug ``~deleted~{id}`` (free again, and no
    slug the API takes), ``deleted_at``, a version that moved on.  Its id is never given to another ladder."""
    lock(session, ladder.id)
    tables = (SeasonStanding, Season, Checkpoint, Refit, IdempotencyKey, ApiKey, LadderEvent, Game, Player, Challenge)
    for table in tables:
        session.execute(table.__table__.delete().where(table.ladder_id == ladder.id))
    for hooked in (WebhookDelivery, Webhook, SlackRequest, SlackCommand):  # its webhooks and Slack command
        session.execute(hooked.__table__.delete().where(hooked.ladder_id == ladder.id))
    session.execute(LadderSlug.__table__.delete().where(LadderSlug.slug == ladder.slug))
    session.execute(
        Ladder.__table__.update()
        .where(Ladder.id == ladder.id)
        .values(
            slug=f"~deleted~{ladder.id}",
            deleted_at=datetime.now(UTC),
            version=Ladder.version + 1,
            reset_version=Ladder.version + 1,
            players_count=0,
            games_count=0,
            comparisons_count=0,
        )
    )
    cache.of(session, "ladders").pop(ladder.slug, None)


def forget(engine: Engine, slug: str) -> None:
    """Drop a ladder this process remembers under ``slug`` (it was deleted, and the slug may be taken again)."""
    cache.of(engine, "ladders").pop(slug, None)


def rate_choice(session: Session, ladder_id: int) -> dict | None:
    """The latest learning rate a refit chose and applied (``RateChoiceOut``'s fields), or None."""
    return session.execute(select(Ladder.rate_choice).where(Ladder.id == ladder_id)).scalar_one_or_none()


def change(session: Session, ladder_id: int, values: dict) -> None:
    """Change settings of a ladder (the caller bumps its version)."""
    session.execute(Ladder.__table__.update().where(Ladder.id == ladder_id).values(**values))


async def version_and_privacy(fetch: Fetch, ladder_id: int) -> tuple[int, bool, int, int] | None:
    """The ladder's version, whether it is private, its reset version and its rewritten version, as of now (None:
    it is gone)."""
    sql = "SELECT version, private, reset_version, rewritten_version FROM ladders WHERE id = ? AND deleted_at IS NULL"
    rows = await fetch(sql, (ladder_id,))
    return (rows[0][0], bool(rows[0][1]), rows[0][2], rows[0][3]) if rows else None


def version_and_reset(session: Session, ladder_id: int) -> tuple[int, int]:
    """The ladder's version, and the version a copy of its players must be at to catch up row by row: its reset or
    its rewritten version, the later (0, 0 if it is gone)."""
    query = select(Ladder.version, Ladder.reset_version, Ladder.rewritten_version).where(Ladder.id == ladder_id)
    row = session.execute(query).first()
    return (row[0], max(row[1], row[2])) if row is not None else (0, 0)


def sizes(session: Session, ladder_id: int) -> tuple[int, int]:
    """(players, games that count) of a ladder, as kept (:func:`add_counts`): one row read, whatever its size."""
    row = session.execute(select(Ladder.players_count, Ladder.games_count).where(Ladder.id == ladder_id)).first()
    return (row[0], row[1]) if row is not None else (0, 0)


def counted_sizes(session: Session, ladder_id: int, voided: bool = False) -> tuple[int, int]:
    """(players, games that count, or with ``voided`` all games) of a ladder, counted row by row: what
    ``/audit`` checks :func:`sizes` against, and what an export states."""
    players = session.scalar(select(func.count()).select_from(Player).where(Player.ladder_id == ladder_id))
    counted = [] if voided else [Game.voided_at.is_(None)]
    games = session.scalar(select(func.count()).select_from(Game).where(Game.ladder_id == ladder_id, *counted))
    return players or 0, games or 0


def add_counts(
    session: Session,
    ladder_id: int,
    players: int = 0,
    games: int = 0,
    draws: int = 0,
    draw_room: float = 0.0,
    comparisons: int = 0,
) -> None:
    """Players, games (that count) and their comparisons (``Ladder.comparisons_count``), and drawn two-sided games
    with their room for a draw (``Ladder.draw_room``) this transaction adds (or, negative, removes): :func:`bump`
    adds them to the ladder's counts in the statement that gives out its new version."""
    pending = session.info.setdefault("ladder_counts", {})
    had = pending.get(ladder_id, NO_COUNTS)
    pending[ladder_id] = (had[0] + players, had[1] + games, had[2] + comparisons, had[3] + draws, had[4] + draw_room)


#: What :func:`add_counts` adds to a ladder: players, games, comparisons, draws, draw room.
NO_COUNTS = (0, 0, 0, 0, 0.0)


def comparisons(session: Session, ladder_id: int) -> int:
    """The comparisons (pairs of sides: one for a two-sided game, N(N - 1)/2 for N sides) of the ladder's games
    that count, as kept: one row read."""
    return int(session.scalar(select(Ladder.comparisons_count).where(Ladder.id == ladder_id)) or 0)


def counted_comparisons(session: Session, ladder_id: int) -> int:
    """:func:`comparisons`, counted from the games' rows: what ``/audit`` checks it against."""
    return int(driver_sql(session.connection(), COUNTED_COMPARISONS, (ladder_id,)).scalar() or 0)


#: The comparisons of a ladder's games that count, from their participants' sides (one parameter: the ladder).
COUNTED_COMPARISONS = (
    "SELECT COALESCE(SUM(n * (n - 1) / 2), 0) FROM (SELECT COUNT(DISTINCT p.side) AS n FROM participants p "
    "JOIN games g ON g.id = p.game_id WHERE g.ladder_id = ? AND p.ladder_id = g.ladder_id "
    "AND g.voided_at IS NULL GROUP BY p.game_id) AS sides"
)


def draw_counts(session: Session, ladder_id: int, first_game_id: int, last_game_id: int) -> tuple[int, float]:
    """The drawn two-sided games that count among the ladder's games ``first_game_id`` to ``last_game_id`` and
    their summed room for a draw, from their forecasts as stored (side 0's scores, :func:`app.rating.two_sided_draws`
    of the games): what a replay that rewrites those forecasts takes off the ladder's counts before adding its own."""
    side0 = Participant.side == 0
    per_game = (
        select(
            func.max(Participant.side).label("last_side"),
            func.min(case((side0, Participant.actual_score))).label("actual"),
            func.min(case((side0, Participant.expected_score))).label("expected"),
        )
        .join(Game, Game.id == Participant.game_id)
        .where(
            Participant.ladder_id == ladder_id,
            Participant.game_id.between(first_game_id, last_game_id),
            Game.ladder_id == ladder_id,
            Game.voided_at.is_(None),
        )
        .group_by(Participant.game_id)
        .subquery()
    )
    p = per_game.c.expected
    room = 2 * case((p < 1 - p, p), else_=1 - p)
    draws, total = session.execute(
        select(func.count(case((per_game.c.actual == 0.5, 1))), func.coalesce(func.sum(room), 0.0)).where(
            per_game.c.last_side == 1
        )
    ).one()
    return int(draws), float(total)


def version(session: Session, ladder_id: int) -> int:
    return session.scalar(select(Ladder.version).where(Ladder.id == ladder_id)) or 0


def history_rewrite(session: Session, ladder_id: int) -> str | None:
    """The rewrite whose history the ladder's stored history holds ahead of its change (``Ladder.history_rewrite``);
    None: the stored history is the log's."""
    sql = "SELECT history_rewrite FROM ladders WHERE id = ?"
    return driver_sql(session.connection(), sql, (ladder_id,)).scalar_one_or_none()


def history_rewrites(session: Session) -> list[tuple[int, str]]:
    """Every ladder with a rewrite in progress (``Ladder.history_rewrite``): (id, rewrite)."""
    sql = "SELECT id, history_rewrite FROM ladders WHERE history_rewrite IS NOT NULL ORDER BY id"
    return [(int(i), str(r)) for i, r in driver_sql(session.connection(), sql, ()).all()]


def set_history_rewrite(session: Session, ladder_id: int, rewrite: str | None) -> None:
    driver_sql(session.connection(), "UPDATE ladders SET history_rewrite = ? WHERE id = ?", (rewrite, ladder_id))


def lock(session: Session, ladder_id: int) -> None:
    """Lock the ladder's row until the commit (PostgreSQL; SQLite's writer holds the database already).

    Game commits take this lock (:func:`take_seqs`) before they read the shared state (the learned seats,
    the field's sum) and allocate game ids; a replay that rewrites the log below its end takes it after the
    player rows (:func:`app.storage.players.lock_all`), before it reads anything, so no game commits between
    what the replay reads and what it writes.  A game between players new to the ladder holds none of the
    rows the replay locked, but it waits here."""
    if session.get_bind().dialect.name == "postgresql":
        driver_sql(session.connection(), "SELECT id FROM ladders WHERE id = ? FOR UPDATE", (ladder_id,))


#: PostgreSQL: ``?`` new game ids, as an array (in the order they were given out).
NEW_GAME_IDS = "SELECT array_agg(nextval(pg_get_serial_sequence('games', 'id'))) FROM generate_series(1, ?)"
#: The settings a game commit applies, read before its locks: a change of one meanwhile makes it retry.
_WRITE_SETTINGS = tuple(name for name, setting in SETTINGS.items() if setting.commit)


class Taken(NamedTuple):
    """A ladder's next game numbers, its kept field sum, its version and (PostgreSQL) new game ids."""

    seqs: list[int]
    kept: dict | None
    version: int
    ids: list[int] | None


def take_seqs(session: Session, ladder: LadderRow, n: int) -> Taken:
    """:func:`take_seqs_of` one ladder."""
    return take_seqs_of(session, [(ladder, n)])[ladder.id]


def take_seqs_of(session: Session, wanted: list[tuple[LadderRow, int]]) -> dict[int, Taken]:
    """For each (ladder, n): its next ``n`` game numbers (1, 2, 3, …), its kept field sum as of now (``kept`` for
    :func:`~app.storage.ladder_state.field_sum`), its version (:func:`bump` gives out the next one) and, on
    PostgreSQL, ``n`` new game ids (:func:`app.storage.games.allocate_ids`), in one statement whatever the ladders.

    This locks the ladders' rows until the commit (on PostgreSQL other writers
    of a ladder wait here; the rows are locked in id order), so take them after
    the players' rows, just before the games are written, for numbers in the
    order the games commit.  :class:`LadderChanged` if a setting the
    transaction's ``ladder`` read before has changed meanwhile (k, the learning
    rate, how keys match): the caller retries with the ladder as it is now.
    """
    postgresql = session.get_bind().dialect.name == "postgresql"
    if len(wanted) == 1:  # by ``id = ?``: routed to the ladder's shard where the ladders are distributed
        return {wanted[0][0].id: _take_one(session, *wanted[0], postgresql)}
    rows = ", ".join(["(CAST(? AS BIGINT), CAST(? AS BIGINT))"] * len(wanted))
    settings = ", ".join(f"ladders.{name}" for name in _WRITE_SETTINGS)
    locked, tables, ids = "", "v", ""
    if postgresql:
        locked = ", locked AS (SELECT id FROM ladders WHERE id IN (SELECT id FROM v) ORDER BY id FOR UPDATE)"
        tables = "v JOIN locked ON locked.id = v.id"
        ids = f", ({NEW_GAME_IDS.replace('?', 'v.n')})"
    sql = (
        f"WITH v(id, n) AS (VALUES {rows}){locked} UPDATE ladders SET last_seq = ladders.last_seq + v.n "
        f"FROM {tables} WHERE ladders.id = v.id "
        f"RETURNING ladders.id, ladders.last_seq, ladders.field_sum, ladders.version, {settings}{ids}"
    )
    parameters = tuple(value for ladder, n in wanted for value in (ladder.id, n))
    found = {int(row[0]): row[1:] for row in driver_sql(session.connection(), sql, parameters).all()}
    return {ladder.id: _taken(ladder, n, found[ladder.id], postgresql) for ladder, n in wanted}


def _take_one(session: Session, ladder: LadderRow, n: int, postgresql: bool) -> Taken:
    settings = ", ".join(_WRITE_SETTINGS)
    sql = f"UPDATE ladders SET last_seq = last_seq + ? WHERE id = ? RETURNING last_seq, field_sum, version, {settings}"
    parameters: tuple = (n, ladder.id)
    if postgresql:
        sql += f", ({NEW_GAME_IDS})"
        parameters += (n,)
    return _taken(ladder, n, tuple(driver_sql(session.connection(), sql, parameters).one()), postgresql)


def _taken(ladder: LadderRow, n: int, row: tuple, postgresql: bool) -> Taken:
    """A ladder's :class:`Taken` from its row as the update returned it; :class:`LadderChanged` if a setting the
    transaction read before has changed."""
    last, kept, version, *now = row
    new_ids = sorted(now.pop()) if postgresql else None
    if tuple(now) != tuple(getattr(ladder, name) for name in _WRITE_SETTINGS):
        raise LadderChanged()
    return Taken(
        list(range(last - n + 1, last + 1)), json.loads(kept) if isinstance(kept, str) else kept, version, new_ids
    )


def log_events(session: Session, ladder_id: int) -> None:
    """Write the events this transaction noted for the ladder at its current version, without a new one: a
    change no read shows (a key revoked).  Numbered under the ladder row's lock, as :func:`bump` numbers them."""
    noted = events.noted(session, ladder_id)
    sql = "UPDATE ladders SET last_event = last_event + ? WHERE id = ? RETURNING version, last_event"
    version, last_event = driver_sql(session.connection(), sql, (len(noted), ladder_id)).one()
    events.write(session, [(ladder_id, version, noted, last_event)])


class Change(NamedTuple):
    """What a game commit changes on a ladder's row beside its version (:func:`bump`): the players it created;
    the games, their comparisons, and the drawn two-sided games and their room for a draw it adds (None: its games
    do not count); the field after it (the sum of the players' vectors and their number; None: as kept); and its
    events, in order."""

    players: int
    counted: tuple[int, int, int, float] | None
    field: tuple[np.ndarray, int] | None
    events: list[tuple[str, dict]]


def bump(
    session: Session,
    ladder_ids: list[int],
    reset: bool = False,
    stamped: bool = False,
    changes: Mapping[int, Change] | None = None,
) -> dict[int, int]:
    r"""Mark the ladders changed by this transaction; call it last, just before the commit.

    The player rows the transaction wrote (``changed_version`` -1) are stamped
    with the new version, so readers catch up by reading them alone (a game
    commit writes its players' rows with it already, ``stamped``: :func:`take_seqs`); with
    ``reset`` (rows were deleted) readers older than this version read the
    players anew.  On PostgreSQL this locks the ladder's row until the commit,
    so it comes after every other lock (one order: no deadlocks) and is held
    briefly; versions, and the numbers of the events the transaction noted
    (:mod:`app.storage.events`), are then given out in commit order.  The players and games the transaction
    :func:`add_counts` noted are added to the ladders' counts in the same statement.
    Returns each ladder's new version.
    """
    changes = changes or {}
    counts, fields = _counted(session, changes)
    ids = sorted(set(ladder_ids) | set(counts) | set(fields))
    if not ids:
        return {}
    noted = {
        ladder_id: events.noted(session, ladder_id, changes[ladder_id].events if ladder_id in changes else [])
        for ladder_id in ids
    }
    rows = [
        (ladder_id, *counts.get(ladder_id, NO_COUNTS), fields.get(ladder_id), len(noted[ladder_id]))
        for ladder_id in ids
    ]
    found = _advance(session.connection(), rows, reset)
    versions = {ladder_id: version for ladder_id, version, _ in found}
    if not stamped:
        _stamp_players(session.connection(), versions)
    events.write(session, [(ladder_id, versions[ladder_id], noted[ladder_id], last) for ladder_id, _, last in found])
    return versions


def _counted(session: Session, changes: Mapping[int, Change]) -> tuple[dict[int, tuple], dict[int, str]]:
    """Each ladder's counts to add (players, games, comparisons, draws, draw room): those :func:`add_counts` noted
    in the transaction and those of ``changes``; and the field each change sets, as the JSON the row keeps."""
    counts = session.info.pop("ladder_counts", {})
    fields: dict[int, str] = {}
    for ladder_id, change in changes.items():
        games, compared, draws, room = change.counted or NO_COUNTS[1:]
        had = counts.get(ladder_id, NO_COUNTS)
        counts[ladder_id] = (had[0] + change.players, had[1] + games, had[2] + compared, had[3] + draws, had[4] + room)
        if change.field is not None:
            total, number = change.field
            fields[ladder_id] = json.dumps({"sum": total.tolist(), "count": number})
    return counts, fields


def _advance(connection: Connection, rows: list[tuple], reset: bool) -> list[tuple[int, int, int]]:
    """One statement: each ladder's version up by one, its counts added, its field set and its event numbers taken;
    (id, new version, last event number) of each, by id."""
    if len(rows) == 1:  # by ``id = ?``: routed to the ladder's shard where the ladders are distributed
        found = driver_sql(connection, _bump_one(reset, rows[0][6] is not None), _one(rows[0])).all()
    else:
        found = driver_sql(connection, _bump_statement(connection.dialect.name, len(rows), reset), _flat(rows)).all()
    return sorted((int(ladder_id), int(version), int(last)) for ladder_id, version, last in found)


def _stamp_players(connection: Connection, versions: dict[int, int]) -> None:
    """Stamp the player rows the transaction wrote (``changed_version`` -1) with their ladder's new version."""
    stamp = "UPDATE players SET changed_version = ? WHERE ladder_id = ? AND changed_version = -1"
    for ladder_id, version in versions.items():
        driver_sql(connection, stamp, (version, ladder_id))


def _bump_statement(dialect: str, n: int, reset: bool) -> str:
    """:func:`bump`'s one statement for ``n`` ladders, each row (id, players, games, comparisons, draws, draw room,
    field sum or NULL, events): on PostgreSQL their rows are locked in id order first (one order: no deadlocks)."""
    field = "CAST(? AS JSON)" if dialect == "postgresql" else "?"
    row = "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), "
    row += f"CAST(? AS FLOAT), {field}, CAST(? AS BIGINT))"
    tables = "v"
    locked = ""
    if dialect == "postgresql":
        locked = ", locked AS (SELECT id FROM ladders WHERE id IN (SELECT id FROM v) ORDER BY id FOR UPDATE)"
        tables = "v JOIN locked ON locked.id = v.id"
    also = ", reset_version = ladders.version + 1" if reset else ""
    return (
        f"WITH v(id, players, games, comparisons, draws, room, field, events) AS (VALUES {', '.join([row] * n)})"
        f"{locked} UPDATE ladders SET version = ladders.version + 1{also}, "
        "players_count = ladders.players_count + v.players, games_count = ladders.games_count + v.games, "
        "comparisons_count = ladders.comparisons_count + v.comparisons, draws = ladders.draws + v.draws, "
        "draw_room = ladders.draw_room + v.room, "
        "field_sum = CASE WHEN v.field IS NULL THEN ladders.field_sum ELSE v.field END, "
        f"last_event = ladders.last_event + v.events FROM {tables} WHERE ladders.id = v.id "
        "RETURNING ladders.id, ladders.version, ladders.last_event"
    )


def _bump_one(reset: bool, field: bool) -> str:
    also = ", reset_version = version + 1" if reset else ""
    kept = ", field_sum = ?" if field else ""
    return (
        f"UPDATE ladders SET version = version + 1{also}, players_count = players_count + ?, "
        "games_count = games_count + ?, comparisons_count = comparisons_count + ?, draws = draws + ?, "
        f"draw_room = draw_room + ?{kept}, "
        "last_event = last_event + ? WHERE id = ? RETURNING id, version, last_event"
    )


def _one(row: tuple) -> tuple:
    """One ladder's row of :func:`bump` as :func:`_bump_one` takes its parameters."""
    ladder_id, players, games, compared, draws, room, field, events = row
    return (players, games, compared, draws, float(room), *([field] if field is not None else []), events, ladder_id)


def _flat(rows: list[tuple]) -> tuple:
    return tuple(value for row in rows for value in row)
