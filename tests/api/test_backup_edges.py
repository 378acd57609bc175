"""An import never refuses what the service accepted: a ladder holding every edge value the API takes, exported,
restored into a fresh database with `melo import`, comes back bit for bit; and what an import refuses."""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app.cli.main import main
from app.core.config import Settings, get_settings
from app.main import create_app
from devtools.server import ADMIN_KEY
from tests.api.helpers import export, wait
from tests.conftest import bearer, elo_rounded, make_ladder

SLUG = "edge"
#: Dates at both ends of the window, with the widest offsets and forms a JSON body can give them in; which of them
#: the API takes is its business (test_edge_inputs checks the rule): every one it takes must survive the round trip.
#: A post refuses the far end as dated in the future: imports take it, as test_import_lines_take_dates_… checks.
DATES = [
    "1900-01-01T00:00:00Z",
    "1900-01-01T00:00:00+14:00",
    "1900-01-01T14:00:00+14:00",
    "1899-12-31T12:00:00-12:00",
    "1899-12-31T23:59:59.999999Z",
    "1900-01-01T00:00:00.000001-00:01",
    "1900-01-01T00:00:00+23:59",
    "1900-01-01",
    "1900-01-01T00:00:00",
    -2208988800,
    "2200-01-01T00:00:00Z",
    "2200-01-01T00:00:00-12:00",
    "2200-01-01T13:59:59.999999+14:00",
    "2199-12-31T12:00:00-12:00",
    "2200-01-01T00:00:00.000001Z",
    "2200-01-01T00:00:00",
    "2199-12-31T23:59:59.9999999-00:00",
    7258118400,
    "2024-02-29T12:00:00.123456+05:45",
]
KEY_A = "a" * 128
KEY_B = "é" * 63 + " " + "😀" * 64  # 128 characters, four bytes each in UTF-8 for half of them
KEY_C = '"\\' + "%?#&+" * 25 + "z"  # JSON escapes and URL-significant characters
#: Words of a provisional reason that come from the latest applied refit's report, which is not exported.
REFIT_REASON = "latest applied refit"
NAME = "Zoë " + '"\\' + "李" * 194  # 200 characters


def duel(a: str, b: str, **extra) -> dict:
    return {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}], **extra}


def post(client, key: str, body: dict, slug: str = SLUG) -> dict:
    r = client.post(f"/v1/ladders/{slug}/games", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()


def path(key: str) -> str:
    return f"/v1/ladders/{SLUG}/players/{quote(key, safe='')}"


def build(client) -> str:
    """The ladder with every edge value; returns its key (the ladder ends private)."""
    key = make_ladder(
        client, SLUG, name="L" * 200, k=2, seed=2**63 - 1, seats=["home", "away"], auto_refit=False, eta_tau=None
    )
    h = bearer(key)
    for body in (
        {"key": KEY_A, "name": NAME, "vector": [1000.0, -1000.0, -0.0, 5e-324]},  # never plays
        {"key": KEY_B, "name": "B" * 200},
        {"key": "ghost"},  # created before the refit, plays after it, then merged away
        {"key": "early"},  # plays before the refit, then merged away
    ):
        assert client.post(f"/v1/ladders/{SLUG}/players", json=body, headers=h).status_code == 201
    accepted = 0
    for n, when in enumerate(DATES):
        r = client.post(f"/v1/ladders/{SLUG}/games", json=duel(KEY_B, f"d{n % 3}", played_at=when), headers=h)
        assert r.status_code in (201, 422), r.text
        accepted += r.status_code == 201
    assert accepted >= 8
    post(client, key, duel("early", "d0"))
    post(client, key, duel(KEY_C, KEY_B, external_id='"\\' + "ü" * 196 + '\\"'))  # 200 characters
    seated = [
        [{"seat": "home", "advantage": 50.0}, {"seat": "away", "advantage": -50.0}],
        [{"seat": "away", "win_probability": 1e-21}, {"seat": "home", "win_probability": 0.9999999999999999}],
        [{"seat": "home"}, {"seat": "away", "advantage": 5e-324}],
        [{"advantage": -0.0}, {"win_probability": 0.5}],
        [{"seat": "home", "win_probability": 0.3}, {}],
    ]
    for n, extras in enumerate(seated):
        game = duel(f"d{n % 3}", KEY_C if n % 2 else KEY_B)
        for side, extra in zip(game["sides"], extras, strict=True):
            side.update(extra)
        post(client, key, game)
    post(client, key, {"sides": [{"players": ["d0"], "rank": 1}, {"players": ["d1"], "rank": 1}]})  # a draw
    post(client, key, {"sides": [{"players": ["d1"], "score": 1e6}, {"players": ["d2"], "score": -1e6}]})
    post(client, key, {"sides": [{"players": ["d2"], "score": 0.5}, {"players": ["d0"], "score": 0.5}]})
    team = [f"t{i}" for i in range(64)]
    post(client, key, {"sides": [{"players": team[:32], "rank": 1}, {"players": team[32:], "rank": 2}]})
    sides = [{"players": [f"m{i}"], "rank": i // 3 + 0.25} for i in range(64)]  # 64 sides, ties of three
    post(client, key, {"sides": sides, "external_id": "many"})
    batch = [duel("d0", "d2", played_at="2024-02-29T23:59:59.999999Z"), duel("d1", KEY_C, external_id="b-1")]
    batch.append({"sides": [{"players": ["t0", "m0"], "score": 2, "seat": "away"}, {"players": ["d2"], "score": 1}]})
    r = client.post(f"/v1/ladders/{SLUG}/games/batch", json={"games": batch}, headers=h)
    assert r.status_code == 201, r.text
    voided = [post(client, key, duel("d1", "d0"))["id"] for _ in range(2)]
    r = client.request("DELETE", f"/v1/ladders/{SLUG}/games/{voided[0]}", json={"reason": "R" * 500}, headers=h)
    assert r.status_code == 200, r.text
    assert client.request("DELETE", f"/v1/ladders/{SLUG}/games/{voided[1]}", headers=h).status_code == 200
    r = client.post(path("early") + "/merge", json={"into": "d2"}, headers=h)  # no shared game: d2 never met early
    assert r.status_code == 200, r.text

    refit = client.post(f"/v1/ladders/{SLUG}/refits", json={"restarts": 1, "holdout": 0}, headers=h)
    job = wait(client, refit.headers["Location"])
    assert client.post(f"/v1/ladders/{SLUG}/refits/{job['id']}/apply", headers=h).status_code == 200

    post(client, key, {"sides": [{"players": ["ghost"], "rank": 2, "seat": "home"}, {"players": ["d0"], "rank": 1}]})
    post(client, key, duel("d1", "d2", played_at="1900-01-01T00:00:00Z"))
    three = [{"players": ["d1"], "rank": 1}, {"players": ["d2"], "rank": 1}, {"players": ["t1"], "rank": 3}]
    post(client, key, {"sides": three})
    voided = post(client, key, duel("t2", "m5"))["id"]
    r = client.request("DELETE", f"/v1/ladders/{SLUG}/games/{voided}", json={"reason": ""}, headers=h)
    assert r.status_code == 200, r.text
    assert client.post(path("ghost") + "/merge", json={"into": "m63"}, headers=h).status_code == 200
    assert client.delete(path("d1"), headers=h).status_code == 200  # erased: a pseudonym in the log and players
    assert client.delete(path("t5"), headers=h).status_code == 200
    assert client.patch(path("d2"), json={"active": False}, headers=h).status_code == 200
    assert client.patch(path(KEY_A), json={"active": False}, headers=h).status_code == 200
    change = {"private": True, "auto_create_players": False}
    assert client.patch(f"/v1/ladders/{SLUG}", json=change, headers=h).status_code == 200
    return key


def state(client, key: str) -> dict:
    """Everything users see of the ladder: players (vectors bit for bit), leaderboard, games, seats and audit."""
    h = bearer(key)
    games = elo_rounded(client.get(f"/v1/ladders/{SLUG}/games?limit=500", headers=h).json()["items"])
    board = client.get(f"/v1/ladders/{SLUG}/leaderboard?limit=500&inactive=true", headers=h).json()["items"]
    profiles = {row["key"]: client.get(path(row["key"]), headers=h).json() for row in board}
    for row in [*board, *profiles.values()]:
        row.pop("change_since_last_game")  # depends on how the games were committed: not part of an export
        row.pop("ladder_version", None)  # each ladder counts its own changes
    for game in games:
        if game["voided_at"] is not None:
            # A voided game's history is the one it had when it was played (a later merge or void does not replay
            # it); a restore gives it the history it would have had at its place in the log (import_games). The
            # export does not carry it: compare what the game was, not the vectors it showed.
            for side in game["sides"]:
                side.pop("expected_score")
                for player in side["players"]:
                    del player["before"], player["after"], player["elo_before"], player["elo_after"]
                    del player["elo_change"]
    ladder = client.get(f"/v1/ladders/{SLUG}", headers=h).json()
    ladder.pop("created_at", None)
    audit = client.get(f"/v1/ladders/{SLUG}/audit", headers=h).json()
    return {"ladder": ladder, "profiles": profiles, "board": board, "games": games, "audit": audit}


@pytest.fixture
def fresh_url(request, database_url, tmp_path) -> str:
    """Another database of the same kind, not migrated (`melo migrate` creates a SQLite one)."""
    if database_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'copy.db'}"
    return request.getfixturevalue("postgres").create_database(f"melo_copy_{uuid.uuid4().hex[:12]}")


def melo(url: str, monkeypatch, *argv: str) -> None:
    monkeypatch.setenv("MELO_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        main(list(argv))
    finally:
        get_settings.cache_clear()


def test_every_edge_value_the_api_accepts_survives_export_and_restore(client, fresh_url, tmp_path, monkeypatch, capsys):
    key = build(client)
    before = state(client, key)
    assert before["audit"]["consistent"] and before["audit"]["checkpoint_after_game"] is not None
    data = export(client, SLUG, **bearer(key))
    lines = [json.loads(line) for line in data.splitlines()]
    assert [line["checkpoint"]["after_seq"] for line in lines if "checkpoint" in line]
    played = sorted(line["game"]["played_at"] for line in lines if "game" in line)
    assert played[0] == "1900-01-01T00:00:00Z"  # the window's first moment, in UTC
    assert "2024-02-29T23:59:59.999999Z" in played and played[-1] < "2200"  # posts are not dated ahead of the clock
    exported = {line["player"]["key"] for line in lines if "player" in line}
    assert {KEY_A, KEY_B, KEY_C} <= exported and not {"early", "ghost", "d1", "t5"} & exported

    backup = tmp_path / "edge.ndjson"
    backup.write_bytes(data)
    capsys.readouterr()
    melo(fresh_url, monkeypatch, "migrate")  # only migrate and serve create a database
    melo(fresh_url, monkeypatch, "import", SLUG, str(backup))
    created = json.loads(capsys.readouterr().out)
    assert created["slug"] == SLUG and created["private"] is True
    with TestClient(create_app(Settings(database_url=fresh_url, admin_key=ADMIN_KEY))) as copy:
        assert export(copy, SLUG, **bearer(created["write_key"])) == data  # the same file, byte for byte
        after = state(copy, created["write_key"])
    # The refit reports are not exported, so neither is what the applied one found about who is placed.
    placed = {row["key"] for row in before["board"] if REFIT_REASON in (row["provisional_reason"] or "")}
    for snapshot in (before, after):
        for row in [*snapshot["board"], *snapshot["profiles"].values()]:
            if row["key"] in placed:
                del row["provisional"], row["provisional_reason"]
    assert after == before  # every vector, counter, seat, game and void mark


def edited(lines: list[str], n: int, change) -> list[str]:
    """The lines with line ``n`` (0-based) parsed, changed by ``change(value)`` and written back."""
    value = json.loads(lines[n])
    change(value)
    return [*lines[:n], json.dumps(value), *lines[n + 1 :]]


def restore(cli, tmp_path, lines: list[str], slug: str = "copy") -> None:
    backup = tmp_path / f"{slug}.ndjson"
    backup.write_text("\n".join(lines) + "\n")
    cli(["import", slug, str(backup)])


def office(client) -> tuple[str, list[str]]:
    """A ladder whose export is: header, players ann bob cy dee eve idle, games 1-3 (the third voided)."""
    key = make_ladder(client, "office", seed=3)  # it creates the players its games name
    assert client.post("/v1/ladders/office/players", json={"key": "idle"}, headers=bearer(key)).status_code == 201
    games = [duel("ann", "bob"), duel("bob", "cy"), duel("ann", "dee")]
    games[1]["sides"] = [{"players": ["bob", "dee"], "rank": 1}, {"players": ["cy", "eve"], "rank": 2}]
    ids = [
        post(client, key, game, "office")["id"] for game in [{**g, "external_id": f"g{n}"} for n, g in enumerate(games)]
    ]
    r = client.request("DELETE", f"/v1/ladders/office/games/{ids[2]}", headers=bearer(key))
    assert r.status_code == 200, r.text
    lines = export(client, "office").decode().splitlines()
    assert [next(iter(json.loads(line))) for line in lines] == ["melo_export", *["player"] * 6, *["game"] * 3]
    return key, lines


def test_import_lines_take_dates_by_the_rule_the_api_does(client, cli, tmp_path, capsys):
    _, lines = office(client)
    window = "must be between 1900-01-01T00:00:00Z and 2200-01-01T00:00:00Z in UTC; nothing was restored"
    refused = {
        (7, "game.played_at"): lambda v: v["game"].update(played_at="1900-01-01T00:00:00+14:00"),
        (8, "game.played_at"): lambda v: v["game"].update(played_at="2200-01-01T00:00:00-00:01"),
        (1, "player.created_at"): lambda v: v["player"].update(created_at="9999-12-31T23:59:59-14:00"),
        (2, "player.created_at"): lambda v: v["player"].update(created_at="1899-12-31T23:59:59Z"),
        (9, "game.voided.at"): lambda v: v["game"]["voided"].update(at="0001-01-01T00:00:00+14:00"),
    }
    for (n, field), change in refused.items():
        with pytest.raises(SystemExit, match=rf"melo import: line {n + 1}: {field}: Value error, {window}$"):
            restore(cli, tmp_path, edited(lines, n, change))
        assert client.get("/v1/ladders/copy").status_code == 404
    accepted = edited(lines, 7, lambda v: v["game"].update(played_at="1899-12-31T10:00:00-14:00"))
    accepted = edited(accepted, 1, lambda v: v["player"].update(created_at="2020-02-02T02:02:02"))  # no zone: UTC
    accepted = edited(accepted, 9, lambda v: v["game"]["voided"].update(at="2200-01-01T14:00:00+14:00"))
    # A post refuses a game dated ahead of the server's clock; a restore takes any date the window holds.
    accepted = edited(accepted, 8, lambda v: v["game"].update(played_at="2199-12-31T12:00:00-12:00"))
    restore(cli, tmp_path, accepted)
    exported = export(client, "copy")
    copy = [json.loads(line) for line in exported.decode().splitlines()]
    assert copy[7]["game"]["played_at"] == "1900-01-01T00:00:00Z"
    assert copy[8]["game"]["played_at"] == "2200-01-01T00:00:00Z"
    assert copy[1]["player"]["created_at"] == "2020-02-02T02:02:02Z"
    assert copy[9]["game"]["voided"]["at"] == "2200-01-01T00:00:00Z"
    assert client.get("/v1/ladders/copy/audit").json()["consistent"]
    # Both ends of the window survive a round trip: the copy, exported and restored again, exports the same file.
    restore(cli, tmp_path, exported.decode().splitlines(), slug="again")
    assert export(client, "again").split(b"\n", 1)[1] == exported.split(b"\n", 1)[1]


def test_a_game_naming_a_player_without_a_player_line_is_refused(client, cli, tmp_path):
    _, lines = office(client)

    def without(*keys: str) -> list[str]:
        return [line for line in lines if json.loads(line).get("player", {}).get("key") not in keys]

    cases = {
        ("bob",): r"line 7: game\.sides\[1\]\.players\[0\]: no player line for 'bob'",
        ("eve", "cy"): r"line 7: game\.sides\[1\]\.players\[0\]: no player line for 'cy', 'eve'",
        ("dee", "ann", "eve", "bob"): r"line 4: game\.sides\[0\]\.players\[0\]: no player line for 'ann', 'bob'",
    }
    for keys, message in cases.items():
        with pytest.raises(SystemExit, match=rf"^melo import: {message}; nothing was restored$"):
            restore(cli, tmp_path, without(*keys))
        assert client.get("/v1/ladders/copy").status_code == 404
    many = make_ladder(client, "many", seed=1, auto_create_players=True)
    crowd = {"sides": [{"players": [f"p{i}" for i in range(12)], "rank": 1}, {"players": ["q"], "rank": 2}]}
    post(client, many, crowd, "many")
    crowd = [line for line in export(client, "many").decode().splitlines() if '"key":"p' not in line]
    named = ", ".join(f"'p{i}'" for i in range(10))
    with pytest.raises(
        SystemExit, match=rf"line 3: game\.sides\[0\]\.players\[0\]: no player line for {named} and 2 more;"
    ):
        restore(cli, tmp_path, crowd)
    assert client.get("/v1/ladders/copy").status_code == 404


def test_an_export_cut_short_is_refused(client, cli, tmp_path, capsys):
    _, lines = office(client)
    cases = {
        "games": (lines[:-1], "line 1: games: the header counts 3 games, the file holds 2"),
        "players": ([line for line in lines if '"key":"idle"' not in line], "line 1: players: the header counts 6"),
    }
    for cut, message in cases.values():
        with pytest.raises(SystemExit, match=rf"^melo import: {message}.*nothing was restored$"):
            restore(cli, tmp_path, cut)
        assert client.get("/v1/ladders/copy").status_code == 404
    # A header without counts (written by hand): the file is all there is.
    header = json.loads(lines[0])
    del header["players"], header["games"]
    restore(cli, tmp_path, [json.dumps(header), *lines[1:-1]])
    assert client.get("/v1/ladders/copy").json()["games"] == 2
