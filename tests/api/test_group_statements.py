"""What a group of posts costs the database: a fixed number of statements whatever its games and its ladders (the
players' rows locked, the ladders' game numbers, the games, participants, players' rows, events, idempotency
records and the ladders' versions and counts: one statement each)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from sqlalchemy import event

from app.domain.access import Caller
from app.games.intake import Post, request_hash
from app.games.posts import apply_posts
from app.games.schemas import GameIn
from devtools.server import ADMIN_KEY
from tests.conftest import admin


@contextmanager
def counted(engine) -> Iterator[list[str]]:
    """Every statement the database runs for ``engine``'s connections meanwhile, those sent past SQLAlchemy
    straight through the driver too (the hot reads do); an ``executemany`` counts once."""
    seen: list[str] = []
    touched: list = []
    many: list[int] = []  # SQLite's trace shows each row of an executemany: the rows past the first, to take off

    def checkout(dbapi_connection, record, proxy) -> None:
        touched.append(dbapi_connection)
        if engine.dialect.name == "sqlite":
            dbapi_connection.set_trace_callback(seen.append)
        else:
            dbapi_connection.cursor_factory = _counting(seen)

    def executing(conn, cursor, statement, parameters, context, executemany) -> None:
        if executemany and engine.dialect.name == "sqlite":
            many.append(len(parameters) - 1)

    event.listen(engine, "checkout", checkout)
    event.listen(engine, "before_cursor_execute", executing)
    try:
        yield seen
    finally:
        event.remove(engine, "checkout", checkout)
        event.remove(engine, "before_cursor_execute", executing)
        for dbapi_connection in touched:
            if engine.dialect.name == "sqlite":
                dbapi_connection.set_trace_callback(None)
            else:
                dbapi_connection.cursor_factory = psycopg.Cursor
        del seen[len(seen) - sum(many) :]  # (the count is what matters; the texts are for a failure's message)


def _counting(seen: list[str]) -> type:
    class Counting(psycopg.Cursor):
        def execute(self, query, *args, **kwargs):
            seen.append(str(query))
            return super().execute(query, *args, **kwargs)

        def executemany(self, query, *args, **kwargs):
            seen.append(str(query))
            return super().executemany(query, *args, **kwargs)

    return Counting


def _posts(ladders: int, per_ladder: int, round_: int) -> list[Post]:
    caller = Caller.of(ADMIN_KEY, ADMIN_KEY)
    posts = []
    for n in range(ladders):
        for i in range(per_ladder):
            # Players met before: a steady ladder's posts (a new player's row is one more insert, once).
            game = GameIn.model_validate(
                {
                    "sides": [
                        {"players": [f"p{i}"], "rank": 1 + round_ % 2},
                        {"players": [f"q{i}"], "rank": 2 - round_ % 2},
                    ]
                }
            )
            posts.append(Post(f"l{n}", caller, [game], None, request_hash(game), batch=False))
    return posts


def test_a_groups_statements_are_as_many_whatever_its_games_and_ladders(client):
    for n in range(16):
        assert client.post("/v1/ladders", json={"slug": f"l{n}", "auto_refit": False}, headers=admin()).is_success
    db = client.app.state.db
    db.write(lambda session: apply_posts(session, _posts(16, 16, 0)))  # every player exists from now on
    cost = {}
    for round_, (ladders, per_ladder) in enumerate([(1, 1), (1, 16), (16, 1), (16, 16)], start=1):
        with counted(db.write_engine) as seen:
            group = db.write(lambda session: apply_posts(session, _posts(ladders, per_ladder, round_)))
        assert all(isinstance(outcome, dict) for outcome in group.outcomes)
        cost[ladders, per_ladder] = len(seen)
    print(f"\n{db.write_engine.dialect.name}: statements per group {cost}")
    assert cost[1, 16] == cost[1, 1]  # 16 games to one ladder cost what one does
    assert cost[16, 1] == cost[1, 1]  # and 16 ladders what one does
    assert cost[16, 16] == cost[1, 1]
