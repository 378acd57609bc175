"""Seasons: closing one archives the standings as they stood, with each player's record in the season; later games
belong to the next; a void of a closed season's game replays the ratings but leaves its archive, and says so;
exports keep seasons.  A season may pull the ratings back toward the start, and every replay pulls them again."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest

from tests.api.helpers import START, board, dated_game, export, post, profile, same, season, vectors, wait
from tests.conftest import bearer, make_ladder


def standings(client, slug: str, name: str, **params) -> dict:
    r = client.get(f"/v1/ladders/{slug}/seasons/{name}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def close(client, slug: str, key: str, name: str, pull: float | None = None) -> dict:
    body = {"name": name} | ({} if pull is None else {"pull": pull})
    r = client.post(f"/v1/ladders/{slug}/seasons", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()


def test_a_closed_season_keeps_its_standings_and_the_next_counts_the_games_after_it(client):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    empty = close(client, "office", key, "before anything")  # allowed on an empty ladder, and empty
    assert (empty["games"], empty["players"], empty["first_game"], empty["last_game"]) == (0, 0, None, None)
    post(client, "office", key, january)
    shown = board(client, "office", inactive="true")["items"]
    winter = close(client, "office", key, "winter")
    assert (winter["games"], winter["first_game"], winter["last_game"], winter["players"]) == (112, 1, 112, 10)
    assert winter["changed_after_closing"] is None
    rows = standings(client, "office", "winter", limit=500)
    assert rows["season"] == winter and rows["next_cursor"] is None
    # The leaderboard's conservative order and numbers as they stood, with the season's records.
    assert [r["key"] for r in rows["items"]] == [r["key"] for r in shown]
    for row, now in zip(rows["items"], shown, strict=True):
        assert (row["elo"], row["strength_se"]) == (now["elo"], now["strength_se"])
        assert row["conservative"] == now["strength"] == now["conservative"]
        assert (row["games"], row["wins"], row["draws"], row["losses"]) == (now["games"], now["wins"], 0, now["losses"])
    assert [r["rank"] for r in rows["items"]] == list(range(1, 11))
    # The next season counts only its own games, and only its players.
    post(client, "office", key, later[:20])
    spring = close(client, "office", key, "spring")
    assert (spring["games"], spring["first_game"], spring["last_game"], spring["players"]) == (20, 113, 132, 9)
    stay = next(r for r in standings(client, "office", "spring")["items"] if r["key"] == "stay")
    assert (stay["games"], stay["wins"] + stay["losses"]) == (20, 20)
    assert "away" not in [r["key"] for r in standings(client, "office", "spring")["items"]]
    # Pages by rank; the list, latest first; names are unique; unknown ones are 404s.
    first = standings(client, "office", "winter", limit=4)
    rest = standings(client, "office", "winter", limit=100, cursor=first["next_cursor"])
    assert [r["rank"] for r in first["items"] + rest["items"]] == list(range(1, 11))
    listed = client.get("/v1/ladders/office/seasons").json()
    assert [s["name"] for s in listed["items"]] == ["spring", "winter", "before anything"]
    r = client.post("/v1/ladders/office/seasons", json={"name": "winter"}, headers=bearer(key))
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "name"
    assert client.get("/v1/ladders/office/seasons/summer").status_code == 404
    for bad in ("", " x", "a/b", "x" * 101, 5):
        r = client.post("/v1/ladders/office/seasons", json={"name": bad}, headers=bearer(key))
        assert r.status_code == 422, bad
    assert client.post("/v1/ladders/office/seasons", json={"name": "x"}).status_code == 401


def test_a_void_in_a_closed_season_replays_the_ratings_and_leaves_its_archive(client):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    post(client, "office", key, january)
    close(client, "office", key, "winter")
    post(client, "office", key, later[:10])
    archived = standings(client, "office", "winter", limit=500)
    assert client.post("/v1/ladders/office/games/3/void", headers=bearer(key)).status_code == 200
    now = standings(client, "office", "winter", limit=500)
    assert now["items"] == archived["items"]
    assert now["season"]["changed_after_closing"] is not None
    assert client.get("/v1/ladders/office/audit").json()["consistent"]
    # A game of the season after it was not reached.
    spring = close(client, "office", key, "spring")
    assert spring["changed_after_closing"] is None


def test_an_export_keeps_the_seasons_and_their_archives(client, cli, tmp_path, capsys):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    close(client, "office", key, "before anything")
    post(client, "office", key, january)
    close(client, "office", key, "winter")
    post(client, "office", key, later[:10])
    assert client.post("/v1/ladders/office/games/3/void", headers=bearer(key)).status_code == 200  # winter changed
    close(client, "office", key, "spring")
    post(client, "office", key, later[10:12])
    path = tmp_path / "office.ndjson"
    path.write_bytes(export(client, "office", **bearer(key)))
    cli(["import", "copy", str(path)])
    created = json.loads(capsys.readouterr().out)
    for name in ("before anything", "winter", "spring"):
        assert standings(client, "copy", name, limit=500) == standings(client, "office", name, limit=500)
    listed = [s["name"] for s in client.get("/v1/ladders/copy/seasons").json()["items"]]
    assert listed == ["spring", "winter", "before anything"]
    # The next season of the copy starts where the original's would.
    assert close(client, "copy", created["admin_key"], "summer")["games"] == 2


def test_erasing_a_player_erases_them_from_the_archives_and_odd_names_are_refused(client):
    january, _ = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    post(client, "office", key, january)
    named = client.patch("/v1/ladders/office/players/away", json={"name": "Alice Away"}, headers=bearer(key))
    assert named.status_code == 200
    close(client, "office", key, "winter")
    erased = client.delete("/v1/ladders/office/players/away", headers=bearer(key)).json()["key"]
    rows = standings(client, "office", "winter", limit=500)["items"]
    assert "away" not in [r["key"] for r in rows] and "Alice Away" not in [r["name"] for r in rows]
    assert erased in [r["key"] for r in rows]
    exported = export(client, "office", **bearer(key))
    assert b"Alice Away" not in exported and b'"away"' not in exported
    for name in (".", "..", "...", "a\x00b"):
        r = client.post("/v1/ladders/office/seasons", json={"name": name}, headers=bearer(key))
        assert r.status_code == 422, name
    for path in ("a%00b", "%01"):
        assert client.get(f"/v1/ladders/office/seasons/{path}").status_code == 422, path


def test_season_names_that_look_the_same_are_one_season_and_a_pull_of_minus_zero_is_zero(client):
    """ "á" as one character (NFC) or as "a" and a combining accent (NFD) is one name, and -0.0 is 0."""
    key = make_ladder(client, "names", k=1, auto_refit=False)
    post(client, "names", key, season()[0][:4])
    composed = close(client, "names", key, "verano m\u00e1s", pull=-0.0)
    assert composed["name"] == "verano m\u00e1s" and json.dumps(composed["pull"]) == "0.0"
    again = client.post("/v1/ladders/names/seasons", json={"name": "verano ma\u0301s"}, headers=bearer(key))
    assert again.status_code == 409, again.text
    assert standings(client, "names", "verano ma\u0301s")["season"]["name"] == "verano m\u00e1s"


def initial(client, slug: str, key: str, keys: list[str]) -> dict[str, np.ndarray]:
    """The vectors ``keys`` start ladder ``slug`` with (seeded by the ladder's seed and the key), read from a copy
    of its settings where they have played nothing."""
    ladder = client.get(f"/v1/ladders/{slug}").json()
    fresh = make_ladder(client, f"{slug}-fresh", k=ladder["k"], seed=ladder["seed"], auto_refit=False)
    for name in keys:
        r = client.post(f"/v1/ladders/{slug}-fresh/players", json={"key": name}, headers=bearer(fresh))
        assert r.status_code == 201, r.text
    return {name: np.array(profile(client, f"{slug}-fresh", name)["vector"]) for name in keys}


@pytest.mark.parametrize(
    "rule",
    [{"drift_steps": True}, {"drift_steps": False}, {"rate_rule": "variance"}],
    ids=["steps follow time away", "steps count games", "variance rule"],
)
def test_a_season_can_pull_the_ratings_back_and_every_replay_pulls_them_again(client, cli, tmp_path, capsys, rule):
    january, later = season()
    key = make_ladder(client, "pulled", k=1, seed=2, auto_refit=False, **rule)
    post(client, "pulled", key, january)
    shown = board(client, "pulled", inactive="true")["items"]
    before = vectors(client, "pulled")
    start = initial(client, "pulled", key, list(before))
    winter = close(client, "pulled", key, "winter", pull=0.25)
    assert winter["pull"] == 0.25
    right_after = board(client, "pulled", inactive="true")
    # The archive holds the standings before the pull; the ratings moved a quarter of the way back to the start.
    rows = standings(client, "pulled", "winter", limit=500)["items"]
    assert [(r["key"], r["elo"], r["strength_se"]) for r in rows] == [
        (r["key"], r["elo"], r["strength_se"]) for r in shown
    ]
    after = vectors(client, "pulled")
    for name, vector in after.items():
        assert np.array_equal(vector, start[name] + 0.75 * (np.array(before[name]) - start[name])), name
    # Less is known of everyone: the uncertainty grew, and so does the next step.
    pulled = {r["key"]: r for r in board(client, "pulled", inactive="true")["items"]}
    assert all(pulled[r["key"]]["strength_se"] > r["strength_se"] for r in shown)
    assert client.get("/v1/ladders/pulled/audit").json()["consistent"]

    # A void before the boundary replays the log and pulls again there: as a ladder that never had the game.
    post(client, "pulled", key, later[:30])
    same(board(client, "pulled", inactive="true", as_of=later[0]["played_at"]), right_after)  # the past: pulled
    twin = make_ladder(client, "twin", k=1, seed=2, auto_refit=False, **rule)
    post(client, "twin", twin, january[:4] + january[5:])
    close(client, "twin", twin, "winter", pull=0.25)
    post(client, "twin", twin, later[:30])
    assert client.post("/v1/ladders/pulled/games/5/void", headers=bearer(key)).status_code == 200
    same(board(client, "pulled", inactive="true"), board(client, "twin", inactive="true"))
    assert vectors(client, "pulled") == vectors(client, "twin")
    assert client.get("/v1/ladders/pulled/audit").json()["consistent"]
    # The past goes through the pull as the void replayed it: the table after the boundary is the twin's.
    same(
        board(client, "pulled", inactive="true", as_of=later[0]["played_at"]),
        board(client, "twin", inactive="true", as_of=later[0]["played_at"]),
    )

    # An export keeps the pull: the copy's ratings, and its next steps, are the original's.
    path = tmp_path / "pulled.ndjson"
    exported = export(client, "pulled", **bearer(key))
    # A file whose checkpoint does not name its season's pull (edited by hand) is refused, whole.
    assert exported.count(b',"pulls":[0.25]') == 1
    path.write_bytes(exported.replace(b',"pulls":[0.25]', b""))
    with pytest.raises(SystemExit, match=r"season\.pull: no checkpoint after game 112 names this pull"):
        cli(["import", "copy", str(path)])
    path.write_bytes(exported)
    cli(["import", "copy", str(path)])
    copy_key = json.loads(capsys.readouterr().out)["admin_key"]
    assert [s["pull"] for s in client.get("/v1/ladders/copy/seasons").json()["items"]] == [0.25]
    post(client, "pulled", key, later[30:40])
    post(client, "copy", copy_key, later[30:40])
    assert vectors(client, "copy") == vectors(client, "pulled")

    for bad in (-0.1, 1.5, "half", None, True, "0.5"):
        r = client.post("/v1/ladders/pulled/seasons", json={"name": "bad", "pull": bad}, headers=bearer(key))
        assert r.status_code == 422, bad


def test_a_season_that_starts_everyone_afresh_leaves_its_games_to_the_past(client):
    january, later = season()
    key = make_ladder(client, "afresh", k=1, seed=3, auto_refit=False)
    post(client, "afresh", key, january)
    names = list(vectors(client, "afresh"))
    start = initial(client, "afresh", key, names)
    close(client, "afresh", key, "winter", pull=1)
    assert all(np.array_equal(v, start[n]) for n, v in vectors(client, "afresh").items())
    # A refit forgets the games a season's pull forgot: "away", who played only then, keeps the start.
    post(client, "afresh", key, later[:40])
    started = client.post("/v1/ladders/afresh/refits", json={"holdout": 0}, headers=bearer(key))
    assert started.status_code == 202, started.text
    assert wait(client, started.headers["location"])["status"] == "done"
    assert client.post(f"{started.headers['location']}/apply", headers=bearer(key)).status_code == 200
    assert np.array_equal(profile(client, "afresh", "away")["vector"], start["away"])
    assert not np.array_equal(profile(client, "afresh", "stay")["vector"], start["stay"])
    assert client.get("/v1/ladders/afresh/audit").json()["consistent"]
    # A refit that read the log before a season pulled the ratings back is not applied over the pull.
    started = client.post("/v1/ladders/afresh/refits", json={"holdout": 0}, headers=bearer(key))
    assert wait(client, started.headers["location"])["status"] == "done"
    close(client, "afresh", key, "spring", pull=0.5)
    refused = client.post(f"{started.headers['location']}/apply", headers=bearer(key))
    assert refused.status_code == 409 and refused.json()["errors"][0]["field"] == "refit_id"


def test_two_seasons_that_close_after_the_same_game_pull_twice_and_a_replay_keeps_both(client):
    january, later = season()
    for slug in ("double", "twin"):
        key = make_ladder(client, slug, k=1, seed=5, auto_refit=False)
        post(client, slug, key, january if slug == "double" else january[:2] + january[3:])
        close(client, slug, key, "a", pull=0.5)
        close(client, slug, key, "b", pull=0.5)
        post(client, slug, key, later[:10])
        if slug == "double":
            assert client.post("/v1/ladders/double/games/3/void", headers=bearer(key)).status_code == 200
    assert vectors(client, "double") == vectors(client, "twin")
    same(board(client, "double", inactive="true"), board(client, "twin", inactive="true"))
    assert client.get("/v1/ladders/double/audit").json()["consistent"]


@pytest.mark.parametrize("pull", [0.5, 0.9])
def test_games_posted_one_at_a_time_after_a_pull_replay_to_the_last_bit(client, pull):
    """With steps that count games, experience after a pull of 0.9 is not a whole number: games added one at a
    time (as posted) and all at once (as the audit replays them) still agree."""
    key = make_ladder(client, "single", k=1, seed=2, auto_refit=False, drift_steps=False)
    post(client, "single", key, [dated_game("a", "b", n % 3 == 0, START + timedelta(hours=n)) for n in range(7)])
    close(client, "single", key, "first", pull=pull)
    for n in range(8):
        one = dated_game("a", "b", n % 2 == 0, START + timedelta(days=1, hours=n))
        assert client.post("/v1/ladders/single/games", json=one, headers=bearer(key)).status_code == 201
    audit = client.get("/v1/ladders/single/audit").json()
    assert audit["consistent"] and audit["replayed_games"] == 8, audit


def test_a_refit_after_the_seasons_last_game_was_voided_applies(client):
    january, _ = season()
    key = make_ladder(client, "voided", k=1, seed=3, auto_refit=False)
    post(client, "voided", key, january)
    close(client, "voided", key, "winter", pull=0.5)
    assert client.post(f"/v1/ladders/voided/games/{len(january)}/void", headers=bearer(key)).status_code == 200
    assert client.get("/v1/ladders/voided/audit").json()["consistent"]
    started = client.post("/v1/ladders/voided/refits", json={"holdout": 0}, headers=bearer(key))
    assert wait(client, started.headers["location"])["status"] == "done"
    applied = client.post(f"{started.headers['location']}/apply", headers=bearer(key))
    assert applied.status_code == 200, applied.text
    assert client.get("/v1/ladders/voided/audit").json()["consistent"]
