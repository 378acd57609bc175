"""The game log's rows: games and participants (every member's vector before and after)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import and_, bindparam, func, select
from sqlalchemy.orm import Session

from app import rating
from app.storage import codec
from app.storage.ladders import NEW_GAME_IDS
from app.storage.players import MAX_KEYS_IN_QUERY
from app.storage.sql import (
    bulk_insert,
    bulk_update,
    chunks,
    driver_fetchall,
    driver_sql,
    fetch_typed,
    unindexed_on_sqlite,
)
from app.storage.tables import Game, Participant, Player

Progress = Callable[[int, int], None] | None
#: The most player appearances a page of games holds (each with its vectors before and after): 500 games of
#: ten players, or two of the largest (2,048 players), some 1 MB of JSON.
PAGE_APPEARANCES = 5_000


def allocate_ids(session: Session, n: int) -> list[int]:
    """``n`` increasing game ids, to be taken while the participants are locked (they order the log); a game
    commit on PostgreSQL takes them with its numbers instead (:func:`app.storage.ladders.take_seqs`)."""
    if session.get_bind().dialect.name == "postgresql":
        return sorted(driver_sql(session.connection(), NEW_GAME_IDS, (n,)).scalar_one())
    # SQLite: the write transaction (BEGIN IMMEDIATE) excludes every other writer.  Ids this transaction took
    # for games it has not inserted yet (a group commit writes its ladders' games together) are not in the table.
    start = session.info.get("next_game_id")
    if start is None:
        start = (driver_sql(session.connection(), "SELECT max(id) FROM games", ()).scalar() or 0) + 1
    session.info["next_game_id"] = start + n
    return list(range(start, start + n))


@dataclass
class NewGames:
    """Games to write, column by column, with one row per membership in ``members``."""

    ids: list[int]
    seqs: list[int]
    ladder_id: int
    external_ids: list[str | None]
    played_at: list[datetime]
    created_at: datetime
    payloads: list[dict]
    member_game: np.ndarray  # (M,) position of each membership's game
    member_player: np.ndarray  # (M,) player id
    member_side: np.ndarray  # (M,) side within its game
    before: np.ndarray  # (M, 2k)
    after: np.ndarray  # (M, 2k)
    actual: np.ndarray  # (M,)
    expected: np.ndarray  # (M,)
    #: Each game's seats just before it ({name: [advantage, information]}), or None for a game without seats.
    seat_states: list[dict | None] | None = None
    #: (M,) each member's variance after the game, under the variance rule (mathematics §3b); None otherwise.
    variance_after: np.ndarray | None = None
    #: (M,) the Elo-equivalent points the game gave or took from each member, as its answer shows them (NaN: none).
    elo_change: np.ndarray | None = None


def insert(
    session: Session, news: list[NewGames], games_progress: Progress = None, rows_progress: Progress = None
) -> None:
    """The games of ``news`` (of one ladder or several: a group commit writes its ladders' games together) and
    their participants, one ``executemany`` per table."""
    connection = session.connection()
    columns: dict[str, list] = {
        "id": [n for new in news for n in new.ids],
        "seq": [n for new in news for n in new.seqs],
        "ladder_id": [new.ladder_id for new in news for _ in new.ids],
        "external_id": [e for new in news for e in new.external_ids],
        "played_at": [t for new in news for t in new.played_at],
        "created_at": [new.created_at for new in news for _ in new.ids],
        "payload": [p for new in news for p in new.payloads],
    }
    if any(new.seat_states is not None for new in news):
        columns["seat_state"] = [s for new in news for s in new.seat_states or [None] * len(new.ids)]
    bulk_insert(connection, Game.__table__, columns, progress=games_progress)
    columns = {
        "game_id": [g for new in news for g in np.asarray(new.ids, dtype=np.int64)[new.member_game].tolist()],
        "player_id": [p for new in news for p in new.member_player.tolist()],
        "ladder_id": [new.ladder_id for new in news for _ in new.member_game],
        "side": [side for new in news for side in new.member_side.tolist()],
        "before": [b for new in news for b in codec.pack_rows(new.before)],
        "after": [a for new in news for a in codec.pack_rows(new.after)],
        "actual_score": [a for new in news for a in new.actual.tolist()],
        "expected_score": [e for new in news for e in new.expected.tolist()],
    }
    for name in ("variance_after", "elo_change"):
        if any(getattr(new, name) is not None for new in news):
            columns[name] = [v for new in news for v in _member_column(new, name)]
    bulk_insert(connection, Participant.__table__, columns, progress=rows_progress)


def _member_column(new: NewGames, name: str) -> list:
    """The memberships' values of an optional column of ``new`` (None for each where it has none, or NaN)."""
    values = getattr(new, name)
    return [None] * len(new.member_game) if values is None else [None if v != v else v for v in values.tolist()]


def posted_changes(session: Session, ladder_id: int, first_id: int, last_id: int) -> dict[int, dict[str, float]]:
    """The changes as posted (``participants.elo_change``) the ladder's games ``first_id`` to ``last_id`` keep, by
    game id and player key."""
    sql = (
        "SELECT p.game_id, pl.key, p.elo_change FROM participants p "
        "JOIN players pl ON pl.id = p.player_id AND pl.ladder_id = p.ladder_id "
        "WHERE p.ladder_id = ? AND p.game_id >= ? AND p.game_id <= ? AND p.elo_change IS NOT NULL"
    )
    out: dict[int, dict[str, float]] = {}
    for game_id, key, change in driver_fetchall(session.connection(), sql, (ladder_id, first_id, last_id)):
        out.setdefault(int(game_id), {})[key] = float(change)
    return out


def taken_external_ids(session: Session, ladder_id: int, external_ids: list[str]) -> set[str]:
    """Which of ``external_ids`` the ladder's log holds already."""
    taken: set[str] = set()
    for lo in range(0, len(external_ids), MAX_KEYS_IN_QUERY):
        part = external_ids[lo : lo + MAX_KEYS_IN_QUERY]
        taken.update(
            session.scalars(select(Game.external_id).where(Game.ladder_id == ladder_id, Game.external_id.in_(part)))
        )
    return taken


@dataclass
class Member:
    key: str
    player_id: int
    side: int
    before: list[float]
    after: list[float]
    actual_score: float
    expected_score: float
    #: The Elo-equivalent points the game gave or took, as its post answered; None: show it against today's field.
    elo_change: float | None = None


@dataclass
class GameRecord:
    """A game as stored: its log row and its members (in side, then player-id order)."""

    id: int
    seq: int
    played_at: datetime
    external_id: str | None
    payload: dict
    members: list[Member]
    voided_at: datetime | None = None
    voided_by: str | None = None
    void_reason: str | None = None
    #: Its seats just before it: {name: [advantage, information]}, or None.
    seat_state: dict | None = None


def _records(session: Session, ladder_id: int, games: list[Game]) -> list[GameRecord]:
    by_game: dict[int, list[Member]] = {g.id: [] for g in games}
    same_ladder = unindexed_on_sqlite(session, Player.ladder_id) == Participant.ladder_id  # players found by id
    rows = session.execute(
        select(Participant, Player.key)
        .join(Player, and_(Player.id == Participant.player_id, same_ladder))
        .where(Participant.ladder_id == ladder_id, Participant.game_id.in_(list(by_game)))
        .order_by(Participant.game_id, Participant.side, Participant.player_id)
    ).all()
    for part, key in rows:
        by_game[part.game_id].append(
            Member(
                key,
                part.player_id,
                part.side,
                codec.unpack(part.before).tolist(),
                codec.unpack(part.after).tolist(),
                part.actual_score,
                part.expected_score,
                part.elo_change,
            )
        )
    return [
        GameRecord(
            g.id,
            g.seq or g.id,
            g.played_at,
            g.external_id,
            g.payload,
            by_game[g.id],
            g.voided_at,
            g.voided_by,
            g.void_reason,
            g.seat_state,
        )
        for g in games
    ]


def page(session: Session, ladder_id: int, limit: int, before: int | None) -> tuple[list[GameRecord], bool]:
    """The ladder's games newest first, numbered below ``before`` if given: ``limit`` of them, or fewer where
    they would hold more than :data:`PAGE_APPEARANCES` players in all (one game at least); and whether games may
    follow (``limit`` read, or some left out)."""
    query = select(Game.id).where(Game.ladder_id == ladder_id)
    if before is not None:
        query = query.where(Game.seq < before)
    ids = list(session.scalars(query.order_by(Game.seq.desc()).limit(limit)))
    return _page(session, ladder_id, ids, limit)


def _page(session: Session, ladder_id: int, ids: list[int], limit: int) -> tuple[list[GameRecord], bool]:
    """The games ``ids``, in that order, as many as hold at most :data:`PAGE_APPEARANCES` players (one at least);
    and whether games may follow."""
    counts = dict(
        session.execute(
            select(Participant.game_id, func.count())
            .where(Participant.ladder_id == ladder_id, Participant.game_id.in_(ids))
            .group_by(Participant.game_id)
        ).all()
    )
    held = np.cumsum([counts.get(i, 0) for i in ids])
    kept = ids[: max(1, int(np.searchsorted(held, PAGE_APPEARANCES, side="right")))]
    games = {g.id: g for g in session.scalars(select(Game).where(Game.ladder_id == ladder_id, Game.id.in_(kept)))}
    found = [games[i] for i in kept if i in games]  # a game deleted since its id was read (its ladder) is left out
    return _records(session, ladder_id, found), len(ids) == limit or len(kept) < len(ids)


def get(session: Session, ladder_id: int, number: int) -> GameRecord | None:
    """The ladder's game number ``number`` (its ``seq``: the id the API shows)."""
    game = session.scalar(select(Game).where(Game.ladder_id == ladder_id, Game.seq == number))
    return None if game is None else _records(session, ladder_id, [game])[0]


def number_of(session: Session, ladder_id: int, game_id: int | None) -> int | None:
    """The number within the ladder of its game with the internal id ``game_id``."""
    if game_id is None:
        return None
    return session.scalar(select(Game.seq).where(Game.id == game_id, Game.ladder_id == ladder_id))


def of_player(
    session: Session, ladder_id: int, key: str, limit: int, before_id: int | None
) -> tuple[list[GameRecord], bool]:
    """The games of one player that count (not voided), newest first, below ``before_id`` if given: as
    :func:`page`."""
    query = (
        select(Game.id)
        .join(Participant, and_(Participant.game_id == Game.id, Participant.ladder_id == Game.ladder_id))
        .join(Player, and_(Player.id == Participant.player_id, Player.ladder_id == Participant.ladder_id))
        .where(Player.ladder_id == ladder_id, Player.key == key, Game.voided_at.is_(None))
    )
    # By the membership's game id (the game's id): SQLite's planner then walks the player's memberships in order,
    # not the ladder's games.
    if before_id is not None:
        query = query.where(Participant.game_id < before_id)
    query = query.order_by(Participant.game_id.desc()).limit(limit)
    return _page(session, ladder_id, list(session.scalars(query)), limit)


_EXPORT_COLUMNS = [
    Game.__table__.c[name]
    for name in ("id", "seq", "external_id", "played_at", "payload", "voided_at", "voided_by", "void_reason")
]


def export_page(session: Session, ladder_id: int, after_id: int, limit: int) -> list[tuple]:
    """(id, seq, external_id, played_at, payload, voided_at, voided_by, void_reason) of up to ``limit`` games
    with id > ``after_id``, voided ones too, in log order."""
    columns = ", ".join(c.name for c in _EXPORT_COLUMNS)
    sql = f"SELECT {columns} FROM games WHERE ladder_id = ? AND id > ? ORDER BY id LIMIT ?"
    return fetch_typed(session, sql, (ladder_id, after_id, limit), _EXPORT_COLUMNS)


def void(session: Session, ladder_id: int, game_id: int, by: str | None, reason: str | None, now: datetime) -> None:
    """Mark a game voided: it stays in the log as an audit trail and counts nowhere."""
    session.execute(
        Game.__table__.update()
        .where(Game.ladder_id == ladder_id, Game.id == game_id, Game.voided_at.is_(None))
        .values(voided_at=now, voided_by=by, void_reason=reason)
    )


def log_counts(session: Session, ladder_id: int, game_id: int) -> tuple[int, int]:
    """The ladder's games with id ≤ ``game_id``: all of them, and those that count (a late commit or a void
    below ``game_id`` changes one)."""
    sql = (
        "SELECT count(*), coalesce(sum(CASE WHEN voided_at IS NULL THEN 1 ELSE 0 END), 0) FROM games "
        "WHERE ladder_id = ? AND id <= ?"
    )
    total, counted = driver_sql(session.connection(), sql, (ladder_id, game_id)).one()
    return int(total), int(counted)


def rewrite_history(
    session: Session,
    ladder_id: int,
    game_ids: np.ndarray,
    player_ids: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    actual: np.ndarray,
    expected: np.ndarray,
    variance_after: np.ndarray | None = None,
) -> None:
    """New vectors and expected scores of the ladder's memberships (game id, player id) after a replay, a chunk at a
    time; and their variances after the game under the variance rule (null under the other).  A membership whose
    vectors the replay changed loses its change as posted (null: shown against today's field from now on); one it
    left as they were (bit for bit: a replay of the same games under the same rule) keeps it."""
    for rows in chunks(len(game_ids)):
        columns = {
            "before": codec.pack_rows(before[rows]),
            "after": codec.pack_rows(after[rows]),
            "actual_score": actual[rows].tolist(),
            "expected_score": expected[rows].tolist(),
            "variance_after": [None] * len(actual[rows]) if variance_after is None else variance_after[rows].tolist(),
        }
        keys = list(zip(game_ids[rows].tolist(), player_ids[rows].tolist(), strict=True))
        where = (("game_id", "player_id"), keys)
        kept = ("elo_change", ("before", "after"))
        bulk_update(session.connection(), Participant.__table__, ladder_id, where, columns, kept)


def resize_voided_history(session: Session, ladder_id: int, dim: int) -> None:
    """The vectors recorded for the voided games' members, cut or padded with zeros to ``dim`` numbers (a new k:
    voided games count nowhere, and are not replayed)."""
    sql = (
        "SELECT p.game_id, p.player_id, p.before, p.after FROM participants p "
        "JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id "
        "WHERE g.ladder_id = ? AND g.voided_at IS NOT NULL"
    )
    rows = driver_fetchall(session.connection(), sql, (ladder_id,))
    if not rows:
        return

    def resized(blob: bytes) -> bytes:
        vector = codec.unpack(blob)[:dim]
        return codec.pack(np.concatenate([vector, np.zeros(dim - len(vector))]))

    keys = [(row[0], row[1]) for row in rows]
    columns = {"before": [resized(row[2]) for row in rows], "after": [resized(row[3]) for row in rows]}
    bulk_update(session.connection(), Participant.__table__, ladder_id, (("game_id", "player_id"), keys), columns)


def seat_states(
    log: rating.GameLog, history: rating.History, names: list[str], games: slice = slice(None)
) -> list[dict | None] | None:
    """Each game's seats just before it, {name: [advantage, information]} (None for a game without seats),
    from a replay's history (of the log's ``games``); None for a log without seats."""
    if log.side_seat is None or history.seat_before is None:
        return None
    seat, before = log.side_seat.tolist(), history.seat_before.tolist()
    ptr = log.side_ptr.tolist()
    out: list[dict | None] = []
    for g in range(log.n_games)[games]:
        state = {names[seat[a]]: before[a] for a in range(ptr[g], ptr[g + 1]) if seat[a] >= 0}
        out.append(state or None)
    return out


def rewrite_seat_states(
    session: Session, ladder_id: int, game_ids: list[int], states: list[dict | None] | None
) -> None:
    """New seat states of the ladder's replayed games (the state of their seats just before each)."""
    pairs = zip(game_ids, states or [], strict=states is not None)
    rows = [{"game": g, "ladder": ladder_id, "state": state} for g, state in pairs if state is not None]
    if rows:
        table = Game.__table__
        which = (table.c.id == bindparam("game"), table.c.ladder_id == bindparam("ladder"))
        session.execute(table.update().where(*which).values(seat_state=bindparam("state")), rows)


def of_player_all(session: Session, ladder_id: int, player_id: int) -> list[tuple[int, dict, bool]]:
    """(game id, payload, voided) of every game of one of the ladder's players, voided ones too, in log order."""
    query = (
        select(Game.id, Game.payload, Game.voided_at.is_not(None))
        .join(Participant, and_(Participant.game_id == Game.id, Participant.ladder_id == Game.ladder_id))
        .where(Participant.ladder_id == ladder_id, Participant.player_id == player_id)
        .order_by(Participant.game_id)  # (the game's id: SQLite's planner then walks the player's memberships)
    )
    return [(row[0], row[1], bool(row[2])) for row in session.execute(query)]


def rename_player(session: Session, ladder_id: int, games: list[tuple[int, dict, bool]], old: str, new: str) -> None:
    """Write ``new`` for the player key ``old`` in the payloads of ``games`` (as :func:`of_player_all` lists them)."""
    if not games:
        return
    payloads = [
        payload | {"sides": [[new if key == old else key for key in side] for side in payload["sides"]]}
        for _, payload, _ in games
    ]
    bulk_update(session.connection(), Game.__table__, ladder_id, ("id", [g[0] for g in games]), {"payload": payloads})


def move_memberships(session: Session, ladder_id: int, source_id: int, target_id: int) -> None:
    """Every game of the ladder's player ``source_id`` becomes a game of ``target_id``."""
    sql = "UPDATE participants SET player_id = ? WHERE player_id = ? AND ladder_id = ?"
    driver_sql(session.connection(), sql, (target_id, source_id, ladder_id))


def numbered(session: Session, ladder_id: int, numbers: list[int]) -> list[GameRecord]:
    """The ladder's games with these numbers (``seq``), in number order; numbers no game has are left out."""
    query = select(Game).where(Game.ladder_id == ladder_id, Game.seq.in_(numbers)).order_by(Game.seq)
    return _records(session, ladder_id, list(session.scalars(query)))


#: Players whose latest games one statement reads (SQLite allows 500 terms in a compound SELECT).
RECENT_PER_STATEMENT = 100


def recent_results(
    session: Session, ladder_id: int, player_ids: list[int], n: int
) -> dict[int, list[tuple[float, int]]]:
    """Each of the ladder's players' last ``n`` games that count, newest first, as (rank-share score, number of
    sides): one indexed look per player (``LIMIT n`` on (player_id, game_id)), however many games they have
    played."""
    part = (
        "SELECT * FROM (SELECT pa.player_id, pa.actual_score, "
        "(SELECT max(q.side) + 1 FROM participants q WHERE q.game_id = pa.game_id AND q.ladder_id = pa.ladder_id) "
        "FROM participants pa JOIN games g ON g.id = pa.game_id AND g.ladder_id = pa.ladder_id "
        "WHERE pa.player_id = ? AND pa.ladder_id = ? AND g.voided_at IS NULL ORDER BY pa.game_id DESC LIMIT ?) AS r"
    )
    found: dict[int, list[tuple[float, int]]] = {player_id: [] for player_id in player_ids}
    connection = session.connection()
    for lo in range(0, len(player_ids), RECENT_PER_STATEMENT):
        chunk = player_ids[lo : lo + RECENT_PER_STATEMENT]
        sql = " UNION ALL ".join([part] * len(chunk))
        params = tuple(v for p in chunk for v in (p, ladder_id, n))
        for player_id, actual, sides in driver_fetchall(connection, sql, params):
            found[player_id].append((actual, sides))
    return found


#: Far above every game id: "through the newest game".
_ANY_GAME = 2**62


def last_vectors(
    session: Session, ladder_id: int, player_ids: list[int], through: int | None = None
) -> dict[int, tuple[np.ndarray, np.ndarray, float | None]]:
    """Each player's vectors before and after their newest game that counts (at or before game id ``through``,
    if given), and its change as posted (None: none kept), by player id; players without one are left out.  One
    indexed look per player, as :func:`recent_results`."""
    part = (
        "SELECT * FROM (SELECT pa.player_id, pa.before, pa.after, pa.elo_change "
        "FROM participants pa JOIN games g ON g.id = pa.game_id AND g.ladder_id = pa.ladder_id "
        "WHERE pa.player_id = ? AND pa.ladder_id = ? AND pa.game_id <= ? AND g.voided_at IS NULL "
        "ORDER BY pa.game_id DESC LIMIT 1) AS r"
    )
    found: dict[int, tuple[np.ndarray, np.ndarray, float | None]] = {}
    connection = session.connection()
    last = _ANY_GAME if through is None else through
    for lo in range(0, len(player_ids), RECENT_PER_STATEMENT):
        chunk = player_ids[lo : lo + RECENT_PER_STATEMENT]
        sql = " UNION ALL ".join([part] * len(chunk))
        params = tuple(v for p in chunk for v in (p, ladder_id, last))
        for player_id, before, after, change in driver_fetchall(connection, sql, params):
            found[player_id] = (codec.unpack(bytes(before)), codec.unpack(bytes(after)), change)
    return found


def dated_of_player(session: Session, ladder_id: int, player_id: int) -> list[tuple[datetime, dict]]:
    """(played_at, payload) of every game of one of the ladder's players that counts (not voided), in log
    order."""
    query = (
        select(Game.played_at, Game.payload)
        .join(Participant, and_(Participant.game_id == Game.id, Participant.ladder_id == Game.ladder_id))
        .where(Participant.ladder_id == ladder_id, Participant.player_id == player_id, Game.voided_at.is_(None))
        .order_by(Participant.game_id)
    )
    return [(row[0], row[1]) for row in session.execute(query)]
