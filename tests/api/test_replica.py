"""Reads on a streaming replica (``MELO_READ_DATABASE_URL``): leaderboards and profiles leave the primary, and an
answer is never older than the ladder version its client names, while the replica keeps up, falls behind, and
is stopped (docs/operations.md)."""

from __future__ import annotations

import concurrent.futures
import time

import httpx
import psycopg
import pytest

from app.core.config import Settings
from app.core.migrate import upgrade
from app.core.replicas import replicas_of
from devtools.postgres import PostgresServer
from devtools.replica import standby
from devtools.server import ADMIN_KEY, live_server
from tests.api.helpers import game


@pytest.fixture
def servers():
    try:
        primary = PostgresServer()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    primary.start()
    replica = None
    try:
        primary.create_database("melo")
        replica = standby(primary)
        yield primary, replica
    finally:
        primary.stop()
        if replica is not None:
            replica.stop()


def caught_up(replica: PostgresServer, version: int) -> None:
    """Wait until the replica has replayed the ladder's ``version`` (on a busy machine it may take a moment)."""
    deadline = time.monotonic() + 30
    with psycopg.connect(replica.url("melo"), autocommit=True) as conn:
        while conn.execute("SELECT version FROM ladders WHERE slug = 'club'").fetchone()[0] < version:
            assert time.monotonic() < deadline, "the replica does not replay"
            time.sleep(0.05)


def replayed_all(primary: PostgresServer, replica: PostgresServer) -> None:
    """Wait until the replica has replayed all the primary has written so far.  A server reads a replica that has
    replayed what the primary had written a second before; frozen, the primary sends no more, so a replica left
    behind then (a few records of the primary's own, on a busy machine) would not be read until it thaws."""
    deadline = time.monotonic() + 30
    with psycopg.connect(primary.url(), autocommit=True) as p, psycopg.connect(replica.url(), autocommit=True) as r:
        written = p.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        while not r.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (written,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the replica does not replay"
            time.sleep(0.05)


def replica_read(base: str) -> bool:
    """Whether the server at ``base`` reads the replica, as its ``/metrics`` say."""
    served = httpx.get(base + "/metrics", timeout=10).text
    return served.split('melo_replica_read{replica="1"} ')[1].split()[0] == "1.0"


def frozen_with_the_replica_read(primary: PostgresServer, replica: PostgresServer, base: str) -> None:
    """Freeze the primary once the replica has replayed all it wrote, and the server at ``base`` still reads the
    replica after its checks have found the primary frozen.  Between the last look at the primary and its freeze
    it may write a record (its own, or a key's last use) that the server's check sees and the frozen primary never
    sends: the server then rightly leaves the replica, and the primary is thawed and frozen again (3 times at
    most)."""
    for _ in range(3):
        deadline = time.monotonic() + 30  # read again (a thawed primary's next check), before the freeze
        while not replica_read(base):
            assert time.monotonic() < deadline, "the server does not read a replica that keeps up"
            time.sleep(0.1)
        replayed_all(primary, replica)
        primary.freeze()
        # A check takes a second with the primary frozen; the oldest log position it keeps is then over a
        # second old (MELO_READ_MAX_LAG): after 2.5 s, the server's verdict is the one it keeps while frozen.
        deadline = time.monotonic() + 2.5
        while (read := replica_read(base)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if read:
            return
        primary.freeze(False)
    pytest.fail("the server does not read a replica that has replayed all its frozen primary wrote")


def timed_read(base: str, version: int) -> tuple[int, float]:
    """(status, seconds) of a leaderboard read naming ``version``."""
    start = time.monotonic()
    r = httpx.get(base + "/v1/ladders/club/leaderboard", params={"min_version": version}, timeout=60)
    assert r.status_code != 200 or r.json()["ladder_version"] >= version
    return r.status_code, time.monotonic() - start


def test_reads_go_to_the_replica_and_never_answer_older_than_the_version_named(servers):
    primary, replica = servers
    url = primary.url("melo")
    upgrade(Settings(database_url=url).sqlalchemy_url)
    env = {"MELO_READ_DATABASE_URL": replica.url("melo"), "MELO_READ_MAX_LAG": "1", "MELO_READ_WAIT": "0.2"}
    lenient_env = env | {"MELO_READ_MAX_LAG": "60"}  # a server that tolerates a minute of lag
    with (
        live_server(url, 1, env) as base,
        live_server(url, 1, lenient_env) as other,
        httpx.Client(base_url=base, timeout=30) as http,
        httpx.Client(base_url=other, timeout=30) as lenient,
    ):
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        r = http.post("/v1/ladders", json={"slug": "club", "auto_refit": False}, headers=admin)
        owner = {"Authorization": f"Bearer {r.json()['admin_key']}"}
        key = {"Authorization": f"Bearer {r.json()['write_key']}"}
        r = http.post("/v1/ladders/club/keys", json={"name": "scoreboard", "role": "read"}, headers=owner)
        reader = r.json()
        games = [game(f"p{n % 7}", f"p{(n + 3) % 7}") for n in range(30)]
        assert http.post("/v1/ladders/club/games/batch", json={"games": games}, headers=key).status_code == 201

        def board(**params) -> httpx.Response:
            r = http.get("/v1/ladders/club/leaderboard", params=params)
            assert r.status_code == 200, r.text
            return r

        seen = board().json()["ladder_version"]
        assert lenient.get("/v1/ladders/club/leaderboard").json()["ladder_version"] == seen  # it watches the replica
        # Keeping up, the replica answers alone: the reads go on while the primary does not answer at all.
        caught_up(replica, seen)
        frozen_with_the_replica_read(primary, replica, base)
        try:
            with httpx.Client(base_url=base, timeout=5) as quick:
                for _ in range(40):
                    r = quick.get("/v1/ladders/club/leaderboard", params={"min_version": seen})
                    assert r.status_code == 200 and r.json()["ladder_version"] >= seen
                    r = quick.get("/v1/ladders/club/players/p1", params={"min_version": seen})
                    assert r.status_code == 200 and r.json()["ladder_version"] >= seen
                for report in ("audit", "intransitivity"):  # the reports too
                    assert quick.get(f"/v1/ladders/club/{report}").status_code == 200, report
        finally:
            primary.freeze(False)
        served = http.get("/metrics").text
        assert float(served.split('melo_lag_tolerant_reads_total{served_by="replica"} ')[1].split()[0]) >= 82

        # Behind: its replay paused, a new game is the primary's alone.
        with psycopg.connect(replica.url(), autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
        posted = http.post("/v1/ladders/club/games", json=game("p1", "p2"), headers=key)
        assert posted.status_code == 201
        newest = int(posted.headers["Ladder-Version"])  # the version that game's commit made
        assert newest > seen
        # A client that has seen it never gets less: the replica is waited for, then the primary answers.
        assert board(min_version=newest).json()["ladder_version"] == newest
        etag = f'"{newest}"'
        assert http.get("/v1/ladders/club/leaderboard", headers={"If-None-Match": etag}).status_code == 304
        profile = http.get("/v1/ladders/club/players/p1", params={"min_version": newest})
        assert profile.json()["ladder_version"] == newest
        # Further behind than MELO_READ_MAX_LAG, the replica is left alone: every reader sees the newest version.
        deadline = time.monotonic() + 10
        while board().json()["ladder_version"] < newest:
            assert time.monotonic() < deadline, "a replica a second behind is still read"
            time.sleep(0.2)
        assert not replica_read(base)  # and its metrics say so
        # The lenient server still reads the paused replica (a reader naming no version gets the page as it
        # replayed it), but privacy is the primary's word: a ladder made private leaves the
        # replicas within a second, whatever they have replayed, and a revoked key is refused at once.
        assert lenient.get("/v1/ladders/club/leaderboard").json()["ladder_version"] == seen
        assert http.patch("/v1/ladders/club", json={"private": True}, headers=owner).status_code == 200
        made_private = time.monotonic()
        while lenient.get("/v1/ladders/club/leaderboard").status_code != 401:
            # Within a second, give or take a check that the busy primary answers late (its last word stands).
            assert time.monotonic() - made_private < 5, "a ladder made private is still read on the replica"
            time.sleep(0.1)
        assert lenient.get("/v1/ladders/club/players/p1").status_code == 401
        read = {"Authorization": f"Bearer {reader['key']}"}
        assert lenient.get("/v1/ladders/club/leaderboard", headers=read).json()["ladder_version"] == newest + 1
        assert http.delete(f"/v1/ladders/club/keys/{reader['id']}", headers=owner).status_code == 200
        assert lenient.get("/v1/ladders/club/leaderboard", headers=read).status_code == 403
        assert http.patch("/v1/ladders/club", json={"private": False}, headers=owner).status_code == 200
        newest += 2  # each change of the ladder's settings made a version
        with psycopg.connect(replica.url(), autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")

        # Hung (SIGSTOP) while it is read: the reads in flight give up on it within its 5 s bound and the primary
        # answers them; the checks stop sending reads there.
        caught_up(replica, newest)
        time.sleep(1.5)  # the strict server reads it again
        replica.freeze()
        try:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                timed = list(pool.map(lambda _: timed_read(base, newest), range(16)))
            assert all(status == 200 for status, _ in timed), timed
            assert max(seconds for _, seconds in timed) < 8, timed
            later = [timed_read(base, newest) for _ in range(5)]
            assert all(status == 200 and seconds < 1 for status, seconds in later), later
        finally:
            replica.freeze(False)

        # Stopped: every read is answered, by the primary, none older than the last seen.
        replica.crash()
        for _ in range(20):
            assert board(min_version=newest).json()["ladder_version"] == newest
            assert board().json()["ladder_version"] == newest
        posted = http.post("/v1/ladders/club/games", json=game("p3", "p4"), headers=key)
        assert posted.status_code == 201 and int(posted.headers["Ladder-Version"]) == newest + 1
        assert board(min_version=newest + 1).json()["ladder_version"] == newest + 1
        time.sleep(0.3)  # a read naming no version may get the page ranked up to MELO_BOARD_LAG (0.25 s) before
        assert board().json()["ladder_version"] == newest + 1


def test_replica_urls_are_read_like_the_primarys():
    settings = Settings(
        database_url="postgresql://melo@db1/melo",
        database_password="p@ss/word",
        read_database_url=" postgres://melo@db2/melo , postgresql://other:own@db3/melo?pgbouncer=true ,",
    )
    (second, direct), (third, pooled) = settings.replica_urls
    assert second == "postgresql+psycopg://melo:p%40ss%2Fword@db2/melo" and not direct
    assert third == "postgresql+psycopg://other:own@db3/melo" and pooled  # its own password, through a pooler
    assert Settings(database_url="postgresql://db1/melo").replica_urls == []
    with pytest.raises(RuntimeError, match="PostgreSQL"):
        replicas_of(Settings(database_url="sqlite://", read_database_url="postgresql://db2/melo"), None)
