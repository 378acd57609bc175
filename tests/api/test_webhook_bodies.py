"""Webhook bodies stay within their documented bound (64 KiB) whatever the ladder holds: the largest game the API
takes (64 sides of 32 players), with the longest keys and names, arrives summarised (the first players of its sides,
each side's count, and where to read the whole game); its void and its moments too; an upset between two teams of
32; and the bodies whose size is bounded anyway (a challenge, a season's podium, the digest) stay well within it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from devtools.receiver import Receiver, receiver
from tests.api.helpers import FAST, add_webhook, deliveries, settled, until
from tests.conftest import ADMIN_KEY, admin, make_ladder

#: The most sides a game has, and players a side (app/games/schemas.py); the longest key and name (app/core/schemas).
SIDES, TEAM, KEY, NAME = 64, 32, 128, 200
#: The longest a body may be, and its text (docs/api.md: "at most 64 KiB", "at most 8 KiB").
BOUND, TEXT = 64 * 1024, 8 * 1024


def key(n: int) -> str:
    """A key of the most characters, each but its number four bytes in UTF-8 (JSON writes them as they are)."""
    return f"{n:04d}" + "\U0001f3d3" * (KEY - 4)


def name(n: int) -> str:
    """A name of the most characters, each but its number five times longer once escaped for Slack (``&amp;``)."""
    return f"{n:04d}" + "&" * (NAME - 4)


@pytest.fixture
def settings(database_url) -> Settings:
    # A body of 2,048 such keys is 1.03 MB, over the default request bound: the bound is a setting.
    return Settings(database_url=database_url, admin_key=ADMIN_KEY, migrate_on_start=False,
                    max_body_bytes=2_000_000, **FAST)  # fmt: skip


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as r:
        yield r


def post(client: TestClient, sides: list[list[int]]) -> dict:
    """A game of these sides (players by number), ranked in their order."""
    game = {"sides": [{"players": [key(n) for n in side], "rank": rank} for rank, side in enumerate(sides, 1)]}
    body = json.dumps(game, ensure_ascii=False).encode()
    r = client.post("/v1/ladders/test/games", content=body, headers=admin() | {"Content-Type": "application/json"})
    assert r.status_code == 201, r.text[:500]
    return r.json()


def sizes(bodies: list[bytes]) -> dict[str, int]:
    """The largest body of each event (bytes)."""
    largest: dict[str, int] = {}
    for body in bodies:
        event = json.loads(body)["event"]
        largest[event] = max(largest.get(event, 0), len(body))
    return largest


def within_bounds(body: bytes) -> dict:
    sent = json.loads(body)
    assert len(body) <= BOUND and len(sent["text"].encode()) <= TEXT, (sent["event"], len(body))
    return sent


def test_the_largest_game_its_void_and_its_moments_arrive_truncated_within_the_bound(client, hook):
    make_ladder(client, name="\U0001f3d3" * NAME, rate_rule="steps")  # the steps of the upset below
    players = SIDES * TEAM
    for n in range(players):
        r = client.post("/v1/ladders/test/players", json={"key": key(n), "name": name(n)}, headers=admin())
        assert r.status_code == 201, r.text
    made = add_webhook(client, hook.url, ["game", "void", "moment"])
    crowd = post(client, [list(range(s * TEAM, (s + 1) * TEAM)) for s in range(SIDES)])
    home, away = list(range(TEAM)), list(range(TEAM, 2 * TEAM))
    for _ in range(3):  # the same 32 beat the same 32 three times, then lose to them: an upset of 32 over 32
        post(client, [home, away])
    post(client, [away, home])
    # Moments are worked out when sent, and a voided game has none: void the crowd's game once they were all sent
    # (a game's moments are taken for delivery with the game).
    until(lambda: sum(d["event"] == "game" for d in deliveries(client, made["id"])) == 5, 60)
    settled(client, made["id"], len(deliveries(client, made["id"])))
    reason = "\U0001f3d3" * 500
    r = client.post(f"/v1/ladders/test/games/{crowd['id']}/void", json={"reason": reason}, headers=admin())
    assert r.status_code == 200, r.text[:500]
    until(lambda: any(json.loads(g.body)["event"] == "void" for g in hook.got), 60)  # the last event: all came
    log = settled(client, made["id"], len(hook.got))
    assert all(d["status"] == "delivered" for d in log), [d["error"] for d in log]
    bodies = [g.body for g in hook.got]
    print("largest bodies (bytes):", sizes(bodies))
    sent = [within_bounds(body) for body in bodies]

    game = next(s for s in sent if s["event"] == "game" and s["data"]["game"]["id"] == crowd["id"])
    assert game["data"]["truncated"] is True and game["data"]["href"] == f"/v1/ladders/test/games/{crowd['id']}"
    sides = game["data"]["game"]["sides"]
    assert len(sides) == SIDES and all(side["player_count"] == TEAM for side in sides)
    listed = [p["key"] for side in sides for p in side["players"]]
    assert listed == [key(s * TEAM) for s in range(32)]  # the first player of each of the best 32 sides
    assert [side["rank"] for side in sides] == list(range(1, SIDES + 1))
    whole = client.get(game["data"]["href"]).json()  # where the receiver reads the whole game
    assert sum(len(side["players"]) for side in whole["sides"]) == players
    assert "others" in game["text"] and game["text"].startswith(name(0).replace("&", "&amp;"))

    void = next(s for s in sent if s["event"] == "void")
    assert void["data"]["truncated"] is True and void["data"]["game"]["reason"] == reason
    assert void["text"].startswith(f"Game {crowd['id']} was voided: ")

    moments = {s["data"]["moment"]["kind"]: s for s in sent if s["event"] == "moment"}
    first = next(s for s in sent if s["event"] == "moment" and s["data"]["moment"]["game"] == crowd["id"])
    assert first["data"]["moment"]["kind"] == "first_win" and first["data"]["truncated"] is True
    assert first["data"]["moment"]["player_count"] > len(first["data"]["moment"]["players"]) > 0
    assert first["text"].endswith("others won for the first time")
    assert first["text"] == first["data"]["moment"]["text"].replace("&", "&amp;")  # as Slack asks
    upset = moments["upset"]
    assert upset["data"]["truncated"] is True and upset["data"]["moment"]["player_count"] == TEAM
    assert upset["data"]["moment"]["players"] == [key(n) for n in away]
    assert " others beat " in upset["text"] and upset["text"].endswith("% chance")


def test_bodies_bounded_anyway_stay_within_the_bound_with_the_longest_keys_and_names(database_url, hook):
    settings = Settings(database_url=database_url, admin_key=ADMIN_KEY, migrate_on_start=False,
                        **(FAST | {"webhooks_digest_hours": 2 / 3600}))  # fmt: skip
    with TestClient(create_app(settings)) as client:
        make_ladder(client, name="\U0001f3d3" * NAME, rate_rule="steps")  # the steps of the upset below
        for n in range(4):
            r = client.post("/v1/ladders/test/players", json={"key": key(n), "name": name(n)}, headers=admin())
            assert r.status_code == 201, r.text
        add_webhook(client, hook.url, ["season", "challenge", "digest"])
        for winner, loser in ((0, 1), (2, 3), (0, 2), (1, 3)):
            post(client, [[winner], [loser]])
        challenge = {"from": key(0), "to": key(1), "message": "&" * 200}
        assert client.post("/v1/ladders/test/challenges", json=challenge, headers=admin()).status_code == 201
        season = {"name": "\U0001f3d3" * 100}
        assert client.post("/v1/ladders/test/seasons", json=season, headers=admin()).status_code == 201
        until(lambda: {json.loads(g.body)["event"] for g in hook.got} >= {"season", "challenge", "digest"})
    bodies = [g.body for g in hook.got]
    print("largest bodies (bytes):", sizes(bodies))
    sent = {s["event"]: s for s in map(within_bounds, bodies)}
    assert sent["challenge"]["data"]["challenge"]["message"] == "&" * 200
    assert len(sent["season"]["podium"]) == 3 and {p["key"] for p in sent["season"]["podium"]} < {
        key(n) for n in range(4)
    }
    assert sent["digest"]["data"]["games"] == 4 and {p["name"] for p in sent["digest"]["data"]["top"]} < {
        name(n) for n in range(4)
    }
    assert not any("truncated" in s["data"] for s in sent.values())  # nothing was left out
