"""The Slack slash command with requests signed as Slack signs them: a game recorded once, the standings, and
bad signatures, stale timestamps, replays and unknown users refused, changing nothing."""

from __future__ import annotations

import itertools
import time
from urllib.parse import urlencode

import pytest

from app.webhooks.slack import sign
from tests.conftest import admin, bearer, make_ladder

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TRIGGERS = (f"{n}.trigger" for n in itertools.count())


def command(client, text: str, user: str = "ada", secret: str = SECRET, at: float | None = None, **form):
    """POST the slash command as Slack does: form-encoded, signed with ``secret`` at ``at`` (default now)."""
    fields = {"command": "/pong", "text": text, "user_id": "U1" + user.upper(), "user_name": user}
    body = urlencode(fields | {"trigger_id": next(TRIGGERS)} | form)  # Slack's id of each command: no two alike
    timestamp = str(int(time.time() if at is None else at))
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(secret, timestamp, body.encode()),
    }
    return client.post("/v1/ladders/test/slack", content=body, headers=headers)


def link(client, player: str, member_id: str) -> None:
    """What an admin does to link a Slack user to a player: the player's key changed to their member id and back
    (the old key stays an alias)."""
    for old, new in ((player, member_id), (member_id, player)):
        r = client.patch(f"/v1/ladders/test/players/{old}", json={"key": new}, headers=admin())
        assert r.status_code == 200 and r.json()["key"].lower() == new.lower(), r.text


NOT_A_TIME = {"X-Slack-Request-Timestamp": "x" * 40, "X-Slack-Signature": "v0=00"}


def games(client) -> int:
    return client.get("/v1/ladders/test").json()["games"]


@pytest.fixture
def ladder(client):
    key = make_ladder(client, name="Office pong")
    for player in ("ada", "bob", "Cy"):
        assert client.post("/v1/ladders/test/players", json={"key": player}, headers=admin()).status_code == 201
        link(client, player, "U1" + player.upper())
    assert client.get("/v1/ladders/test/slack", headers=admin()).json() == {"configured": False, "updated_at": None}
    r = client.put("/v1/ladders/test/slack", json={"signing_secret": SECRET}, headers=admin())
    assert r.status_code == 200 and r.json()["configured"] is True and SECRET not in r.text
    return key


def test_a_signed_command_records_a_game_once_and_a_replay_is_refused(client, ladder):
    r = command(client, "@bob 21-15")
    assert r.status_code == 200, r.text
    assert r.json()["response_type"] == "in_channel" and r.json()["text"].startswith("Game 1: ada beat bob")
    [game] = client.get("/v1/ladders/test/games").json()["items"]
    assert [[p["key"] for p in side["players"]] for side in game["sides"]] == [["ada"], ["bob"]]
    assert [side["rank"] for side in game["sides"]] == [1, 2]
    # the same request again, byte for byte: a replay
    body, headers = r.request.content, dict(r.request.headers)
    again = client.post("/v1/ladders/test/slack", content=body, headers=headers)
    assert again.status_code == 409 and "replay" in again.json()["detail"]
    assert games(client) == 1
    # the issuer's points come first: a loss recorded by the loser; Slack's escaped mention works too
    r = command(client, "<@U1CY|cy> 9-21", user="bob")
    assert r.status_code == 200 and r.json()["text"].startswith("Game 2: Cy beat bob"), r.text
    assert games(client) == 2


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_bad_signatures_stale_timestamps_and_missing_headers_are_refused(client, ladder):
    refused = [
        command(client, "@bob 21-15", secret="another secret"),
        command(client, "@bob 21-15", at=time.time() - 301),
        command(client, "@bob 21-15", at=time.time() + 400),
        client.post("/v1/ladders/test/slack", content="text=top"),
        client.post("/v1/ladders/test/slack", content="t", headers=NOT_A_TIME),
    ]
    details = [r.json()["detail"] for r in refused]
    assert [r.status_code for r in refused] == [401] * 5
    assert all(r.headers["content-type"] == "application/problem+json" for r in refused)
    assert "does not match" in details[0] and "5 minutes" in details[1] and "5 minutes" in details[2]
    assert "missing" in details[3] and "Unix time" in details[4]
    assert games(client) == 0
    # a ladder without a signing secret takes none; only its admin sets one
    assert client.delete("/v1/ladders/test/slack", headers=admin()).json()["configured"] is False
    for r in (command(client, "top"), client.post("/v1/ladders/test/slack", content="text=top")):
        assert r.status_code == 401 and "does not match" in command(client, "top").json()["detail"]
    nowhere = command(client, "top").request  # a ladder that does not exist answers alike: 401, not 404
    r = client.post("/v1/ladders/nope/slack", content=nowhere.content, headers=dict(nowhere.headers))
    assert r.status_code == 401 and r.json()["detail"] == command(client, "top").json()["detail"]
    assert client.post("/v1/ladders/nope/slack", content="text=top").status_code == 401
    assert client.put("/v1/ladders/test/slack", json={"signing_secret": SECRET}).status_code == 401
    writer = client.post("/v1/ladders/test/keys", json={"name": "desk", "role": "write"}, headers=admin())
    r = client.put("/v1/ladders/test/slack", json={"signing_secret": SECRET}, headers=bearer(writer.json()["key"]))
    assert r.status_code == 403
    assert client.put("/v1/ladders/test/slack", json={"signing_secret": "short"}, headers=admin()).status_code == 422


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_unknown_users_and_opponents_get_a_private_answer_and_nothing_changes(client, ladder):
    stranger = command(client, "@bob 21-15", user="zed")
    assert stranger.status_code == 200 and stranger.json()["response_type"] == "ephemeral"
    assert "not a player of Office pong" in stranger.json()["text"] and "'U1ZED'" in stranger.json()["text"]
    # a Slack user name is the user's to choose: naming oneself ada records nothing as ada
    impostor = command(client, "@bob 21-15", user="zed", user_name="ada")
    assert "not a player" in impostor.json()["text"] and "'ada'" in impostor.json()["text"]
    for text, said in {
        "@nobody 21-15": "'nobody' is not a player",
        "@ada 21-15": "against yourself",
        "@bob twenty": "did not understand",
        "dance": "did not understand",
    }.items():
        r = command(client, text)
        assert r.status_code == 200 and r.json()["response_type"] == "ephemeral" and said in r.json()["text"], text
    assert games(client) == 0
    r = command(client, "help")
    assert r.json()["response_type"] == "ephemeral" and "/pong @ada 21-15" in r.json()["text"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_top_answers_the_standings(client, ladder):
    for text, user in (("@bob 21-10", "ada"), ("@cy 21-18", "ada"), ("@cy 21-5", "bob")):
        assert command(client, text, user=user).json()["response_type"] == "in_channel"
    r = command(client, "top")
    assert r.status_code == 200 and r.json()["response_type"] == "in_channel"
    lines = r.json()["text"].splitlines()
    assert lines[0] == "Standings of Office pong:" and len(lines) == 4
    board = client.get("/v1/ladders/test/leaderboard", params={"by": "conservative"}).json()["items"]
    assert [line.split()[1] for line in lines[1:]] == [p["name"] or p["key"] for p in board]
    assert lines[1].endswith("(2 games)")
    # a name cannot ping the channel: Slack's control characters are escaped
    client.patch("/v1/ladders/test/players/cy", json={"name": "<!channel> & co"}, headers=admin())
    assert "&lt;!channel&gt; &amp; co" in command(client, "top").json()["text"]


def test_a_mention_names_the_member_never_the_name_it_shows(client, ladder):
    """``<@UMAL22|bob>``: the member id is Slack's, the name after ``|`` is display text its user chose."""
    assert client.post("/v1/ladders/test/players", json={"key": "mal"}, headers=admin()).status_code == 201
    link(client, "mal", "UMAL22")
    r = command(client, "<@UMAL22|bob> 21-3")
    assert r.json()["response_type"] == "in_channel" and r.json()["text"].startswith("Game 1: ada beat mal"), r.text
    r = command(client, "<@UMAL22|Bob Lee> 21-4")  # a shown name of two words: still the member
    assert r.json()["text"].startswith("Game 2: ada beat mal"), r.text
    # a member linked to no player is not looked up by the name shown, nor is oneself
    for text, said in {
        "<@U9NOBODY|bob> 21-3": "'U9NOBODY' is not linked",
        "<@U1ADA|bob> 21-3": "against yourself",
    }.items():
        r = command(client, text)
        assert r.status_code == 200 and r.json()["response_type"] == "ephemeral", r.text
        assert said in r.json()["text"] and "Nothing was recorded" in r.json()["text"], r.text
    assert "PATCH /v1/ladders/test/players/" in command(client, "<@U9NOBODY|bob> 21-3").json()["text"]
    assert games(client) == 2
    # typed text names the ladder's player of that key or alias, as the ladder page shows it
    assert command(client, "@bob 21-5").json()["text"].startswith("Game 3: ada beat bob")
    assert command(client, "UMAL22 21-6").json()["text"].startswith("Game 4: ada beat mal")
    [last] = client.get("/v1/ladders/test/games", params={"limit": 1}).json()["items"]
    assert [[p["key"] for p in side["players"]] for side in last["sides"]] == [["ada"], ["mal"]]


def test_top_on_a_private_ladder_answers_only_its_players_and_to_them_alone(client, ladder):
    assert command(client, "@bob 21-10").json()["response_type"] == "in_channel"
    assert client.patch("/v1/ladders/test", json={"private": True}, headers=admin()).status_code == 200
    for user in ("zed", "ada"):
        r = command(client, "top", user=user)
        assert r.status_code == 200 and r.json()["response_type"] == "ephemeral", r.text
        if user == "zed":  # a member of the workspace linked to no player of the ladder
            assert "Standings" not in r.json()["text"] and "bob" not in r.json()["text"], r.text
            assert "private" in r.json()["text"] and "'U1ZED'" in r.json()["text"], r.text
        else:
            assert r.json()["text"].splitlines()[0] == "Standings of Office pong:", r.text
    # a game recorded on it is shown to its recorder alone too: the channel may hold others
    r = command(client, "@cy 21-12")
    assert r.json()["response_type"] == "ephemeral" and r.json()["text"].startswith("Game 2: ada beat Cy"), r.text
    assert client.patch("/v1/ladders/test", json={"private": False}, headers=admin()).status_code == 200
    r = command(client, "top", user="zed")
    assert r.json()["response_type"] == "in_channel" and r.json()["text"].startswith("Standings of Office pong:")


def test_a_score_takes_ascii_digits_only(client, ladder):
    for text in ("@bob ٢١-١٥", "@bob ２１-１５", "@bob 21-١٥", "@bob ߂߁:3"):
        r = command(client, text)
        assert r.status_code == 200 and r.json()["response_type"] == "ephemeral", text
        assert "digits 0-9" in r.json()["text"] and "Nothing was recorded" in r.json()["text"], r.text
    assert games(client) == 0
    assert command(client, "@bob 21-15").json()["text"].startswith("Game 1: ada beat bob 21-15")
