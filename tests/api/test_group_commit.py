"""Group commit: posts that arrive together are applied in one transaction, each with its own outcome.

The group-level tests hand a list of posts to the app's own writer (one group, deterministically); the last
test sends concurrent requests to a real server, where the groups form by themselves.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
import psycopg
import pytest

from app.core.db import Database
from app.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.domain.access import Caller
from app.games.committer import GroupCommitter
from app.games.intake import Post, request_hash
from app.games.posts import Committed
from app.games.schemas import GameIn
from app.rating import RatingInputError
from app.storage.tables import IdempotencyKey
from devtools.server import ADMIN_KEY
from tests.conftest import bearer, make_ladder


def game_in(winner: str, loser: str, **extra) -> GameIn:
    return GameIn.model_validate({"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]} | extra)


def post(key: str, game: GameIn, slug: str = "test", idempotency_key: str | None = None) -> Post:
    return Post(slug, Caller(key), [game], idempotency_key, request_hash(game), batch=False)


def vectors(client, slug: str) -> dict[str, list[float]]:
    board = client.get(f"/v1/ladders/{slug}/leaderboard?limit=500").json()["items"]
    return {row["key"]: client.get(f"/v1/ladders/{slug}/players/{row['key']}").json()["vector"] for row in board}


def test_a_group_sharing_players_equals_the_games_posted_one_by_one(client):
    grouped = make_ladder(client, "grouped", seed=7)
    single = make_ladder(client, "single", seed=7)
    rng = np.random.default_rng(1)
    names = ["a", "b", "c", "d"]  # 12 games over 4 players: most share a player with the one before
    games = [game_in(*rng.choice(names, 2, replace=False).tolist()) for _ in range(12)]
    outcomes = client.app.state.committer.commit([post(grouped, g, "grouped") for g in games])
    for g in games:
        assert client.post(
            "/v1/ladders/single/games", json=g.model_dump(mode="json"), headers=bearer(single)
        ).is_success
    assert all(isinstance(o, dict) for o in outcomes)
    assert [o["id"] for o in outcomes] == sorted(o["id"] for o in outcomes)  # applied in the order posted
    assert vectors(client, "grouped") == vectors(client, "single")  # bit for bit
    audit = client.get("/v1/ladders/grouped/audit").json()
    assert audit["consistent"] and audit["games"] == 12


def test_a_group_over_many_ladders_commits_once_and_equals_each_ladder_posted_alone(client):
    """Posts to four ladders, interleaved, form one transaction (not one per post, as a group that fails and is
    retried one post at a time would), and each ladder ends as the same games posted to it alone leave it."""
    slugs = [f"many{n}" for n in range(4)]
    keys = {slug: make_ladder(client, slug, seed=7) for slug in slugs}
    alone = {slug: make_ladder(client, f"{slug}-alone", seed=7) for slug in slugs}
    rng = np.random.default_rng(2)
    games = [(slugs[n % 4], game_in(*rng.choice(["a", "b", "c", "d"], 2, replace=False).tolist())) for n in range(16)]
    committer = client.app.state.committer
    before = sum(committer.group_sizes.values())
    outcomes = committer.commit([post(keys[slug], g, slug) for slug, g in games])
    assert sum(committer.group_sizes.values()) == before + 1 and committer.group_sizes[16] >= 1  # one commit
    assert all(isinstance(o, dict) for o in outcomes)
    for slug, g in games:
        answer = client.post(
            f"/v1/ladders/{slug}-alone/games", json=g.model_dump(mode="json"), headers=bearer(alone[slug])
        )
        assert answer.status_code == 201
    for slug in slugs:
        assert vectors(client, slug) == vectors(client, f"{slug}-alone")  # bit for bit
        assert [o["id"] for (s, _), o in zip(games, outcomes, strict=True) if s == slug] == [1, 2, 3, 4]
        audit = client.get(f"/v1/ladders/{slug}/audit").json()
        assert audit["consistent"] and audit["games"] == 4


def test_a_bad_post_in_a_group_gets_its_own_problem_and_the_others_are_applied(client):
    key = make_ladder(client)
    closed = make_ladder(client, "closed", auto_create_players=False)
    client.post("/v1/ladders/test/games", json={"sides": [{"players": ["x"], "rank": 1}, {"players": ["y"], "rank": 2}],
                                                "external_id": "taken"}, headers=bearer(key))  # fmt: skip
    posts = [
        post(key, game_in("a", "b")),
        post(key, game_in("a", "c"), slug="nope"),  # no such ladder
        post("wrong-key", game_in("a", "c")),  # not this ladder's key
        post(key, game_in("b", "c", external_id="taken")),  # a game with this external_id exists
        post(key, game_in("c", "d", external_id="mine")),
        post(key, game_in("d", "a", external_id="mine")),  # the same external_id earlier in the group
        post(closed, game_in("b", "d"), slug="closed"),  # this ladder does not create players
        post(key, game_in("c", "a")),
    ]
    outcomes = client.app.state.committer.commit(posts)
    kinds = [type(o) for o in outcomes]
    assert kinds == [Committed, NotFound, Forbidden, Conflict, Committed, Conflict, InvalidInput, Committed]
    shown = client.get("/v1/ladders/test/leaderboard").json()["ladder_version"]
    assert [o.ladder_version for o in outcomes if isinstance(o, Committed)] == [shown] * 3  # one commit: its version
    assert outcomes[6].extra["errors"][0]["field"] == "sides[0].players[0]"
    assert client.get("/v1/ladders/test").json()["games"] == 4  # x-y, then the three good ones
    assert client.get("/v1/ladders/closed").json()["games"] == 0
    assert client.get("/v1/ladders/test/players/a").json()["games"] == 2
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_idempotent_retries_inside_and_across_groups(client):
    key = make_ladder(client)
    first, other = game_in("a", "b"), game_in("b", "a")
    outcomes = client.app.state.committer.commit(
        [
            post(key, first, idempotency_key="k1"),
            post(key, first, idempotency_key="k1"),
            post(key, other, idempotency_key="k1"),
        ]
    )
    assert outcomes[0] == outcomes[1]  # the retry in the same group: the same response, applied once
    assert isinstance(outcomes[2], Conflict)  # the same key with another body
    again = client.app.state.committer.commit(
        [post(key, first, idempotency_key="k1"), post(key, other, idempotency_key="k2")]
    )
    assert again[0] == outcomes[0]  # a retry in a later group
    assert isinstance(again[1], dict) and again[1]["id"] != outcomes[0]["id"]
    assert client.get("/v1/ladders/test").json()["games"] == 2
    assert client.get("/v1/ladders/test/players/a").json()["games"] == 2


def test_a_group_that_fails_as_a_whole_is_retried_one_post_at_a_time(client):
    key = make_ladder(client)
    # A game no request could send (validation refuses a rank that is not a number): the rating core rejects it
    # in the middle of the group's transaction.
    side = type(game_in("a", "b").sides[0])
    ranks = {"e": float("nan"), "f": 1.0, "g": 2.0}
    sides = [
        side.model_construct(players=[k], rank=r, score=None, advantage=None, win_probability=None)
        for k, r in ranks.items()
    ]
    broken = GameIn.model_construct(sides=sides, played_at=None, external_id=None)
    posts = [
        post(key, game_in("a", "b")),
        Post("test", Caller(key), [broken], None, "x", False),
        post(key, game_in("c", "d")),
    ]
    outcomes = client.app.state.committer.commit(posts)
    assert isinstance(outcomes[0], dict) and isinstance(outcomes[2], dict)
    assert isinstance(outcomes[1], RatingInputError)
    assert client.get("/v1/ladders/test").json()["games"] == 2
    assert client.get("/v1/ladders/test/players/e").status_code == 404  # nothing of the bad post stayed
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_concurrent_posts_with_retries_and_bad_ones_over_http(server):
    r = httpx.post(server + "/v1/ladders", json={"slug": "load"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    key = r.json()["write_key"]
    rng = np.random.default_rng(3)
    pairs = [rng.choice(8, 2, replace=False).tolist() for _ in range(300)]  # 8 players: groups share players

    def send(n: int) -> list[int]:
        i, j = pairs[n]
        body = {"sides": [{"players": [f"p{i}"], "rank": 1}, {"players": [f"p{j}"], "rank": 2}]}
        headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"g{n}"}
        with httpx.Client(base_url=server, timeout=60) as c:
            statuses = [c.post("/v1/ladders/load/games", json=body, headers=headers).status_code for _ in range(2)]
            bad = body | {"sides": [{"players": [f"p{i}"], "rank": 1}, {"players": [f"p{i}"], "rank": 2}]}
            statuses.append(
                c.post("/v1/ladders/load/games", json=bad, headers={"Authorization": f"Bearer {key}"}).status_code
            )
        return statuses

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(send, range(len(pairs))))
    assert all(s == [201, 201, 422] for s in results), {tuple(s) for s in results}
    audit = httpx.get(server + "/v1/ladders/load/audit").json()
    assert audit["consistent"] and audit["games"] == len(pairs) and audit["max_abs_diff"] == 0.0
    board = httpx.get(server + "/v1/ladders/load/leaderboard").json()["items"]
    assert sum(row["games"] for row in board) == 2 * len(pairs)


def test_idempotency_records_expire_after_their_time(client, settings):
    key = make_ladder(client)
    h = bearer(key)
    first = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}
    other = {"sides": [{"players": ["bob"], "rank": 1}, {"players": ["ann"], "rank": 2}]}
    assert client.post("/v1/ladders/test/games", json=first, headers=h | {"Idempotency-Key": "old"}).status_code == 201
    assert client.post("/v1/ladders/test/games", json=first, headers=h | {"Idempotency-Key": "new"}).status_code == 201
    db = Database.from_settings(settings)
    with db.writing() as session:  # "old" was recorded eight days ago
        session.execute(
            IdempotencyKey.__table__.update()
            .where(IdempotencyKey.key == "old")
            .values(created_at=datetime.now(UTC) - timedelta(days=8))
        )
    db.dispose()
    committer = client.app.state.committer
    assert committer.expire_responses() == 1  # the writer does this every ten minutes
    # Within the week a key is bound to its body; after it, the same key is a new request.
    assert client.post("/v1/ladders/test/games", json=other, headers=h | {"Idempotency-Key": "new"}).status_code == 409
    assert client.post("/v1/ladders/test/games", json=other, headers=h | {"Idempotency-Key": "old"}).status_code == 201
    assert client.get("/v1/ladders/test").json()["games"] == 3


def test_a_ladder_whose_rows_another_transaction_holds_does_not_hold_the_others_posted_with_it(client, settings):
    """PostgreSQL: posts to two ladders form one group; while another transaction (an administrator's change)
    holds one ladder's player rows, the group gives up waiting after LOCK_WAIT and each ladder goes alone: the
    free ladder's post is answered at once, the held one's when the rows are let go."""
    if settings.database_url.startswith("sqlite"):
        pytest.skip("SQLite has one writer: a change of a ladder holds every post (docs/operations.md)")
    keys = {slug: make_ladder(client, slug) for slug in ("held", "free")}
    for slug in keys:  # the players exist: the posts below only lock their rows
        assert client.post(f"/v1/ladders/{slug}/games", json=_GAME, headers=bearer(keys[slug])).status_code == 201
    db = Database.from_settings(settings)
    committer = GroupCommitter(db, writers=2)
    holder = psycopg.connect(settings.database_url.replace("postgresql+psycopg", "postgresql"), autocommit=False)
    holder.execute("SELECT id FROM players WHERE ladder_id = (SELECT id FROM ladders WHERE slug = 'held') FOR UPDATE")

    async def race() -> tuple[dict | None, bool, dict]:
        game = GameIn.model_validate(_GAME)
        held = asyncio.ensure_future(committer.submit(post(keys["held"], game, "held")))
        free = asyncio.ensure_future(committer.submit(post(keys["free"], game, "free")))
        try:  # the free ladder's answer, while the other one's rows are held
            answer = await asyncio.wait_for(asyncio.shield(free), 3)
        except TimeoutError:
            answer = None
        still_waiting = not held.done()
        holder.rollback()  # the rows let go: both posts are applied
        await asyncio.wait_for(free, 10)
        return answer, still_waiting, await asyncio.wait_for(held, 10)

    try:
        free_answer, still_waiting, held_answer = asyncio.run(race())
    finally:
        holder.close()
        committer.close()
        db.dispose()
    assert free_answer is not None and free_answer["id"] == 2  # the free ladder did not wait for the held one's rows
    assert still_waiting and held_answer["id"] == 2
    for slug in keys:
        audit = client.get(f"/v1/ladders/{slug}/audit").json()
        assert audit["consistent"] and audit["games"] == 2


_GAME = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}


def test_a_group_of_ladders_with_different_rules_equals_each_ladder_posted_alone(client):
    """One group over ladders that are replayed apart (another k, another learning rate, the variance rule, a
    drift, seats) and ladders replayed together (the same settings): each ends bit for bit as the same games
    posted to it alone, and its audit is exact."""
    settings = {
        "same1": {},
        "same2": {},
        "k2": {"k": 2},
        "rate": {"eta": 0.3, "eta_tau": None},
        "variance": {"rate_rule": "variance"},
        "drift": {"drift": 200},
        "seated": {"seats": ["home", "away"]},
    }
    keys = {slug: make_ladder(client, slug, **config) for slug, config in settings.items()}
    alone = {slug: make_ladder(client, f"{slug}-alone", **config) for slug, config in settings.items()}
    rng = np.random.default_rng(4)
    games = []
    for n in range(28):
        slug = list(settings)[n % len(settings)]
        winner, loser = rng.choice(["a", "b", "c", "d", "e"], 2, replace=False).tolist()
        extra = {}
        if slug == "seated":
            extra = {
                "sides": [
                    {"players": [winner], "rank": 1, "seat": "home"},
                    {"players": [loser], "rank": 2, "seat": "away"},
                ]
            }
        games.append((slug, game_in(winner, loser, **extra)))
    outcomes = client.app.state.committer.commit([post(keys[slug], g, slug) for slug, g in games])
    assert all(isinstance(o, dict) for o in outcomes), outcomes
    for slug, g in games:
        answer = client.post(
            f"/v1/ladders/{slug}-alone/games", json=g.model_dump(mode="json"), headers=bearer(alone[slug])
        )
        assert answer.status_code == 201, answer.text
    for slug in settings:
        assert vectors(client, slug) == vectors(client, f"{slug}-alone"), slug  # bit for bit
        audit = client.get(f"/v1/ladders/{slug}/audit").json()
        assert audit["consistent"] and audit["games"] == 4, (slug, audit)
