"""Challenges: made between two existing, active, different players, at most one open between two; accepted,
declined or withdrawn; expired past their time; played in one call that records the game once however often it
is sent; every change a ``challenge`` event in the ladder's log."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update

from app import storage
from app.challenges import play
from app.storage.tables import Challenge, IdempotencyKey, LadderEvent
from tests.conftest import admin, bearer, make_ladder


def ladder_of(client, slug: str = "office", players: tuple[str, ...] = ("ada", "bob", "cy", "dee"), **config) -> dict:
    """A ladder with ``players`` (named with a capital); its admin key's header."""
    h = bearer(make_ladder(client, slug, auto_refit=False, **config))
    for key in players:
        r = client.post(f"/v1/ladders/{slug}/players", json={"key": key, "name": key.capitalize()}, headers=h)
        assert r.status_code == 201, r.text
    return h


def challenge(client, h: dict, sender: str, to: str, slug: str = "office", **extra) -> dict:
    r = client.post(f"/v1/ladders/{slug}/challenges", json={"from": sender, "to": to, **extra}, headers=h)
    assert r.status_code == 201, r.text
    return r.json()


def refused(r, status: int, field: str, *words: str) -> dict:
    """A problem+json of ``status`` naming ``field``, its detail saying each of ``words``."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["errors"][0]["field"] == field, body
    assert all(word in body["detail"] for word in words), body
    return body


def events(client, slug: str = "office") -> list[tuple[str, dict]]:
    """The ladder's challenge and game events in the log, oldest first, with the version each made."""
    with client.app.state.db.reading() as session:
        ladder_id = storage.ladders.by_slug(session, slug).id
        rows = session.execute(
            select(LadderEvent.kind, LadderEvent.data, LadderEvent.version)
            .where(LadderEvent.ladder_id == ladder_id, LadderEvent.kind.in_(("challenge", "game")))
            .order_by(LadderEvent.number)
        ).all()
    return [(kind, storage.events.parse(data), version) for kind, data, version in rows]


def listed(client, slug: str = "office", **params) -> list[int]:
    r = client.get(f"/v1/ladders/{slug}/challenges", params=params)
    assert r.status_code == 200, r.text
    return [c["id"] for c in r.json()["items"]]


def test_a_challenge_is_made_between_two_active_players_and_answered_once(client):
    h = ladder_of(client)
    made = challenge(client, h, "ada", "bob", message="lunch?")
    assert (made["id"], made["from"], made["from_name"], made["to"], made["to_name"]) == (1, "ada", "Ada", "bob", "Bob")
    assert (made["message"], made["status"], made["game"], made["answered_at"]) == ("lunch?", "open", None, None)
    created, expires = (datetime.fromisoformat(made[f]) for f in ("created_at", "expires_at"))
    assert expires - created == timedelta(days=7)
    # One open challenge between two players, whichever way; none to oneself, to a stranger or to the inactive.
    body = refused(challenge_r(client, h, "bob", "ada"), 409, "to", "challenge 1")
    assert body["challenge"] == 1
    refused(challenge_r(client, h, "ada", "ada"), 422, "to", "cannot challenge themselves")
    refused(challenge_r(client, h, "ada", "bobb"), 422, "to", "unknown player 'bobb'")
    refused(challenge_r(client, h, "zed", "bob"), 422, "from", "unknown player 'zed'")
    assert client.get("/v1/ladders/office/players/bobb").status_code == 404  # no player was made
    assert client.patch("/v1/ladders/office/players/dee", json={"active": False}, headers=h).status_code == 200
    refused(challenge_r(client, h, "ada", "dee"), 409, "to", "inactive")
    refused(challenge_r(client, h, "dee", "ada"), 409, "from", "inactive")
    for bad in ({"from": "ada"}, {"from": "ada", "to": "cy", "message": ""}, {"from": "ada", "to": "cy", "x": 1}):
        assert client.post("/v1/ladders/office/challenges", json=bad, headers=h).status_code == 422, bad
    assert client.post("/v1/ladders/office/challenges", json={"from": "ada", "to": "cy"}).status_code == 401
    assert listed(client) == [1]  # the refused ones changed nothing

    # Accept (open only), decline (open only), withdraw (open or accepted): each once.
    accepted = client.post("/v1/ladders/office/challenges/1/accept", headers=h).json()
    assert accepted["status"] == "accepted" and accepted["answered_at"] is not None
    refused(client.post("/v1/ladders/office/challenges/1/accept", headers=h), 409, "id", "is accepted")
    refused(client.post("/v1/ladders/office/challenges/1/decline", headers=h), 409, "id", "only an open")
    second = challenge(client, h, "cy", "ada")
    assert (
        client.post(f"/v1/ladders/office/challenges/{second['id']}/decline", headers=h).json()["status"] == "declined"
    )
    refused(client.delete(f"/v1/ladders/office/challenges/{second['id']}", headers=h), 409, "id", "is declined")
    third = challenge(client, h, "bob", "cy")
    assert client.delete(f"/v1/ladders/office/challenges/{third['id']}", headers=h).json()["status"] == "withdrawn"
    assert client.delete("/v1/ladders/office/challenges/1", headers=h).json()["status"] == "withdrawn"
    assert client.post("/v1/ladders/office/challenges/99/accept", headers=h).status_code == 404
    assert client.post("/v1/ladders/office/challenges/1/accept").status_code == 401
    fourth = challenge(client, h, "bob", "ada")  # the first no longer stands between them

    # Lists: newest first, by status now and by player, a page at a time.
    assert listed(client) == [4, 3, 2, 1]
    assert listed(client, status="open") == [4]
    assert listed(client, status=["declined", "withdrawn"]) == [3, 2, 1]
    assert listed(client, player="cy") == [3, 2] and listed(client, player="dee") == []
    first_page = client.get("/v1/ladders/office/challenges", params={"limit": 2}).json()
    rest = client.get("/v1/ladders/office/challenges", params={"limit": 2, "cursor": first_page["next_cursor"]}).json()
    assert [c["id"] for c in first_page["items"] + rest["items"]] == [4, 3, 2, 1] and rest["next_cursor"] is None
    assert client.get("/v1/ladders/office/challenges", params={"player": "nobody"}).status_code == 404
    assert client.get("/v1/ladders/office/challenges", params={"status": "lost"}).status_code == 422
    assert client.get("/v1/ladders/office/challenges", params={"player": "a\x00"}).status_code == 422  # not a 500
    assert client.get("/v1/ladders/office/challenges/4").json() == fourth
    assert client.get("/v1/ladders/office/challenges/5").status_code == 404

    # Every change is an event of the ladder's log, each in a transaction (a version) of its own.
    changes = [(data["action"], data["id"]) for kind, data, _ in events(client)]
    assert changes == [
        ("created", 1),
        ("accepted", 1),
        ("created", 2),
        ("declined", 2),
        ("created", 3),
        ("withdrawn", 3),
        ("withdrawn", 1),
        ("created", 4),
    ]
    assert len({version for _, _, version in events(client)}) == len(changes)


def challenge_r(client, h: dict, sender: str, to: str, slug: str = "office"):
    return client.post(f"/v1/ladders/{slug}/challenges", json={"from": sender, "to": to}, headers=h)


def test_playing_a_challenge_records_its_game_once_and_marks_it_played(client):
    h = ladder_of(client)
    first = challenge(client, h, "ada", "bob")
    # The winner and the scores must be the challenge's two players', the winner's score the higher.
    play = "/v1/ladders/office/challenges/1/game"
    refused(client.post(play, json={"winner": "cy"}, headers=h), 422, "winner", "not one of the challenge's players")
    refused(client.post(play, json={"winner": "ada", "scores": {"ada": 11, "bob": 13}}, headers=h), 422, "scores")
    refused(client.post(play, json={"winner": "ada", "scores": {"ada": 11, "cy": 3}}, headers=h), 422, "scores.cy")
    assert client.post(play, json={"winner": "ada", "scores": {"ada": 11}}, headers=h).status_code == 422
    assert client.post(play, json={"winner": "ada"}).status_code == 401
    assert client.get("/v1/ladders/office/games").json()["items"] == []

    r = client.post(play, json={"winner": "bob", "scores": {"bob": 21, "ada": 15}}, headers=h)
    assert r.status_code == 201, r.text
    played = r.json()
    assert (played["status"], played["game"], played["id"]) == ("played", 1, first["id"])
    assert "Idempotent-Replayed" not in r.headers and int(r.headers["Ladder-Version"]) > 0
    game = client.get("/v1/ladders/office/games/1").json()
    assert [[p["key"] for p in side["players"]] for side in game["sides"]] == [["bob"], ["ada"]]
    assert [side["rank"] for side in game["sides"]] == [1, 2]

    # Sent again (a retry), it is answered as the first time and records nothing more.
    again = client.post(play, json={"winner": "bob", "scores": {"ada": 15, "bob": 21}}, headers=h)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == played
    assert [g["id"] for g in client.get("/v1/ladders/office/games").json()["items"]] == [1]
    # Another result, or any answer, for a played challenge is a 409 naming its game.
    body = refused(client.post(play, json={"winner": "ada"}, headers=h), 409, "id", "was played: game 1")
    assert body["game"] == 1 and body["challenge_status"] == "played"
    refused(client.post("/v1/ladders/office/challenges/1/accept", headers=h), 409, "id", "game 1")
    refused(client.delete("/v1/ladders/office/challenges/1", headers=h), 409, "id", "game 1")

    # An accepted challenge is played too; a declined one is not; an unknown one is a 404.
    second = challenge(client, h, "cy", "ada")
    client.post(f"/v1/ladders/office/challenges/{second['id']}/accept", headers=h)
    r = client.post(f"/v1/ladders/office/challenges/{second['id']}/game", json={"winner": "ADA"}, headers=h)
    assert r.status_code == 201 and r.json()["game"] == 2
    third = challenge(client, h, "bob", "dee")
    client.post(f"/v1/ladders/office/challenges/{third['id']}/decline", headers=h)
    refused(
        client.post(f"/v1/ladders/office/challenges/{third['id']}/game", json={"winner": "bob"}, headers=h), 409, "id"
    )
    assert client.post("/v1/ladders/office/challenges/9/game", json={"winner": "bob"}, headers=h).status_code == 404
    assert [g["id"] for g in client.get("/v1/ladders/office/games").json()["items"]] == [2, 1]

    # The game and the challenge's "played" are one transaction: one version, the game's event first.
    log = events(client)
    first_game = [
        (kind, data, version) for kind, data, version in log if data in ({"game": 1}, {"action": "played", "id": 1})
    ]
    assert [kind for kind, _, _ in first_game] == ["game", "challenge"]
    assert first_game[0][2] == first_game[1][2]


def test_a_challenge_past_its_time_is_expired_and_no_longer_stands_between_the_two(client):
    h = ladder_of(client)
    challenge(client, h, "ada", "bob")
    challenge(client, h, "cy", "dee")
    client.post("/v1/ladders/office/challenges/2/accept", headers=h)
    past = datetime.now(UTC) - timedelta(minutes=1)
    with client.app.state.db.writing() as session:  # both reach their expiry (a week, shortened here)
        session.execute(update(Challenge).values(expires_at=past))
    assert client.get("/v1/ladders/office/challenges/1").json()["status"] == "expired"
    assert listed(client, status="open") == [] and listed(client, status="accepted") == []
    assert listed(client, status="expired") == [2, 1]
    refused(client.post("/v1/ladders/office/challenges/1/accept", headers=h), 409, "id", "is expired")
    refused(
        client.post("/v1/ladders/office/challenges/2/game", json={"winner": "cy"}, headers=h), 409, "id", "is expired"
    )
    assert client.get("/v1/ladders/office/games").json()["items"] == []
    # The next challenge write marks them expired, with their events; the two may challenge each other anew.
    assert challenge(client, h, "bob", "ada")["id"] == 3
    assert [(d["action"], d["id"]) for _, d, _ in events(client)][-3:] == [
        ("expired", 1),
        ("expired", 2),
        ("created", 3),
    ]
    assert listed(client, status="expired") == [2, 1]
    with client.app.state.db.reading() as session:
        stored = dict(session.execute(select(Challenge.number, Challenge.status)).all())
    assert stored == {1: "expired", 2: "expired", 3: "open"}


def test_challenges_name_players_as_games_do_and_follow_the_ladders_privacy(client):
    h = ladder_of(client, "folded", players=("Ada", "Bob", "Cy"), case_insensitive_keys=True)
    made = challenge(client, h, "ADA", "bob", slug="folded")
    assert (made["from"], made["from_name"], made["to"]) == ("ada", "Ada", "bob")
    refused(challenge_r(client, h, "Ada", "ada", slug="folded"), 422, "to", "themselves")
    # A key changed since: the old one is an alias that leads to the player; the challenge shows the new key.
    assert client.patch("/v1/ladders/folded/players/bob", json={"key": "rob"}, headers=h).status_code == 200
    assert client.get("/v1/ladders/folded/challenges/1").json()["to"] == "rob"
    refused(challenge_r(client, h, "BOB", "ada", slug="folded"), 409, "to", "challenge 1")
    r = client.post("/v1/ladders/folded/challenges/1/game", json={"winner": "Bob"}, headers=h)
    assert r.status_code == 201 and r.json()["game"] == 1
    assert client.get("/v1/ladders/folded/games/1").json()["sides"][0]["players"][0]["key"] == "rob"
    # A merge moves the merged player's challenges to the one they became.
    challenge(client, h, "cy", "ada", slug="folded")
    assert client.post("/v1/ladders/folded/players/cy/merge", json={"into": "rob"}, headers=h).status_code == 200
    assert client.get("/v1/ladders/folded/challenges/2").json()["from"] == "rob"

    # A private ladder's challenges are read with a key of it, as its games are.
    assert client.patch("/v1/ladders/folded", json={"private": True}, headers=h).status_code == 200
    assert client.get("/v1/ladders/folded/challenges").status_code == 401
    assert client.get("/v1/ladders/folded/challenges/1").status_code == 401
    made = client.post("/v1/ladders/folded/keys", json={"name": "reader", "role": "read"}, headers=h).json()
    reader = bearer(made["key"])
    assert client.get("/v1/ladders/folded/challenges", headers=reader).status_code == 200
    assert (
        client.post("/v1/ladders/folded/challenges", json={"from": "ada", "to": "rob"}, headers=reader).status_code
        == 403
    )
    # Deleting the ladder takes its challenges with it.
    assert client.request("DELETE", "/v1/ladders/folded", json={"slug": "folded"}, headers=admin()).status_code in (
        200,
        204,
    )
    with client.app.state.db.reading() as session:
        assert session.scalar(select(Challenge.number).limit(1)) is None


def test_results_sent_at_once_for_one_challenge_record_one_game(client):
    """Six calls at once, three saying Ada won and three Bob: one game; the calls of its result are answered with
    the challenge played, the others with a 409 naming that game."""
    h = ladder_of(client)
    challenge(client, h, "ada", "bob")
    winners = ["ada", "bob"] * 3
    with ThreadPoolExecutor(len(winners)) as pool:
        answers = list(
            pool.map(
                lambda w: client.post("/v1/ladders/office/challenges/1/game", json={"winner": w}, headers=h), winners
            )
        )
    assert [g["id"] for g in client.get("/v1/ladders/office/games").json()["items"]] == [1]
    won = client.get("/v1/ladders/office/games/1").json()["sides"][0]["players"][0]["key"]
    for winner, answer in zip(winners, answers, strict=True):
        if winner == won:
            assert answer.status_code == 201 and answer.json()["game"] == 1, answer.text
        else:
            refused(answer, 409, "id", "was played: game 1")


def test_a_clients_idempotency_key_cannot_take_the_place_of_a_challenges_game(client):
    """A game posted under a key spelled as the server once spelled a challenge's own (``challenge:N``), before the
    challenge exists, neither blocks its game nor answers for it: with another body or with the very same game."""
    h = ladder_of(client)
    bob_beats_dee = {"sides": [{"players": ["bob"], "rank": 1}, {"players": ["dee"], "rank": 2}]}
    cy_beats_ada = {"sides": [{"players": ["cy"], "rank": 1}, {"players": ["ada"], "rank": 2}]}
    for number, game in ((1, cy_beats_ada), (2, bob_beats_dee)):
        r = client.post("/v1/ladders/office/games", json=game, headers=h | {"Idempotency-Key": f"challenge:{number}"})
        assert r.status_code == 201, r.text
    challenge(client, h, "ada", "bob")
    challenge(client, h, "bob", "dee")

    for number, winner, game in ((2, "bob", 3), (1, "ada", 4)):
        r = client.post(f"/v1/ladders/office/challenges/{number}/game", json={"winner": winner}, headers=h)
        assert r.status_code == 201, r.text
        assert "Idempotent-Replayed" not in r.headers, (number, r.headers)
        assert (r.json()["status"], r.json()["game"]) == ("played", game)
        again = client.post(f"/v1/ladders/office/challenges/{number}/game", json={"winner": winner}, headers=h)
        assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == r.json()
    assert [g["id"] for g in client.get("/v1/ladders/office/games").json()["items"]] == [4, 3, 2, 1]
    # The clients' keys still answer what they stored; the server's own cannot be sent as a header.
    r = client.post("/v1/ladders/office/games", json=bob_beats_dee, headers=h | {"Idempotency-Key": "challenge:2"})
    assert r.status_code == 201 and r.headers["Idempotent-Replayed"] == "true" and r.json()["id"] == 2
    own = play.idempotency_key(2).encode()
    r = client.post("/v1/ladders/office/games", json=bob_beats_dee, headers=h | {"Idempotency-Key": own})
    refused(r, 422, "Idempotency-Key")


def test_a_challenge_played_by_an_older_version_is_replayed_only_with_its_own_game(client):
    """Older versions recorded a challenge's game under ``challenge:N``, where a client's key may stand too: such a
    record answers a retry only if it holds the game that played the challenge."""
    h = ladder_of(client)
    challenge(client, h, "ada", "bob")
    challenge(client, h, "cy", "dee")
    for number, winner in ((1, "bob"), (2, "dee")):
        r = client.post(f"/v1/ladders/office/challenges/{number}/game", json={"winner": winner}, headers=h)
        assert r.status_code == 201, r.text
    with client.app.state.db.writing() as session:  # 1's record as an older version left it; 2's past its time
        session.execute(
            update(IdempotencyKey).where(IdempotencyKey.key == play.idempotency_key(1)).values(key="challenge:1")
        )
        session.execute(delete(IdempotencyKey).where(IdempotencyKey.key == play.idempotency_key(2)))
    r = client.post("/v1/ladders/office/challenges/1/game", json={"winner": "bob"}, headers=h)
    assert r.status_code == 201 and r.headers["Idempotent-Replayed"] == "true" and r.json()["game"] == 1
    # A client's game under "challenge:2" (Cy won it) does not make "Cy won challenge 2" a result already saved.
    cy_beats_dee = {"sides": [{"players": ["cy"], "rank": 1}, {"players": ["dee"], "rank": 2}]}
    r = client.post("/v1/ladders/office/games", json=cy_beats_dee, headers=h | {"Idempotency-Key": "challenge:2"})
    assert r.status_code == 201 and r.json()["id"] == 3
    r = client.post("/v1/ladders/office/challenges/2/game", json={"winner": "cy"}, headers=h)
    refused(r, 409, "id", "was played: game 2")


def test_a_merge_leaves_two_players_at_most_one_unresolved_challenge(client):
    """Cy merged into Bob: of the challenges that now stand between the same two players one stays (an accepted
    one, else the oldest), and the others are withdrawn, saying why; one between Bob and Cy themselves is withdrawn
    too. Those already resolved stay as they were."""
    h = ladder_of(client, players=("ada", "bob", "cy", "dee", "eve"))
    challenge(client, h, "ada", "bob")  # 1: gives way to 2, accepted
    challenge(client, h, "cy", "ada")  # 2
    client.post("/v1/ladders/office/challenges/2/accept", headers=h)
    challenge(client, h, "bob", "cy")  # 3: Bob against himself
    challenge(client, h, "dee", "cy")  # 4: stays, the older
    challenge(client, h, "bob", "dee")  # 5: gives way to 4
    challenge(client, h, "eve", "cy")  # 6: eve's only one: stays
    challenge(client, h, "bob", "eve")  # 7: declined, so resolved: stays as it was
    client.post("/v1/ladders/office/challenges/7/decline", headers=h)
    before = len(events(client))

    r = client.post("/v1/ladders/office/players/cy/merge", json={"into": "bob"}, headers=h)
    assert r.status_code == 200, r.text
    shown = {c["id"]: c for c in client.get("/v1/ladders/office/challenges").json()["items"]}
    assert {n: (c["from"], c["to"], c["status"], c["reason"]) for n, c in shown.items()} == {
        1: ("ada", "bob", "withdrawn", "duplicate"),
        2: ("bob", "ada", "accepted", None),
        3: ("bob", "bob", "withdrawn", "same_player"),
        4: ("dee", "bob", "open", None),
        5: ("bob", "dee", "withdrawn", "duplicate"),
        6: ("eve", "bob", "open", None),
        7: ("bob", "eve", "declined", None),
    }
    assert all(shown[n]["answered_at"] is not None for n in (1, 3, 5))
    # The withdrawn ones cannot be played: one game between two players, as if no merge had happened.
    for number in (1, 3, 5):
        refused(
            client.post(f"/v1/ladders/office/challenges/{number}/game", json={"winner": "bob"}, headers=h),
            409,
            "id",
            "is withdrawn",
        )
    for number in (2, 4):
        r = client.post(f"/v1/ladders/office/challenges/{number}/game", json={"winner": "bob"}, headers=h)
        assert r.status_code == 201, r.text
    # Each withdrawal is an event, in the merge's own transaction.
    merged = events(client)[before : before + 3]
    assert [(data["action"], data["id"]) for _, data, _ in merged] == [
        ("withdrawn", 1),
        ("withdrawn", 3),
        ("withdrawn", 5),
    ]
    assert len({version for _, _, version in merged}) == 1
