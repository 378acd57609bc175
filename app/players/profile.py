"""A player's profile, now or as of a past moment (the table as it stood then), and their game history."""

from __future__ import annotations

from datetime import datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.cursors import decode_cursor, encode_cursor, is_id
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.players.last_game import last_game_changes
from app.players.leaderboard import rank
from app.players.records import clock, hodge, mean_vector, page_se, record_fields, row_of
from app.storage.read_model import Table


def get_player(session: Session, ladder: LadderRow, key: str, as_of: datetime | None = None) -> dict:
    """A player's profile with the ladder version it was read at; ``as_of``: as they stood then."""
    table = storage.read_model.current_table(session, ladder) if as_of is None else past_table(session, ladder, as_of)
    if as_of is not None and table.row(ladder.player_key(key)) is None:
        raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r} before {iso(as_of)}.")
    through = None if as_of is None else storage.as_of.last_game_before(session, ladder.id, as_of) or 0
    [change] = last_game_changes(session, ladder, table, [row_of(table, ladder, key)], through)
    return profile(table, ladder, key) | {"last_game_change": change, "ladder_version": table.version}


def past_table(session: Session, ladder: LadderRow, moment: datetime) -> Table:
    """The players as they stood after the last game of the log played before ``moment`` (mathematics §8): those
    who had played by then or were created before it, none before the first game, today's table after the newest.
    One pass over the memberships up to that game (:mod:`app.storage.as_of`), in one snapshot."""
    now = storage.read_model.current_table(session, ladder)
    game = storage.as_of.last_game_before(session, ladder.id, moment)
    newest = game is not None and game == storage.as_of.last_game(session, ladder.id)
    return storage.as_of.table_after(session, ladder, now, game, moment, iso(moment), newest)


def profile(table: Table, ladder: LadderRow, key: str, aliases: list[str] | None = None) -> dict:
    """A player's vector, strength, record, provisional flag and aliases (``PlayerOut``); ``aliases`` as the
    ladder row holds them unless given."""
    n = row_of(table, ladder, key)
    key = table.keys[n]
    if aliases is None:
        aliases = sorted(alias for alias, of in ladder.aliases.items() if of == key)
    return {
        "key": key,
        "aliases": aliases,
        **record_fields(table, ladder, n, page_se(table, ladder, np.array([n]))[0]),
        "vector": table.C[n].tolist(),
        "strength": float(hodge(table)[n]),
        "rank": rank(table, ladder, n),
        "created_at": iso(storage.codec.moment(table.created[n])),
        "ladder_clock": iso(storage.codec.moment(clock(table))),
    }


#: A result as the API names it (:func:`app.rating.results`).
RESULTS = {1: "win", 0: "draw", -1: "loss"}


def history(session: Session, ladder: LadderRow, key: str, limit: int, cursor: str | None) -> dict:
    """The player's games, newest first, with vectors and expected scores before and after."""
    table = storage.read_model.current_table(session, ladder)
    key = table.keys[row_of(table, ladder, key)]
    before_id = None
    if cursor is not None:
        before_id = decode_cursor(cursor, is_id)
    records, more = storage.games.of_player(session, ladder.id, key, limit, before_id)
    field_mean = mean_vector(table)
    items = []
    for record in records:
        me = next(m for m in record.members if m.key == key)
        n_sides = max(m.side for m in record.members) + 1
        sides = [[i for i, m in enumerate(record.members) if m.side == s] for s in range(n_sides)]
        after = np.array([m.after for m in record.members])
        game = rating.Game(tuple(tuple(s) for s in sides), tuple(range(1, n_sides + 1)))
        _, expected_after = rating.predict_match(after, game)
        elo_before, elo_after = rating.elo_equivalent(
            rating.hodge_strength_against(np.array([me.before, me.after]), field_mean)
        ).tolist()
        result = RESULTS[int(rating.results(me.actual_score, n_sides))]
        items.append(
            {
                "game_id": record.seq,
                "seq": record.seq,
                "played_at": iso(record.played_at),
                "side": me.side,
                "opponents": [m.key for m in record.members if m.side != me.side],
                "partners": [m.key for m in record.members if m.side == me.side and m.key != key],
                "result": result,
                "before": me.before,
                "after": me.after,
                "actual_score": me.actual_score,
                "expected_score": me.expected_score,
                "expected_after": float(expected_after[me.side]),
                "elo_before": elo_before,
                "elo_after": elo_after,
                "elo_change": elo_after - elo_before if me.elo_change is None else me.elo_change,
                "scores": record.payload.get("scores"),
                "match": record.payload.get("match"),
            }
        )
    next_cursor = encode_cursor(records[-1].id) if more else None
    return {"items": items, "next_cursor": next_cursor}
