"""The command line against a real SQLite file: migrate, create a ladder, import real data, audit."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.analysis.schemas import INTRANSITIVITY_SCALE
from app.cli.main import main
from app.core.config import Settings, get_settings
from app.domain.refit_policy import FIRST_COMPARISONS, due_point
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
        main(["migrate"])
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
        main(["migrate"])
        main(["create-ladder", "chess", "--k", "2"])
        main(["import", "chess", str(DATA / "chess_engines.json"), "--format", "chess", "--no-refit"])
        assert "auto refit" not in capsys.readouterr().out
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
        assert INTRANSITIVITY_SCALE in " ".join(out.split())  # the scale, in the words the API and web use
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=url))) as client:
        audit = client.get("/v1/ladders/chess/audit").json()
        assert audit["consistent"] and audit["checkpoint_after_game"] == 7999


def test_an_import_that_makes_an_auto_refit_due_chooses_the_rate_and_refits_before_it_ends(
    tmp_path, monkeypatch, capsys
):
    """A ladder whose history arrives in one import is tuned when the import ends: the auto refit the policy then
    asks for runs in the command, its rate choice first, as the server would have run it: on the log up to the
    last count the policy would have refitted at had the games been posted one by one (7,436 of 7,999 games)."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("MELO_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        main(["migrate"])
        main(["import", "chess", str(DATA / "chess_engines.json"), "--format", "chess"])
        out = capsys.readouterr().out
        assert "its log makes auto refit 1 due: choosing the rate, then refitting" in out, out
        assert re.search(
            r"refit 1: its (log chose a new rate|rate was kept) .*; its refit (passed|was not applied)", out
        )
        main(["import", "pinned", str(DATA / "chess_engines.json"), "--format", "chess", "--no-auto-refit"])
        main(["import", "later", str(DATA / "chess_engines.json"), "--format", "chess", "--no-refit"])
        assert "auto refit" not in capsys.readouterr().out
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=url))) as client:
        (job,) = client.get("/v1/ladders/chess/refits").json()["items"]
        due = due_point(FIRST_COMPARISONS, 7999)
        assert due == 7436 and job["status"] in ("done", "rejected") and job["params"]["auto"]
        assert job["after_game"] == due
        rate = job["result"]["rate"]
        assert rate["games"] == due and len(rate["candidates"]) > 20
        ladder = client.get("/v1/ladders/chess").json()
        assert (ladder["rate_choice"] is not None) == bool(rate["applied"])
        assert client.get("/v1/ladders/chess/audit").json()["consistent"]
        assert client.get("/v1/ladders/pinned/refits").json()["items"] == []
        assert client.get("/v1/ladders/later/refits").json()["items"] == []


def test_a_refused_command_prints_the_problem_without_a_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MELO_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    try:
        main(["migrate"])
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


DEEP = {
    "array": "[" * 100_000 + "]" * 100_000,
    "object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "game": '{"game": {"sides": ' + "[" * 100_000 + "]" * 100_000 + "}}",
}


TOO_DEEP = "not JSON this restore reads: nested too deep"


@pytest.fixture
def office(tmp_path, monkeypatch, capsys) -> Path:
    """A SQLite database with a ladder 'office' of three games, and its export; ``melo`` runs against it."""
    monkeypatch.setenv("MELO_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    games = tmp_path / "games.jsonl"
    games.write_text("".join(json.dumps(duel(a, b)) + "\n" for a, b in ["xy", "yz", "zx"]))
    main(["migrate"])
    main(["create-ladder", "office"])
    main(["import", "office", str(games)])
    main(["export", "office", "-o", str(tmp_path / "office.ndjson")])
    capsys.readouterr()
    yield tmp_path / "office.ndjson"
    get_settings.cache_clear()


def duel(a: str, b: str) -> dict:
    return {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]}


def nothing_restored(tmp_path) -> None:
    with TestClient(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))) as client:
        assert client.get("/v1/ladders/copy").status_code == 404
        assert client.get("/v1/ladders/office").json()["games"] == 3


@pytest.mark.parametrize("deep", DEEP.values(), ids=DEEP.keys())
def test_import_names_the_line_nested_too_deep(office, tmp_path, deep):
    lines = office.read_text().splitlines()
    bad = tmp_path / "bad.ndjson"
    for at in (1, len(lines)):  # a game or player line of an export, and a line after its last game
        bad.write_text("\n".join([*lines[:at], deep, *lines[at:]]) + "\n")
        with pytest.raises(SystemExit) as refused:
            main(["import", "copy", str(bad)])
        assert refused.value.code == f"melo import: line {at + 1}: line: {TOO_DEEP}; nothing was restored"
    games = [json.dumps(duel("x", "y")), deep, json.dumps(duel("y", "x"))]
    for first in (False, True):  # games as JSON lines; first: before any other line (is it an export?)
        bad.write_text("\n".join(games[1:] if first else games) + "\n")
        with pytest.raises(SystemExit) as refused:
            main(["import", "office", str(bad)])
        where = f"{re.escape(str(bad))}: line {1 if first else 2}: game"
        assert re.fullmatch(
            rf"{where}: Invalid JSON: recursion limit exceeded.*; nothing was imported", refused.value.code
        )
    bad.write_text(deep)
    with pytest.raises(SystemExit, match=r": not JSON this import reads: nested too deep; nothing was imported$"):
        main(["import", "office", str(bad), "--format", "chess"])
    nothing_restored(tmp_path)


def test_import_names_the_line_of_any_json_error(office, tmp_path):
    lines = office.read_text().splitlines()
    bad = tmp_path / "bad.ndjson"
    cases = {
        b'{"game": {"sides": [}': r"not JSON \(Expecting value: line 1 column 21 \(char 20\)\)",
        b'{"player": {"key": "\xff"}}': r"not JSON \('utf-8' codec can't decode byte 0xff .*\)",
        b'{"game": 1' + b"0" * 5000 + b"}": r"not JSON \(Exceeds the limit \(4300 digits\) .*\)",
        b"[]": "expected one of 'player', 'game', 'checkpoint', 'season' as the only key",
    }
    for line, message in cases.items():
        bad.write_bytes("\n".join(lines[:2]).encode() + b"\n" + line + b"\n" + "\n".join(lines[2:]).encode())
        with pytest.raises(SystemExit) as refused:
            main(["import", "copy", str(bad)])
        assert re.fullmatch(f"melo import: line 3: line: {message}; nothing was restored", refused.value.code)
    bad.write_text('[["a", "b", "1-0"],\n ["b", "a" "0-1"]]')
    with pytest.raises(SystemExit) as refused:
        main(["import", "office", str(bad), "--format", "chess"])
    assert refused.value.code == f"{bad}: line 2: not JSON (Expecting ',' delimiter, column 12); nothing was imported"
    bad.write_text('[["a", "b", "2-0"]]')
    with pytest.raises(SystemExit, match=r"not in the chess format \(KeyError: '2-0'\); nothing was imported"):
        main(["import", "office", str(bad), "--format", "chess"])
    with pytest.raises(SystemExit, match=r"missing\.jsonl: No such file or directory; nothing was imported"):
        main(["import", "office", str(tmp_path / "missing.jsonl")])
    nothing_restored(tmp_path)


def test_a_refused_import_exits_non_zero_without_a_traceback(office, tmp_path):
    bad = tmp_path / "deep.ndjson"
    lines = office.read_text().splitlines()
    bad.write_text("\n".join([lines[0], DEEP["array"], *lines[1:]]) + "\n")
    env = os.environ | {"MELO_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "import", "copy", str(bad)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    opened, refused = done.stderr.strip().splitlines()  # which database, then one line: no traceback
    assert opened == f"melo import: database {tmp_path / 'cli.db'} (SQLite)"
    assert refused == f"melo import: line 2: line: {TOO_DEEP}; nothing was restored"
    nothing_restored(tmp_path)


def test_the_cli_says_which_database_it_opens_and_creates_none_but_by_migrate(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MELO_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        for argv in (["ladders"], ["backup", "b.db"], ["create-ladder", "office"]):
            with pytest.raises(SystemExit) as refused:
                main(argv)
            assert "there is no database at ./data/melo.db" in str(refused.value.code), argv
            assert "melo migrate" in str(refused.value.code)
        assert not (tmp_path / "data").exists() and not (tmp_path / "b.db").exists()
        url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
        main(["--database", url, "migrate"])
        assert f"database {tmp_path / 'elsewhere.db'} (SQLite)" in capsys.readouterr().err
        with pytest.raises(SystemExit, match="there is no folder nope; create it first"):
            main(["--database", url, "backup", "nope/b.db"])
        with pytest.raises(SystemExit) as version:
            main(["--version"])
        assert version.value.code == 0 and capsys.readouterr().out.startswith("melo ")
    finally:
        get_settings.cache_clear()


def test_the_admin_commands_of_the_cli(tmp_path, monkeypatch, capsys):
    """import creates the ladder it names; ladders, leaderboard, keys, void, merge and rename do what they say; a
    restored export is summed up with what it holds."""
    monkeypatch.setenv("MELO_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    games = tmp_path / "games.jsonl"
    games.write_text("".join(json.dumps(duel(a, b)) + "\n" for a, b in ["ab", "bc", "ca", "ab", "cd"]))
    try:
        main(["migrate"])
        main(["import", "office", str(games), "--k", "1"])
        out = capsys.readouterr().out
        assert "created ladder 'office'; its admin key, shown only now: mk_" in out
        assert "imported 5 games into 'office'" in out and "it has 4 players and 5 games" in out
        main(["ladders"])
        assert re.search(r"office\s+1\s+4\s+5\s+no", capsys.readouterr().out)
        main(["void", "office", "5", "--reason", "typo"])
        assert "game 5 of 'office' voided" in capsys.readouterr().out
        main(["rename", "office", "a", "Ann B."])
        main(["merge", "office", "d", "a"])
        capsys.readouterr()
        main(["leaderboard", "office"])
        board = capsys.readouterr().out
        assert "Ann B." in board and not re.search(r"\bd\b", board.split("\n", 2)[2])
        main(["keys", "office", "create", "desk", "--role", "read"])
        assert re.search(r"key 2 \(read\), shown only now: mk_", capsys.readouterr().out)
        main(["keys", "office"])
        listed = capsys.readouterr().out
        assert "created with the ladder" in listed and re.search(r"desk\s+read", listed)
        main(["keys", "office", "revoke", "2"])
        assert "key 2 ('desk') revoked" in capsys.readouterr().out
        with pytest.raises(SystemExit, match="last working admin key"):
            main(["keys", "office", "revoke", "1"])
        main(["export", "office", "-o", str(tmp_path / "office.ndjson")])
        capsys.readouterr()
        main(["import", "copy", str(tmp_path / "office.ndjson")])
        assert (
            "restored" in (err := capsys.readouterr().err) and "3 players, 4 games" in err
        )  # the voided one counts nowhere
    finally:
        get_settings.cache_clear()
    with TestClient(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))) as client:
        for slug in ("office", "copy"):
            assert client.get(f"/v1/ladders/{slug}/audit").json()["consistent"]
        assert client.get("/v1/ladders/office/games/5").json()["reason"] == "typo"


def test_progress_rates_are_per_stage_even_when_a_stage_reports_only_its_end(monkeypatch):
    from io import StringIO

    from app.cli.terminal import ProgressBar

    clock = iter([0.0, 1.0, 3.0])  # created, then two stages each reported once, at their end
    monkeypatch.setattr("app.cli.terminal.time.perf_counter", lambda: next(clock))
    out = StringIO()
    bar = ProgressBar(out)
    bar("reading", 100, 100)
    bar("rating", 400, 400)
    assert out.getvalue().splitlines()[0].endswith("100/100  100/s")
    assert out.getvalue().splitlines()[1].endswith("400/400  200/s")
