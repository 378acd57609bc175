"""Every SQL statement the service runs on a table of ladder data names its ladder (``ladder_id = ?``), so a Citus
cluster of co-located tables distributed by ``ladder_id`` (docs/operations.md §6) routes each to one shard.

A workload through the HTTP API (and ``melo import``), on each database, runs with every statement recorded: those
SQLAlchemy executes (its ``before_cursor_execute`` event, ``exec_driver_sql`` too), those the hot and bulk paths
send straight to the driver's cursor (:func:`app.storage.sql.driver_fetchall`, :func:`~app.storage.sql.driver_chunks`
and :meth:`app.core.db.Database.fetch`, wrapped here), and those of a refit's child process (recorded to a file).

The rule, one statement at a time (whitespace normalised, case ignored): each mention of a table of ladder data
(its name after FROM, JOIN, UPDATE or INTO) needs a ``ladder_id`` predicate: an equality with a value, or a join on
``ladder_id`` to another mention (``a.ladder_id = b.ladder_id``; to ``ladders``, ``a.ladder_id = l.id``); at least
one of them an equality with a value.  An INSERT names its ladder in its ``ladder_id`` column; ``ladders`` itself
goes by ``id = ?``.  :data:`CROSS_LADDER` lists the statements that read or write several ladders by design.
"""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event

from app import storage
from app.core import jobs
from app.core.db import Database
from app.main import create_app
from app.storage import sql as driver
from app.storage.tables import Base, Refit
from tests.api.helpers import export, wait
from tests.conftest import admin, bearer
from tests.helpers import REFERENCE

#: The tables of ladder data: all but the reference tables (``ladders`` is distributed by its own id).
TABLES = set(Base.metadata.tables) - REFERENCE

#: Statements that span ladders by design (docs/operations.md §6), by a distinctive part of their text, lower case:
#: each is a multi-shard statement Citus runs as such, or one it routes by a value it makes itself.
CROSS_LADDER = {
    # The refits queued or running on any ladder, read once at a server's start (analysis.refit_jobs.recover).
    "from refits where refits.status in (",
    # The histories written ahead by a process that may have stopped, read at a server's start and after each refit
    # job (domain.rerating.end_abandoned).
    "select id, history_rewrite from ladders where history_rewrite is not null",
    # The cap on the refits queued or running per server, across ladders (analysis.refit_jobs.MAX_ACTIVE).
    "from refits where refits.status = ? and refits.updated_at >= ? or refits.status = ? and refits.updated_at >= ?",
    # Housekeeping every 10 minutes: the events and idempotency records past their time, oldest first.
    "delete from ladder_events where ladder_events.id in (select ladder_events.id from ladder_events where",
    "delete from idempotency_keys where (idempotency_keys.ladder_id, idempotency_keys.key) in (select",
    # ... and the webhooks' deliveries done by then (storage.webhooks.prune_deliveries).
    "delete from webhook_deliveries where webhook_deliveries.id in (select webhook_deliveries.id from",
    # GET /v1/ladders: the ladders listed by slug.
    "from ladders where ladders.deleted_at is null",
    # A new ladder: its id, the column it is distributed by, comes from the coordinator's sequence.
    "insert into ladders ",
    # SQLite's next game ids (storage.games.allocate_ids): a SQLite database is one file, never distributed.
    "select max(id) from games",
    # A group commit of several ladders' posts (SQLite's one lane: a SQLite database is never distributed; a lane's
    # group of one ladder, PostgreSQL's, goes by its ladder): the ladders read, their players locked, their game
    # numbers, their players' rows and their versions, one statement each whatever the ladders.
    "from ladders where id in (",
    "where (players.ladder_id, players.key) in (values",
    "with v(id, n) as (values",
    "where players.ladder_id = v.ladder_id and players.id = v.id",
    "with v(id, players, games, draws, room, field, events) as (values",
    # Each server's webhook dispatcher, every second: the webhooks of any ladder with work (storage.webhooks.due).
    "from webhooks join ladders on ladders.id = webhooks.ladder_id where",
}

_PARAM = r"(?:\?|:\w+|\d+)"
_MENTION = re.compile(r"\b(?:from|join|update|into) (\w+)\b(?! ?\.)")
_BY_VALUE = re.compile(rf"\b(?:\w+\.)?ladder_id = {_PARAM}")
_JOINED = re.compile(r"\b\w+\.ladder_id = \w+\.(?:ladder_id|id)\b|\b\w+\.id = \w+\.ladder_id\b")
_INSERT = re.compile(r"\binto (\w+) \(([^)]*)\)")
_LADDER_ALIAS = re.compile(r"\bladders (?:as )?(\w+)")
_NOT_ALIAS = {"where", "join", "left", "inner", "set", "order", "group", "limit", "on", "for", "values", "returning"}


def normalised(statement: str) -> str:
    """One line, single spaces, lower case, no quoted names, ``=`` between single spaces, each parameter ``?``."""
    text = " ".join(statement.split()).lower().replace('"', "")
    text = re.sub(r"%\(\w+\)s|%s|\$\d+", "?", text)
    text = re.sub(r"\?::(?:timestamp with time zone|double precision|character varying|\w+)(?:\[\])?", "?", text)
    return re.sub(r"(?<![<>!]) ?= ?", " = ", text).replace("( ", "(").replace(" )", ")")


def unrouted(statement: str) -> bool:
    """Whether the statement touches ladder data without a ``ladder_id`` predicate for each table it mentions."""
    text = normalised(statement)
    mentioned = [table for table in _MENTION.findall(text) if table in TABLES]
    if not mentioned or any(allowed in text for allowed in CROSS_LADDER):
        return False
    by_value = len(_BY_VALUE.findall(text))
    by_value += sum(1 for _, columns in _INSERT.findall(text) if "ladder_id" in columns.replace(" ", "").split(","))
    if "ladders" in mentioned:
        aliases = {"ladders"} | set(_LADDER_ALIAS.findall(text)) - _NOT_ALIAS
        qualified = rf"\b(?:{'|'.join(sorted(aliases))})\.id = {_PARAM}"
        by_value += len(re.findall(qualified, text))
        if set(mentioned) == {"ladders"}:
            by_value += len(re.findall(rf"(?<![\w.])id = {_PARAM}", text))
    return by_value == 0 or by_value + len(_JOINED.findall(text)) < len(mentioned)


#: The environment variable naming the file a refit's child process records its statements to.
CHILD_LOG = "MELO_TEST_STATEMENTS"
_child_main = jobs._child_main
_write = threading.Lock()


def _record(note: Callable[[str, str], None]) -> Callable[[], None]:
    """Call ``note(how, statement)`` for every statement this process runs from now on; the function that stops it.

    SQLAlchemy's event sees what goes through its engines; the functions that take the driver's own cursor are
    wrapped wherever the app's modules hold them."""

    def executed(_conn, _cursor, statement, _parameters, _context, _executemany) -> None:
        note("sqlalchemy", statement)

    def wrapped(original):
        def run(connection, sql, *args, **kwargs):
            note("driver", sql)
            return original(connection, sql, *args, **kwargs)

        return run

    fetch = Database.fetch

    async def fetched(self, sql, *args, **kwargs):
        note("fetch", sql)
        return await fetch(self, sql, *args, **kwargs)

    undo = [(Database, "fetch", fetch)]
    Database.fetch = fetched
    for original in (driver.driver_fetchall, driver.driver_chunks):
        replacement = wrapped(original)
        for module in [m for name, m in list(sys.modules.items()) if name == "app" or name.startswith("app.")]:
            for attribute, value in list(vars(module).items()):
                if value is original:
                    undo.append((module, attribute, original))
                    setattr(module, attribute, replacement)
    event.listen(Engine, "before_cursor_execute", executed)

    def stop() -> None:
        event.remove(Engine, "before_cursor_execute", executed)
        for owner, attribute, original in reversed(undo):
            setattr(owner, attribute, original)

    return stop


def _recorded_child(*args) -> None:
    """A refit's child process (:func:`app.core.jobs._child_main`), recording its statements to the file ``CHILD_LOG``
    names, one a line (in the environment the server passes it, its last argument)."""
    path = args[-1][CHILD_LOG]

    def note(_how: str, statement: str) -> None:
        with _write, open(path, "a", encoding="utf-8") as out:
            out.write(" ".join(statement.split()) + "\n")

    _record(note)
    _child_main(*args)


@pytest.fixture
def statements(settings, monkeypatch, tmp_path):
    """[(how, statement)] of every statement run from here on (the database is migrated already), a refit's child
    processes' too (how: "child")."""
    seen: list[tuple[str, str]] = []
    stop = _record(lambda how, statement: seen.append((how, statement)))
    child = tmp_path / "child.sql"
    monkeypatch.setenv(CHILD_LOG, str(child))
    monkeypatch.setattr(jobs, "_child_main", _recorded_child)

    def read() -> list[tuple[str, str]]:
        lines = child.read_text(encoding="utf-8").splitlines() if child.exists() else []
        return [*seen, *(("child", line) for line in lines)]

    yield read
    stop()


@pytest.fixture
def client(statements, client):
    """The app, made once the statements are recorded (its engines and its startup's statements too)."""
    return client


def _games(n: int, seed: int) -> list[dict]:
    """Games between six players a day apart, one or two a side, most of them with seats."""
    rng = np.random.default_rng(seed)
    people = ["Ann", "bob", "cy", "dee", "eve", "fay"]
    out = []
    for g in range(n):
        picked = [people[i] for i in rng.choice(6, 4 if g % 4 == 0 else 2, replace=False)]
        half = len(picked) // 2
        winner = int(rng.integers(2))
        sides = [{"players": picked[:half], "rank": 1 + winner}, {"players": picked[half:], "rank": 2 - winner}]
        if g % 5:
            sides[0]["seat"], sides[1]["seat"] = "home", "away"
        out.append({"sides": sides, "played_at": (START + timedelta(days=g)).isoformat()})
    return out


START = datetime(2025, 1, 1, 12, tzinfo=UTC)


def _ok(r, status: int = 200) -> dict:
    assert r.status_code == status, r.text
    return r.json()


def _office(client, cli, tmp_path, capsys) -> None:
    """What users do with a ladder: every route that reads or writes ladder data, once or more."""
    body = {"slug": "office", "k": 1, "seed": 3, "seats": ["home", "away"], "case_insensitive_keys": False}
    h = bearer(_ok(client.post("/v1/ladders", json=body, headers=admin()), 201)["admin_key"])
    L = "/v1/ladders/office"
    _ok(client.get("/v1/ladders"))
    _ok(client.get(L))
    _ok(client.post(f"{L}/players", json={"key": "zoe", "name": "Zoë"}, headers=h), 201)
    games = _games(60, seed=1)
    ids = [_ok(client.post(f"{L}/games", json=game, headers=h), 201)["id"] for game in games[:20]]
    once = {**games[20], "external_id": "match-20"}
    first = _ok(client.post(f"{L}/games", json=once, headers=h | {"Idempotency-Key": "g20"}), 201)
    assert _ok(client.post(f"{L}/games", json=once, headers=h | {"Idempotency-Key": "g20"}), 201) == first
    _ok(client.post(f"{L}/games/batch", json={"games": games[21:40]}, headers=h), 201)
    then = {"as_of": (START + timedelta(days=15)).isoformat()}
    for params in ({}, {"form": "true", "by": "conservative", "inactive": "true"}, then):
        _ok(client.get(f"{L}/leaderboard", params=params))
    _ok(client.get(f"{L}/players/bob"))
    _ok(client.get(f"{L}/players/bob", params=then))
    _ok(client.get(f"{L}/players/bob/history"))
    _ok(client.get(f"{L}/players/bob/opponents"))
    _ok(client.get(f"{L}/players/bob/opponents", params={"purpose": "next"}))
    _ok(client.get(f"{L}/players/bob/head-to-head"))
    _ok(client.get(f"{L}/games"))
    _ok(client.get(f"{L}/games/{ids[3]}"))
    _ok(client.get(f"{L}/predict", params={"a": "bob", "b": "cy", "a_seat": "home"}))
    _ok(client.post(f"{L}/predict", json={"sides": [{"players": ["bob", "cy"]}, {"players": ["dee", "eve"]}]}))
    _ok(client.post(f"{L}/teams", json={"players": ["Ann", "bob", "cy", "dee"]}))
    _ok(client.request("DELETE", f"{L}/games/{ids[5]}", json={"reason": "wrong winner"}, headers=h))
    _ok(client.patch(f"{L}/players/cy", json={"name": "Cy"}, headers=h))
    _ok(client.patch(f"{L}/players/dee", json={"key": "dee2"}, headers=h))  # "dee" becomes an alias
    _ok(client.post(f"{L}/challenges", json={"from": "zoe", "to": "bob", "message": "lunch?"}, headers=h), 201)
    _ok(client.post(f"{L}/players/zoe/merge", json={"into": "fay"}, headers=h))  # moves zoe's challenge to fay
    aliased = {"sides": [{"players": ["dee"], "rank": 1}, {"players": ["zoe"], "rank": 2}]}  # dee2 and fay
    _ok(client.post(f"{L}/games", json=aliased | {"played_at": games[39]["played_at"]}, headers=h), 201)
    _ok(client.post(f"{L}/seasons", json={"name": "spring", "pull": 0.25}, headers=h), 201)
    _ok(client.get(f"{L}/seasons"))
    _ok(client.get(f"{L}/seasons/spring"))
    _ok(client.post(f"{L}/challenges/1/accept", headers=h))
    _ok(client.post(f"{L}/challenges/1/game", json={"winner": "bob", "scores": {"bob": 21, "fay": 9}}, headers=h), 201)
    _ok(client.post(f"{L}/challenges", json={"from": "eve", "to": "cy"}, headers=h), 201)
    _ok(client.post(f"{L}/challenges/2/decline", headers=h))
    _ok(client.post(f"{L}/challenges", json={"from": "cy", "to": "eve"}, headers=h), 201)
    _ok(client.get(f"{L}/challenges", params={"status": "open", "player": "cy"}))
    _ok(client.get(f"{L}/challenges/3"))
    _ok(client.request("DELETE", f"{L}/games/{ids[7]}", headers=h))  # a closed season's game: its archive stays
    job = _ok(client.post(f"{L}/refits", json={"restarts": 1, "holdout": 0, "tune_rate": True}, headers=h), 202)
    assert wait(client, f"{L}/refits/{job['id']}")["status"] == "done"
    _ok(client.get(f"{L}/refits"))
    _ok(client.post(f"{L}/refits/{job['id']}/apply", headers=h))
    for game in games[40:]:
        _ok(client.post(f"{L}/games", json=game, headers=h), 201)
    _ok(client.get(f"{L}/leaderboard", params={"as_of": (START + timedelta(days=50)).isoformat()}))
    _ok(client.get(f"{L}/audit"))
    for report in ("identifiability", "intransitivity", "canonical"):
        _ok(client.get(f"{L}/{report}"))
    _ok(client.get(f"{L}/leaderboard", params={"form": "true"}))
    _ok(client.patch(f"{L}/players/eve", json={"name": "Eve"}, headers=h))
    _ok(client.delete(f"{L}/players/eve", headers=h))  # erased: a pseudonym everywhere, events too
    reader = _ok(client.post(f"{L}/keys", json={"name": "board", "role": "read"}, headers=h), 201)
    _ok(client.patch(L, json={"private": True}, headers=h))
    _ok(client.get(f"{L}/leaderboard", headers=bearer(reader["key"])))
    _ok(client.get(f"{L}/players/bob", headers=bearer(reader["key"])))
    _ok(client.get(f"{L}/keys", headers=h))
    _ok(client.delete(f"{L}/keys/{reader['id']}", headers=h))
    _ok(client.patch(L, json={"case_insensitive_keys": True, "k": 2}, headers=h))  # "Ann" folds; a new k
    path = tmp_path / "office.ndjson"
    path.write_bytes(export(client, "office", **h))
    cli(["import", "copy", str(path)])
    copy = bearer(json.loads(capsys.readouterr().out)["write_key"])
    _ok(client.get("/v1/ladders/copy/leaderboard", headers=copy))
    _ok(client.request("DELETE", "/v1/ladders/copy", json={"slug": "copy"}, headers=copy))


def _plain(client, settings) -> None:
    """A ladder without seats or steps that follow time: the paths these change, a server restart that takes over
    the refits of a server gone, and a refit asked for that cancels an auto refit."""
    body = {"slug": "plain", "k": 1, "seed": 4, "drift_steps": False}
    h = bearer(_ok(client.post("/v1/ladders", json=body, headers=admin()), 201)["admin_key"])
    L = "/v1/ladders/plain"
    unseated = [{"sides": [{k: v for k, v in s.items() if k != "seat"} for s in g["sides"]]} for g in _games(30, 2)]
    _ok(client.post(f"{L}/games/batch", json={"games": unseated}, headers=h), 201)
    _ok(client.get(f"{L}/players/bob/opponents", params={"purpose": "comparable"}))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = f"{socket.gethostname()}:{gone.pid}:1"
    db = Database.from_settings(settings)
    with db.writing() as session:
        ladder_id = storage.ladders.by_slug(session, "plain").id
        made = {}
        for name, status, owner, params in [
            ("queued", "queued", dead, {}),
            ("running", "running", dead, {}),
            ("auto", "queued", jobs.owner(), {"auto": True}),
        ]:
            job = Refit(ladder_id=ladder_id, status=status, progress=0.0, params=params, owner=owner)
            session.add(job)
            session.flush()
            made[name] = job.id
    db.dispose()
    with TestClient(create_app(settings)) as restarted:  # takes the queued job over, fails the running one
        assert wait(restarted, f"{L}/refits/{made['queued']}")["status"] == "done"
    assert _ok(client.get(f"{L}/refits/{made['running']}"))["status"] == "failed"
    job = _ok(client.post(f"{L}/refits", json={"restarts": 1, "holdout": 0}, headers=h), 202)  # cancels the auto
    assert _ok(client.get(f"{L}/refits/{made['auto']}"))["status"] == "cancelled"
    assert wait(client, f"{L}/refits/{job['id']}")["status"] == "done"
    _ok(client.post(f"{L}/refits/{job['id']}/apply", headers=h))
    _ok(client.get(f"{L}/audit"))
    _ok(client.request("DELETE", f"{L}/games/{_ok(client.get(f'{L}/games'))['items'][-1]['id']}", headers=h))


def test_every_statement_on_ladder_data_names_its_ladder(statements, client, cli, settings, tmp_path, capsys):
    _office(client, cli, tmp_path, capsys)
    _plain(client, settings)
    seen = statements()
    assert {"sqlalchemy", "driver", "fetch", "child"} <= {how for how, _ in seen}, "a way statements go went unseen"
    mentioned = {table for _, s in seen for table in _MENTION.findall(normalised(s))}
    assert not TABLES - mentioned, f"the workload touched none of {sorted(TABLES - mentioned)}"
    unrouted_ = sorted({(how, normalised(s)) for how, s in seen if unrouted(s)})
    assert not unrouted_, f"{len(unrouted_)} statements on ladder data without ladder_id = ?:\n" + "\n".join(
        f"  [{how}] {text[:600]}" for how, text in unrouted_
    )


#: Where the app takes the driver's own cursor or connection, past SQLAlchemy's events: (file, function).  Each
#: statement there is recorded by the wrappers above (``fetch`` runs those of
#: :class:`app.core.async_reads.AsyncReads`), or runs none on ladder data (SQLite's pragmas, on each new connection;
#: the ``COPY`` of rows into a scratch table, whose ``UPDATE … FROM`` goes through SQLAlchemy).
RAW = {
    ("app/core/db.py", "_on_connect"),
    ("app/core/db.py", "fetch"),
    ("app/core/async_reads.py", "_take"),
    ("app/storage/sql.py", "_copied"),
    ("app/storage/sql.py", "_dbapi_connection"),
    ("app/storage/sql.py", "driver_chunks"),
    ("app/storage/sql.py", "driver_fetchall"),
}


def test_every_statement_past_sqlalchemys_events_is_recorded():
    """The wrappers above cover every place the app reaches the driver directly: a new one fails here."""
    root = Path(__file__).resolve().parent.parent
    pattern = re.compile(r"dbapi_connection|raw_connection\(|\.cursor\(|psycopg\.(?:Async)?Connection\.connect")
    found = set()
    for path in sorted((root / "app").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        functions = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for number, line in enumerate(source.splitlines(), 1):
            if pattern.search(line) and not line.lstrip().startswith("#"):
                around = [f for f in functions if f.lineno <= number <= (f.end_lineno or f.lineno)]
                name = min(around, key=lambda f: (f.end_lineno or f.lineno) - f.lineno).name if around else "-"
                found.add((path.relative_to(root).as_posix(), name))
    assert found == RAW


@pytest.mark.parametrize(
    ("statement", "routed"),
    [
        ("SELECT id FROM players WHERE ladder_id = ? AND key = ?", True),
        ("UPDATE players SET key = %s WHERE id = %s", False),
        ("UPDATE players SET key = ? WHERE id = ? AND ladder_id = ?", True),
        ("SELECT players.id FROM players WHERE +players.ladder_id = ? AND players.id IN (?, ?)", True),
        ('UPDATE players SET "key" = %(key)s WHERE players.id = %(id_1)s::BIGINT', False),
        ("SELECT a.x FROM player_aliases a JOIN players p ON p.id = a.player_id WHERE a.ladder_id = ?", False),
        (
            "SELECT a.x FROM player_aliases a JOIN players p ON p.id = a.player_id AND p.ladder_id = a.ladder_id "
            "WHERE a.ladder_id = %(ladder_id_1)s",
            True,
        ),
        ("SELECT p.x FROM participants p JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id", False),
        ("INSERT INTO games (id, ladder_id, payload) VALUES (?, ?, ?)", True),
        ("INSERT INTO games (id, payload) VALUES (?, ?)", False),
        ("SELECT version FROM ladders WHERE id = ?", True),
        ("SELECT l.version FROM ladders l LEFT JOIN players p ON p.ladder_id = l.id WHERE l.id = ?", True),
        ("SELECT l.version FROM ladders l LEFT JOIN players p ON p.key = ? WHERE l.id = ?", False),
        ("SELECT EXTRACT(EPOCH FROM games.played_at) FROM games WHERE games.ladder_id = ?", True),
        ("SELECT 1", True),
        ("SELECT version_num FROM alembic_version", True),
    ],
)
def test_the_rule(statement, routed):
    assert unrouted(statement) is not routed
