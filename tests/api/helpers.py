"""What the API tests share: games to post, posting them, a job waited for, an export, a ladder as users see it,
a problem checked; webhooks and their deliveries; a ladder's story over time and its boards; ratings and history
compared after a refit; a server started in a process of its own.  Imported by the test modules; no test module
imports another."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.special import expit
from sqlalchemy import select

from app.core.config import Settings
from app.core.db import Database
from app.core.errors import Unavailable
from app.domain.access import ladder_for_read
from app.http.deps import caller
from app.storage.tables import Ladder
from devtools.server import ADMIN_KEY, free_port
from tests.conftest import admin, bearer, elo_rounded


def game(winner: str, loser: str) -> dict:
    return {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}


def duel(a: str, b: str, **extra) -> dict:
    return {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}], **extra}


def change_of(game: dict, key: str) -> float:
    """The ``elo_change`` a game (as answered or read) shows for player ``key``."""
    return next(p["elo_change"] for side in game["sides"] for p in side["players"] if p["key"] == key)


def problem(r: httpx.Response, status: int, field: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    if field is not None:
        assert field in {e.get("field") for e in body.get("errors", [])}, body
    return body


def post_all(client, slug: str, key: str, games: list[dict]) -> list[int]:
    ids = []
    for game in games:
        r = client.post(f"/v1/ladders/{slug}/games", json=game, headers=bearer(key))
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    return ids


def wait(client, location, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = client.get(location).json()
        if job["status"] in ("done", "rejected", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    pytest.fail(f"refit still {job['status']} after {timeout} s")


def export(client, slug: str, **headers) -> bytes:
    with client.stream("GET", f"/v1/ladders/{slug}/export", headers=headers) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"] == "application/x-ndjson"
        return r.read()


def players(client, slug: str) -> dict[str, dict]:
    board = client.get(f"/v1/ladders/{slug}/leaderboard?limit=500&inactive=true").json()["items"]
    out = {}
    for row in board:
        p = client.get(f"/v1/ladders/{slug}/players/{row['key']}").json()
        out[row["key"]] = {k: p[k] for k in ("vector", "games", "wins", "draws", "losses", "provisional")}
    return out


def everything(client, slug: str) -> dict:
    """What users see of a ladder: its players (vectors bit for bit), leaderboard, games and audit."""
    games = elo_rounded(client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"])
    for game in games:
        del game["id"]  # global ids differ; seq, times, external ids, sides and void marks do not
    board = client.get(f"/v1/ladders/{slug}/leaderboard?limit=500&inactive=true").json()["items"]
    profiles = {row["key"]: client.get(f"/v1/ladders/{slug}/players/{row['key']}").json() for row in board}
    for profile in profiles.values():
        del profile["ladder_version"]  # each ladder counts its own changes
    audit = client.get(f"/v1/ladders/{slug}/audit").json()
    return {"players": players(client, slug), "profiles": profiles, "board": board, "games": games, "audit": audit}


def random_games(n: int, seed: int = 0) -> list[dict]:
    """Singles, doubles and three-way games with ties among 8 players."""
    rng = np.random.default_rng(seed)
    names = [f"p{i}" for i in range(8)]
    games = []
    for _ in range(n):
        n_sides = int(rng.integers(2, 4))
        size = int(rng.integers(1, 3)) if n_sides == 2 else 1
        picks = rng.permutation(names)[: n_sides * size].tolist()
        sides = [
            {"players": picks[s * size : (s + 1) * size], "score": int(rng.integers(0, 3))} for s in range(n_sides)
        ]
        games.append({"sides": sides})
    return games


def disc_games(n: int, seed: int = 0) -> list[dict]:
    """Games of a pure disc game ([Limitations] Example 2): 12 players on a circle,
    P(i beats j) = σ(4 sin(θ_j - θ_i))."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0, 2 * np.pi, 12)
    games = []
    for _ in range(n):
        a, b = rng.choice(12, 2, replace=False)
        a_wins = rng.random() < 1 / (1 + np.exp(-4 * np.sin(theta[b] - theta[a])))
        games.append(game(f"d{a}", f"d{b}") if a_wins else game(f"d{b}", f"d{a}"))
    return games


def home_games(n: int, seed: int = 0, home_edge: float = 0.6) -> list[dict]:
    """Games between 8 teams where the home side wins more often; some with a neutral ground (no seats)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=8)
    games = []
    for g in range(n):
        a, b = rng.choice(8, 2, replace=False)
        neutral = g % 7 == 6
        p = expit(strength[a] - strength[b] + (0 if neutral else home_edge))
        home = {"players": [f"t{a}"], "rank": 1 if rng.random() < p else 2}
        away = {"players": [f"t{b}"], "rank": 3 - home["rank"]}
        if not neutral:
            home["seat"], away["seat"] = "home", "away"
        games.append({"sides": [home, away]})
    return games


def without(app, layer):
    """The app without the middleware ``layer`` (a fast path; before its first request builds the stack)."""
    app.user_middleware = [m for m in app.user_middleware if m.cls is not layer]
    return app


def route_refuses(app):
    """The app with routes that answer every request with a key 503: what is still answered otherwise is a fast
    path's."""

    def refuse() -> None:
        raise Unavailable("the route was asked")

    app.dependency_overrides[caller] = refuse
    return app


#: Quick retries and timeouts: no test waits minutes.
FAST = {
    "webhooks_allow_private": True,
    "webhooks_timeout": 0.3,
    "webhooks_attempts": 3,
    "webhooks_retry_seconds": 0.05,
}


def settings_for(url: str, **extra) -> Settings:
    return Settings(database_url=url, admin_key=ADMIN_KEY, migrate_on_start=False, **(FAST | extra))


def add_webhook(client: TestClient, url: str, events: list[str], slug: str = "test") -> dict:
    r = client.post(f"/v1/ladders/{slug}/webhooks", json={"url": url, "events": events}, headers=admin())
    assert r.status_code == 201, r.text
    return r.json()


def post_game(client: TestClient, winner: str, loser: str, slug: str = "test") -> dict:
    game = {"sides": [{"players": [winner], "score": 21}, {"players": [loser], "score": 15}]}
    r = client.post(f"/v1/ladders/{slug}/games", json=game, headers=admin())
    assert r.status_code == 201, r.text
    return r.json()


def deliveries(client: TestClient, webhook_id: int, slug: str = "test") -> list[dict]:
    r = client.get(f"/v1/ladders/{slug}/webhooks/{webhook_id}/deliveries", headers=admin())
    assert r.status_code == 200, r.text
    return r.json()["items"]


def settled(client: TestClient, webhook_id: int, n: int) -> list[dict]:
    """The webhook's ``n`` deliveries, once none is pending (a receiver's answer is recorded just after it)."""

    def done() -> list[dict] | None:
        log = deliveries(client, webhook_id)
        return log if len(log) == n and all(d["status"] != "pending" for d in log) else None

    return until(done)


def until(check, seconds: float = 10.0):
    """``check()`` once it is truthy (polled), else AssertionError."""
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)
    return found


START = datetime(2025, 1, 5, 12, tzinfo=UTC)  # its games, 400 days on, are past
CLUB = [f"club{n}" for n in range(8)]


def dated_game(a: str, b: str, a_wins: bool, when: datetime) -> dict:
    ranks = (1, 2) if a_wins else (2, 1)
    return {
        "sides": [{"players": [a], "rank": ranks[0]}, {"players": [b], "rank": ranks[1]}],
        "played_at": when.isoformat(),
    }


def season() -> tuple[list[dict], list[dict]]:
    """The story of a default ladder: in January "away" and "stay" play 56 games each against an 8-player club and
    win 7 of every 10; from February to July "stay" plays 86 more and wins 6 of every 10, "away" never plays
    again.  The January games, and the rest."""
    january, later = [], []
    for n in range(56):
        when = START + timedelta(hours=8 * n)
        for who in ("away", "stay"):
            january.append(dated_game(who, CLUB[n % 8], n % 10 < 7, when))
    for n in range(86):
        later.append(dated_game("stay", CLUB[n % 8], n % 10 < 6, START + timedelta(days=30 + 2 * n)))
    return january, later


def post(client, slug: str, key: str, games: list[dict]) -> None:
    for lo in range(0, len(games), 100):
        r = client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[lo : lo + 100]}, headers=bearer(key))
        assert r.status_code == 201, r.text


def profile(client, slug: str, key: str) -> dict:
    r = client.get(f"/v1/ladders/{slug}/players/{key}")
    assert r.status_code == 200, r.text
    return r.json()


def board(client, slug: str, **params) -> dict:
    r = client.get(f"/v1/ladders/{slug}/leaderboard", params={"by": "conservative", "limit": 100, **params})
    assert r.status_code == 200, r.text
    return r.json()


def same(past: dict, shown: dict) -> None:
    """Two leaderboard pages agree on everything but their versions (and the change since each player's last
    game, unknown in the past and after a replay)."""
    assert [unversioned(item) for item in past["items"]] == [unversioned(item) for item in shown["items"]]
    assert past["ladder_clock"] == shown["ladder_clock"]


def unversioned(item: dict) -> dict:
    return {k: v for k, v in item.items() if k not in ("ladder_version", "change_since_last_game", "created_at")}


def vectors(client, slug: str) -> dict[str, list[float]]:
    rows = board(client, slug, inactive="true")["items"]
    return {row["key"]: profile(client, slug, row["key"])["vector"] for row in rows}


def all_vectors(client, slug: str) -> dict[str, list[float]]:
    board = client.get(f"/v1/ladders/{slug}/leaderboard?inactive=true&limit=500").json()["items"]
    return {row["key"]: client.get(f"/v1/ladders/{slug}/players/{row['key']}").json()["vector"] for row in board}


def vectors_and_scores(game: dict) -> list:
    return [
        (side["actual_score"], side["expected_score"], [(p["key"], p["before"], p["after"]) for p in side["players"]])
        for side in game["sides"]
    ]


def run_refit(client, slug: str, h: dict) -> int:
    started = client.post(f"/v1/ladders/{slug}/refits", json={"select_k": [1]}, headers=h)
    job = wait(client, started.headers["location"])
    assert job["status"] == "done", job
    return job["id"]


def read_ladder(db: Database, slug: str = "test"):
    with db.reading() as session:
        return ladder_for_read(session, slug, fresh=True)


def with_draws(games: list[dict]) -> list[dict]:
    """Every ninth game a draw: what the draw model counts, which a replay recounts."""
    for n, g in enumerate(games):
        if n % 9 == 4:
            for side in g["sides"]:
                side["rank"] = 1
    return games


def same_ratings_and_history(client, db: Database, slugs: tuple[str, str]) -> None:
    """Two ladders given the same games and changes: the same ratings, seats, history and draw counts."""
    for slug in slugs:
        audit = client.get(f"/v1/ladders/{slug}/audit").json()
        assert audit["consistent"] and audit["counts_consistent"], audit
    assert all_vectors(client, slugs[0]) == all_vectors(client, slugs[1])
    assert (
        client.get(f"/v1/ladders/{slugs[0]}").json()["seats"] == client.get(f"/v1/ladders/{slugs[1]}").json()["seats"]
    )
    history = [client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"] for slug in slugs]
    strip = [[vectors_and_scores(g) for g in h] for h in history]
    assert strip[0] == strip[1]
    with db.reading() as session:
        draws = [session.execute(select(Ladder.draws, Ladder.draw_room).where(Ladder.slug == s)).one() for s in slugs]
    assert draws[0][0] == draws[1][0] > 0 and draws[0][1] == pytest.approx(draws[1][1], abs=1e-9)


def start(database_url: str, workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = os.environ | {"MELO_DATABASE_URL": database_url, "MELO_ADMIN_KEY": ADMIN_KEY}
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--workers", str(workers)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    with httpx.Client() as http:  # one client: each httpx.get builds a TLS context, ~40 ms of CPU
        while time.time() < deadline:
            try:
                if http.get(base + "/readyz").status_code == 200:
                    return proc, base
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("server did not start")


def idempotent_game(idem: str) -> dict:
    """The game a client sends under an Idempotency-Key: the same body on every retry."""
    n = sum(map(ord, idem))
    return {"sides": [{"players": [f"p{n % 12}"], "rank": 1}, {"players": [f"p{(n + 5) % 12}"], "rank": 2}]}


def all_games(http: httpx.Client, slug: str = "crash") -> list[dict]:
    games, cursor = [], None
    while True:
        page = http.get(
            f"/v1/ladders/{slug}/games", params={"limit": 500} | ({"cursor": cursor} if cursor else {})
        ).json()
        games += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return games
