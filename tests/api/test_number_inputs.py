"""Numbers in request bodies and export lines are JSON numbers, never `true` taken as 1; scores are bounded."""

from __future__ import annotations

import json
import re

import pytest

from tests.api.helpers import duel, export, problem
from tests.conftest import admin, bearer, make_ladder

#: Each request body with a number in it: (method, path under /v1/ladders, a valid body, and the numeric fields, as
#: a 422 names them, that are set to `true` in it one at a time).
BODIES = {
    "ladder": (
        "POST",
        "",
        {"slug": "typed", "init_offset": [0.0, 1.0, 0.0, 0.0], "play": {"best_of": 3}},
        "k eta eta_tau init_scale init_offset[0] seed drift seat_prior noise cycles inactive_after_days season_pull "
        "play.best_of play.points",
    ),
    "ladder change": (
        "PATCH",
        "/test",
        {"play": {"best_of": 3}},
        "k eta eta_tau drift seat_prior noise cycles inactive_after_days season_pull play.best_of play.points",
    ),
    "game": (
        "POST",
        "/test/games",
        {"sides": [{"players": ["a"], "rank": 1, "advantage": 0.1}, {"players": ["b"], "rank": 2}]},
        "sides[0].rank sides[0].advantage sides[1].win_probability",
    ),
    "scored game": (
        "POST",
        "/test/games",
        {"sides": [{"players": ["a"], "score": 2}, {"players": ["b"], "score": 1}]},
        "sides[0].score",
    ),
    "match": (
        "POST",
        "/test/games",
        {"sides": [{"players": ["a"]}, {"players": ["b"]}], "match": [[11, 7], [11, 9]]},
        "match[0][0]",
    ),
    "player": ("POST", "/test/players", {"key": "ann", "vector": [0.0, 1.0]}, "vector[0]"),
    "prediction": (
        "POST",
        "/test/predict",
        {"sides": [{"players": ["a"], "advantage": 0.1}, {"players": ["b"]}]},
        "sides[0].advantage sides[1].win_probability",
    ),
    "teams": ("POST", "/test/teams", {"players": ["a", "b", "c", "d"], "sizes": [2, 2]}, "teams sizes[0]"),
    "refit": (
        "POST",
        "/test/refits",
        {"select_k": [1, 2]},
        "l2 restarts holdout select_k[0] folds eta replay_k seed",
    ),
    "season": ("POST", "/test/seasons", {"name": "spring"}, "pull"),
    "challenge played": ("POST", "/test/challenges/1/game", {"winner": "a", "scores": {"a": 2, "b": 1}}, "scores.a"),
}


def with_value(body: dict, field: str, value: object) -> dict:
    """A deep copy of ``body`` with ``field`` ("sides[0].score", "play.best_of", "match[0][0]") set to ``value``."""
    body = json.loads(json.dumps(body))
    parts = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", field)]
    at = body
    for part in parts[:-1]:
        at = at[part]
    at[parts[-1]] = value
    return body


@pytest.mark.parametrize("name", BODIES)
def test_true_is_not_a_number_in_any_request_body(client, name):
    """`true` sent for a number is a 422 naming the field, in every request body (pydantic's lax mode took it as 1:
    a ladder of `best_of: true` played best-of-1 matches), and changes nothing."""
    r = client.post("/v1/ladders", json={"slug": "test", "seed": 1}, headers=admin())
    method, path, body, fields = BODIES[name]
    h = bearer(r.json()["admin_key"]) if path else admin()
    taken = []
    for field in fields.split():
        r = client.request(method, "/v1/ladders" + path, json=with_value(body, field, True), headers=h)
        if r.status_code != 422 or field not in {e["field"] for e in r.json().get("errors", [])}:
            taken.append((field, r.status_code, r.text[:200]))
    assert not taken, taken
    assert client.get("/v1/ladders/test").json()["games"] == 0
    assert client.get("/v1/ladders/typed").status_code == 404


#: Export lines with a number in them, and the numbers set to `true` one at a time (the field as the restore names
#: it): a restore reads them as the API reads bodies.
EXPORT_NUMBERS = {
    "header": "melo_export players games ladder.seed ladder.eta ladder.k ladder.play.best_of",
    "game": "game.seq game.sides[0].rank",
    "checkpoint": "checkpoint.after_seq checkpoint.pulls[0] checkpoint.variances.a",
    "season": "season.after_seq season.games season.pull season.standings[0].rank season.standings[0].elo",
}


def test_true_is_not_a_number_in_an_export_line(client, cli, tmp_path):
    key = make_ladder(client, "office", play={"best_of": 3})
    assert client.post("/v1/ladders/office/games", json=duel("a", "b"), headers=bearer(key)).status_code == 201
    season = client.post("/v1/ladders/office/seasons", json={"name": "one", "pull": 0.5}, headers=admin())
    assert season.status_code == 201, season.text
    lines = [json.loads(line) for line in export(client, "office").splitlines()]
    game = next(n for n, line in enumerate(lines) if "game" in line)
    vectors = {"a": [0.0, 1.0, 0.0, 0.0]}
    checkpoint = {"checkpoint": {"after_seq": 1, "vectors": vectors, "pulls": [0.5], "variances": {"a": 0.1}}}
    lines.insert(game + 1, checkpoint)
    path = tmp_path / "typed.ndjson"
    taken = []
    for kind, fields in EXPORT_NUMBERS.items():
        at = next(n for n, line in enumerate(lines) if ("melo_export" if kind == "header" else kind) in line)
        for field in fields.split():
            bad = [*lines[:at], with_value(lines[at], field, True), *lines[at + 1 :]]
            path.write_text("\n".join(map(json.dumps, bad)) + "\n")
            try:
                cli(["import", f"copy-{len(taken)}", str(path)])
                taken.append((field, "restored"))
            except SystemExit as refused:
                if not re.search(rf"line {at + 1}: {re.escape(field)}: .*nothing was restored", str(refused)):
                    taken.append((field, str(refused)))
    assert not taken, taken
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")  # as it was, the checkpoint added: restored
    cli(["import", "copy", str(path)])
    assert client.get("/v1/ladders/copy").json()["games"] == 1


#: Scores a side may give, and those it may not: within ±1,000,000 (negative ones too, e.g. minus a golf score).
SCORES_TAKEN = [1_000_000, -1_000_000, -3, 0.5, -2.5e-7]
SCORES_REFUSED = [1_000_000.5, 1e9, 1e308, -1e9, -1e308]


def test_a_sides_score_is_bounded(client):
    h = bearer(make_ladder(client))
    for score in SCORES_REFUSED:
        game = {"sides": [{"players": ["a"], "score": score}, {"players": ["b"], "score": 0}]}
        refused = problem(client.post("/v1/ladders/test/games", json=game, headers=h), 422, "sides[0].score")
        assert "1000000" in refused["detail"], refused
        batch = {"games": [game]}
        problem(client.post("/v1/ladders/test/games/batch", json=batch, headers=h), 422, "games[0].sides[0].score")
    assert client.get("/v1/ladders/test").json()["games"] == 0
    for score in SCORES_TAKEN:
        game = {"sides": [{"players": ["a"], "score": score}, {"players": ["b"], "score": 0}]}
        r = client.post("/v1/ladders/test/games", json=game, headers=h)
        assert r.status_code == 201 and r.json()["sides"][0]["score"] == score, r.text


def test_a_challenges_scores_are_bounded(client):
    h = bearer(make_ladder(client))
    assert client.post("/v1/ladders/test/games", json=duel("ada", "bob"), headers=h).status_code == 201
    r = client.post("/v1/ladders/test/challenges", json={"from": "ada", "to": "bob"}, headers=h)
    assert r.status_code == 201, r.text
    play = f"/v1/ladders/test/challenges/{r.json()['id']}/game"
    for score in (1_000_000.5, 1e9, 1e308, -1):
        body = {"winner": "ada", "scores": {"ada": score, "bob": 0}}
        problem(client.post(play, json=body, headers=h), 422, "scores.ada")
    r = client.post(play, json={"winner": "ada", "scores": {"ada": 1_000_000, "bob": 0}}, headers=h)
    assert r.status_code == 201, r.text


def test_the_openapi_document_states_the_score_bounds(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    score = next(s for s in schemas["SideIn"]["properties"]["score"]["anyOf"] if s.get("type") == "number")
    assert (score["minimum"], score["maximum"]) == (-1_000_000, 1_000_000)
    assert "1,000,000" in schemas["SideIn"]["properties"]["score"]["description"]
    (scores,) = schemas["PlayIn"]["properties"]["scores"]["anyOf"][0]["patternProperties"].values()
    assert (scores["minimum"], scores["maximum"]) == (0, 1_000_000)
    assert "1,000,000" in schemas["PlayIn"]["properties"]["scores"]["description"]
