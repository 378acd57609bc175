"""The command line against a real SQLite file: migrate, create a ladder, import real data, audit."""

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.config import Settings, get_settings
from app.main import create_app

DATA = Path(__file__).parent / "data"


def test_import_football_season(tmp_path, monkeypatch, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("MELO_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        main(["migrate"])
        assert (tmp_path / "cli.db").exists()
        main(["create-ladder", "epl", "--k", "2"])
        created = json.loads(capsys.readouterr().out)
        assert created["slug"] == "epl" and created["write_key"].startswith("mk_")
        main(["import", "epl", str(DATA / "football_premier_league_2019.json"), "--format", "football"])
        assert "imported 380 games" in capsys.readouterr().out
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=url))) as client:
        assert client.get("/v1/ladders/epl").json()["games"] == 380
        assert client.get("/v1/ladders/epl/audit").json()["consistent"]
        board = client.get("/v1/ladders/epl/leaderboard?limit=100").json()["items"]
        assert len(board) == 20
        assert sum(p["wins"] + p["draws"] + p["losses"] for p in board) == 2 * 380


def test_import_jsonl_is_all_or_nothing_and_names_the_bad_line(tmp_path, monkeypatch, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("MELO_DATABASE_URL", url)
    get_settings.cache_clear()
    good = [{"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]} for a, b in ["xy", "yz", "zx"]]
    bad = {"sides": [{"players": ["x"], "rank": 1}, {"players": ["y"], "rank": "first"}]}
    path = tmp_path / "games.jsonl"
    try:
        main(["create-ladder", "office"])
        main(["create-ladder", "quiet", "--no-auto-refit"])
        path.write_text("\n".join(json.dumps(g) for g in [*good, bad]) + "\n")
        with pytest.raises(SystemExit, match=r"line 4: sides\.1\.rank: .*nothing was imported"):
            main(["import", "office", str(path)])
        path.write_text("\n".join(json.dumps(g) for g in good) + "\n\n")
        main(["import", "office", str(path)])
        assert "imported 3 games" in capsys.readouterr().out
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=url))) as client:
        assert client.get("/v1/ladders/office").json()["games"] == 3
        assert client.get("/v1/ladders/office").json()["auto_refit"]
        assert not client.get("/v1/ladders/quiet").json()["auto_refit"]
        assert client.get("/v1/ladders/office/audit").json()["consistent"]
        games = client.get("/v1/ladders/office/games").json()["items"]
        assert [(g["sides"][0]["players"][0]["key"], g["sides"][0]["actual_score"]) for g in games] == [
            ("z", 1.0),
            ("y", 1.0),
            ("x", 1.0),
        ]
        x = client.get("/v1/ladders/office/players/x").json()
        assert (x["games"], x["wins"], x["losses"]) == (2, 1, 1)


def test_refit_identifiability_and_analyse_on_the_chess_data(tmp_path, monkeypatch, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("MELO_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        main(["create-ladder", "chess", "--k", "2"])
        main(["import", "chess", str(DATA / "chess_engines.json"), "--format", "chess"])
        capsys.readouterr()
        main(["refit", "chess", "--select-k", "0", "1", "2", "--restarts", "2", "--choose-l2", "--apply"])
        out = capsys.readouterr().out
        assert "held-out log loss by k (0 = Elo; matchups held out" in out and "applied: checkpoint" in out
        for rater in ("elo", "current", "replay"):
            assert f"\n{rater} " in out
        main(["identifiability", "chess", "--ratings", "refit"])
        assert "unique maximum-likelihood advantage matrix:" in capsys.readouterr().out
        main(["analyse", "chess"])
        out = capsys.readouterr().out
        assert "intransitivity" in out and "discs" in out
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=url))) as client:
        audit = client.get("/v1/ladders/chess/audit").json()
        assert audit["consistent"] and audit["checkpoint_after_game"] == 7999


def test_a_refused_command_prints_the_problem_without_a_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MELO_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    try:
        main(["create-ladder", "office", "--k", "2"])
        with pytest.raises(SystemExit) as refused:
            main(["refit", "office", "--select-k", "0", "1", "2", "3"])
        assert refused.value.code == "melo refit: select_k: at most the ladder's k = 2"
        with pytest.raises(SystemExit) as unknown:
            main(["identifiability", "nope"])
        assert unknown.value.code == "melo identifiability: There is no ladder 'nope'."
        with pytest.raises(SystemExit) as invalid:
            main(["create-ladder", "Bad Slug"])
        assert str(invalid.value.code).startswith("melo create-ladder: slug: String should match pattern")
    finally:
        get_settings.cache_clear()
