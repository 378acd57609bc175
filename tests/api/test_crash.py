"""kill -9 in the middle of group commits: no acknowledged game is lost, none is applied twice.  The posts go to
16 ladders at once (on SQLite a group spans ladders; on PostgreSQL each ladder commits its own)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from devtools.server import ADMIN_KEY
from tests.api.helpers import all_games, idempotent_game, start
from tests.conftest import fresh_database


@pytest.fixture(params=["sqlite", "postgresql", "pgbouncer"])
def database_url(request, tmp_path) -> str:
    """Each kind of database, and PostgreSQL through PgBouncer in transaction mode (docs/operations.md)."""
    return fresh_database(request, tmp_path, request.param)


#: Crashes per test: each restart must recover what the one before left, retries included.
KILLS = 2
LADDERS = [f"crash{n}" for n in range(16)]


def ladder_of(idem: str) -> str:
    """The ladder a key's game goes to, on every retry."""
    return LADDERS[sum(map(ord, idem)) * 7 % len(LADDERS)]


def post(http: httpx.Client, keys: dict[str, dict], idem: str) -> httpx.Response:
    slug = ladder_of(idem)
    return http.post(
        f"/v1/ladders/{slug}/games", json=idempotent_game(idem), headers={**keys[slug], "Idempotency-Key": idem}
    )


def load_until_killed(proc: subprocess.Popen, base: str, keys: dict[str, dict], round_: int, seconds: float = 1.5):
    """Eight clients post games with unique Idempotency-Keys over the ladders; the server and its workers are
    killed mid-load.

    Returns what was acknowledged (key -> game id) and every key sent.
    """
    acknowledged: dict[str, int] = {}
    sent: list[str] = []
    stop = threading.Event()

    def client(c: int) -> None:
        with httpx.Client(base_url=base, timeout=10) as http:
            n = 0
            while not stop.is_set():
                idem = f"r{round_}-c{c}-{n}"
                sent.append(idem)
                try:
                    r = post(http, keys, idem)
                except httpx.TransportError:
                    return  # the server died under this request: it may or may not have committed
                if r.status_code == 201:
                    acknowledged[idem] = r.json()["id"]
                n += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    deadline = time.monotonic() + 20  # on a loaded machine, until enough games were acknowledged to kill it under load
    while len(acknowledged) <= 20 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the server and its workers, mid-group
    stop.set()
    for t in threads:
        t.join()
    proc.wait()
    return acknowledged, sent


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_under_load_loses_no_acknowledged_game(database_url, workers):
    proc, base = start(database_url, workers)
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    keys = {}
    for slug in LADDERS:
        made = httpx.post(base + "/v1/ladders", json={"slug": slug}, headers=admin).json()
        keys[slug] = {"Authorization": f"Bearer {made['write_key']}"}
    acknowledged: dict[str, int] = {}
    sent: list[str] = []
    for round_ in range(KILLS):
        if round_:
            proc, base = start(database_url, workers)
        acked, tried = load_until_killed(proc, base, keys, round_)
        assert len(acked) > 20, len(acked)  # the kill landed under load
        acknowledged |= acked
        sent += tried

    proc, base = start(database_url, workers)
    try:
        with httpx.Client(base_url=base, timeout=30) as http:
            stored = {(slug, g["id"]) for slug in LADDERS for g in all_games(http, slug)}
            lost = {(ladder_of(idem), game_id) for idem, game_id in acknowledged.items()} - stored
            assert not lost  # every acknowledged game is there
            # Retrying every request sent, acknowledged or not, applies none twice: each key has its one game.

            def retry(idem: str) -> tuple[str, int]:
                r = post(http, keys, idem)
                assert r.status_code == 201, r.text
                return idem, r.json()["id"]

            with ThreadPoolExecutor(8) as pool:
                retried = dict(pool.map(retry, sent))
            assert all(retried[idem] == game_id for idem, game_id in acknowledged.items())
            for slug in LADDERS:
                games = all_games(http, slug)
                wanted = {idem for idem in sent if ladder_of(idem) == slug}
                assert len(games) == len(wanted) == len({g["id"] for g in games}), slug
                audit = http.get(f"/v1/ladders/{slug}/audit").json()
                assert audit["consistent"] and audit["games"] == len(wanted), (slug, audit)
            print(
                f"{KILLS} kills, {workers} workers: {len(acknowledged)} acknowledged, {len(lost)} lost, "
                f"{len(sent)} sent, {len(sent) - len(stored)} applied only by the retry"
            )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_refit_does_not_outlive_its_server(tmp_path):
    proc, base = start(f"sqlite:///{tmp_path / 'melo.db'}", workers=1)
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        r = httpx.post(base + "/v1/ladders", json={"slug": "busy", "k": 3, "auto_refit": False}, headers=admin)
        headers = {"Authorization": f"Bearer {r.json()['write_key']}"}
        rng = np.random.default_rng(0)
        for _ in range(5):  # 5,000 games over 200 players: a refit of a minute or more
            pairs = [rng.choice(200, 2, replace=False).tolist() for _ in range(1000)]
            games = [
                {"sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}]} for a, b in pairs
            ]
            r = httpx.post(base + "/v1/ladders/busy/games/batch", json={"games": games}, headers=headers)
            assert r.status_code == 201, r.text
        body = {"restarts": 20, "l2": None, "select_k": [0, 1, 2, 3]}
        r = httpx.post(base + "/v1/ladders/busy/refits", json=body, headers=headers)
        assert r.status_code == 202, r.text
        job = r.headers["Location"]
        deadline = time.time() + 60
        while httpx.get(base + job).json()["status"] != "running":
            assert time.time() < deadline
            time.sleep(0.1)
        # The refit's process is a child of the job runner's fork server, a child of the server's.
        (forkserver,) = _children(proc.pid, "forkserver")
        (refit,) = _children(forkserver)
        os.kill(proc.pid, signal.SIGKILL)  # the server alone, not its process group
        deadline = time.time() + 10
        while _alive(refit) or _alive(forkserver):
            assert time.time() < deadline, "the refit outlived its server"
            time.sleep(0.1)
        with sqlite3.connect(tmp_path / "melo.db") as conn:  # it was stopped, not finished
            assert conn.execute("SELECT status FROM refits").fetchall() == [("running",)]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)


def _children(pid: int, command: str | None = None) -> list[int]:
    """The processes whose parent is ``pid`` (and whose command line has ``command``)."""
    named = ["-f", command] if command else []
    return [
        int(p) for p in subprocess.run(["pgrep", "-P", str(pid), *named], capture_output=True, text=True).stdout.split()
    ]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
