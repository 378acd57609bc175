"""The command line against a real SQLite file: migrate, create a ladder, import real data, audit."""

import json
from pathlib import Path

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
        main(["create-ladder", "epl", "--k", "2"])
        created = json.loads(capsys.readouterr().out)
        assert created["slug"] == "epl" and created["write_key"].startswith("mk_")
        main(
            ["import", "epl", str(DATA / "football_premier_league_2019.json"), "--format", "football", "--batch", "100"]
        )
        assert "imported 380 games" in capsys.readouterr().out
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=url))) as client:
        assert client.get("/v1/ladders/epl").json()["games"] == 380
        assert client.get("/v1/ladders/epl/audit").json()["consistent"]
        board = client.get("/v1/ladders/epl/leaderboard?limit=100").json()["items"]
        assert len(board) == 20
        assert sum(p["wins"] + p["draws"] + p["losses"] for p in board) == 2 * 380
