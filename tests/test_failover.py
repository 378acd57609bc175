"""PostgreSQL high availability (docs/scaling.md): the service over a Patroni cluster of two PostgreSQL 15 servers
in synchronous mode behind HAProxy, with the primary killed (kill -9 of its postmaster) twice in a row, and etcd
stopped, while game servers post to several ladders and people read.  No request gets a 500; during the switch
posts and reads get a 503 with Retry-After; every acknowledged game is there once afterwards, every ladder's
audit is consistent, the old primary rejoins as the synchronous standby, and a game posted through the Python
client across the failover counts once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from melo_client import Melo, Retry

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.patroni import TIGHT, Cluster, installed
from devtools.server import ADMIN_KEY, live_server
from tests.api.test_crash import _all_games, game

WHY = f"{installed()}: scripts/ensure-patroni.sh installs Debian's packages (make test does)"
pytestmark = pytest.mark.skipif(installed() is not None, reason=WHY)

#: The ladders of each test (a test's games go to its own).
LADDERS = {"kill": [f"kill{n}" for n in range(4)], "etcd": [f"etcd{n}" for n in range(4)]}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Two members, synchronous mode, Patroni's tight timings (ttl 10, loop_wait 1, retry_timeout 4)."""
    cluster = Cluster(2, synchronous=True, timings=TIGHT)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def service(cluster) -> Iterator[tuple[str, dict[str, dict]]]:
    """The service (two workers) writing through HAProxy's primary port and reading lag-tolerant pages through
    its replica port; the ladders of every test and their write keys."""
    url = cluster.create_database("melo")
    upgrade(Settings(database_url=url).sqlalchemy_url)
    with live_server(url, workers=2, env={"MELO_READ_DATABASE_URL": cluster.replica_url("melo")}) as base:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        keys = {}
        for slug in [slug for ladders in LADDERS.values() for slug in ladders]:
            made = httpx.post(base + "/v1/ladders", json={"slug": slug}, headers=admin).json()
            keys[slug] = {"Authorization": f"Bearer {made['write_key']}"}
        yield base, keys


class Load:
    """Game servers posting to every ladder (each game under its own Idempotency-Key, retried with the same key
    until acknowledged, as a client does) and people reading leaderboards and game lists, in threads.

    What a test asserts on: ``acknowledged`` (key -> (ladder, game id, when its last try was sent, when it was
    acknowledged)), ``statuses`` seen, ``refused`` (when a post got a 503), and ``errors``: any answer but
    201/200 or a 503 problem with Retry-After."""

    def __init__(self, base: str, keys: dict[str, dict], tag: str, posters: int = 6, readers: int = 2) -> None:
        self.base, self.keys, self.tag, self.ladders = base, keys, tag, LADDERS[tag]
        self.acknowledged: dict[str, tuple[str, int, float, float]] = {}
        self.refused: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.errors: list[str] = []
        self.stop_ = threading.Event()
        self.threads = [threading.Thread(target=self._post, args=(c,)) for c in range(posters)]
        self.threads += [threading.Thread(target=self._read, args=(r,)) for r in range(readers)]

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop_.set()
        for t in self.threads:
            t.join()

    def _answered(self, r: httpx.Response, what: str) -> bool:
        """Record an answer; whether it is a success.  A 503 must be a problem saying when to retry."""
        self.statuses[r.status_code] += 1
        if r.status_code in (200, 201):
            return True
        problem = r.headers.get("content-type", "").startswith("application/problem+json")
        if r.status_code != 503 or "retry-after" not in r.headers or not problem:
            self.errors.append(f"{what}: {r.status_code} {r.headers.get('retry-after')} {r.text[:300]}")
        return False

    def _post(self, c: int) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as http:
            n = 0
            while not self.stop_.is_set() and not self.errors:
                idem = f"{self.tag}-c{c}-{n}"
                slug = self.ladders[(c + n) % len(self.ladders)]
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not self.errors:
                    sent = time.monotonic()
                    try:
                        r = http.post(
                            f"/v1/ladders/{slug}/games",
                            json=game(idem),
                            headers={**self.keys[slug], "Idempotency-Key": idem},
                        )
                    except httpx.TransportError as exc:
                        self.errors.append(f"{idem}: the service did not answer: {exc!r}")
                        return
                    if self._answered(r, idem):
                        self.acknowledged[idem] = (slug, r.json()["id"], sent, time.monotonic())
                        break
                    self.refused.append(time.monotonic())
                    time.sleep(0.05)
                else:
                    self.errors.append(f"{idem}: not acknowledged within 60 s") if not self.errors else None
                    return
                n += 1

    def _read(self, r: int) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as http:
            n = 0
            while not self.stop_.is_set():
                slug = self.ladders[n % len(self.ladders)]
                path = f"/v1/ladders/{slug}/leaderboard" if (n + r) % 2 else f"/v1/ladders/{slug}/games?limit=5"
                try:
                    self._answered(http.get(path), path)
                except httpx.TransportError as exc:
                    self.errors.append(f"{path}: the service did not answer: {exc!r}")
                    return
                n += 1
                time.sleep(0.02)

    def wait_for(self, count: int, timeout: float = 30) -> None:
        """Until ``count`` games are acknowledged (the load runs)."""
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < count and not self.errors:
            assert time.monotonic() < deadline, f"only {len(self.acknowledged)} acknowledged"
            time.sleep(0.05)

    def first_ack_after(self, kill: float, timeout: float = 60) -> float:
        """Seconds from ``kill`` to the first acknowledgement of a post sent once posts were refused after it:
        the new primary's first.  (A primary's backends outlive a kill -9 of its postmaster by a moment, and
        those already connected may still commit, the synchronous standby having the commit before the
        acknowledgement.)"""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.errors:
            down = next((t for t in list(self.refused) if t > kill), None)
            after = [acked for _, _, sent, acked in list(self.acknowledged.values()) if down and sent > down]
            if after:
                return min(after) - kill
            time.sleep(0.02)
        raise AssertionError(f"no game acknowledged after the kill: {self.errors[:3]}")


def every_game_once(base: str, load: Load, extra: int = 0) -> None:
    """Every game the load got acknowledged is stored once on its ladder, nothing else is (but ``extra`` games),
    and every ladder's audit is consistent."""
    acknowledged, ladders = load.acknowledged, load.ladders
    with httpx.Client(base_url=base, timeout=30) as http:
        stored = [(slug, g["id"]) for slug in ladders for g in _all_games(http, slug)]
        assert len(stored) == len(set(stored))  # each once
        lost = {(slug, game_id) for slug, game_id, _, _ in acknowledged.values()} - set(stored)
        assert not lost, f"{len(lost)} acknowledged games lost"
        assert len(stored) == len(acknowledged) + extra
        for slug in ladders:
            audit = http.get(f"/v1/ladders/{slug}/audit").json()
            assert audit["consistent"], (slug, audit)


def test_the_primary_killed_twice_under_load_loses_no_acknowledged_game(cluster, service):
    base, keys = service
    first = cluster.leader()
    through_client: list[int] = []

    def client_post() -> None:  # sent the moment the primary dies: its retries carry it across the failover
        retry = Retry(attempts=60, max_backoff=1.0)
        with Melo(base, keys["kill0"]["Authorization"].split()[1], "kill0", retry=retry) as melo:
            through_client.append(melo.games.post("alice", "bob").id)

    with Load(base, keys, "kill") as load:
        load.wait_for(30)
        killed = time.monotonic()
        assert cluster.kill_primary() == first
        poster = threading.Thread(target=client_post)
        poster.start()
        second = cluster.wait_leader(other_than=first)
        recovered = load.first_ack_after(killed)
        poster.join()
        # The old primary comes back as the synchronous standby (pg_rewind), and is failed over to at once.
        cluster.wait_healthy(60)
        roles = {m["name"]: m["role"] for m in cluster.state()}
        assert roles == {first: "sync_standby", second: "leader"}, cluster.patronictl_list()
        count = len(load.acknowledged)
        load.wait_for(count + 20)
        killed_again = time.monotonic()
        assert cluster.kill_primary() == second
        assert cluster.wait_leader(other_than=second) == first
        recovered_again = load.first_ack_after(killed_again)
        load.wait_for(len(load.acknowledged) + 20)
    assert not load.errors, load.errors[:5]
    assert load.statuses[500] == 0
    print(f"kill -> first acknowledged post: {recovered:.1f} s, then {recovered_again:.1f} s; {dict(load.statuses)}")
    assert recovered < 30 and recovered_again < 30
    assert len(through_client) == 1
    every_game_once(base, load, extra=1)
    with httpx.Client(base_url=base, timeout=30) as http:  # the client's game, once, in its ladder
        assert sum(g["id"] == through_client[0] for g in _all_games(http, "kill0")) == 1
    cluster.wait_healthy(60)
    listed = cluster.patronictl_list()
    assert "Sync Standby" in listed and listed.count("running") + listed.count("streaming") == 2, listed


def test_etcd_stopped_under_load_the_primary_keeps_taking_games(cluster, service):
    base, keys = service
    leader = cluster.leader()
    with Load(base, keys, "etcd") as load:
        load.wait_for(20)
        cluster.etcd.stop()
        # Past the leader key's time to live: Patroni's failsafe mode keeps the primary (every member answers it).
        expired = time.monotonic() + TIGHT["ttl"] + TIGHT["loop_wait"] + 1
        while time.monotonic() < expired + 1 or sum(acked > expired for *_, acked in load.acknowledged.values()) < 10:
            assert time.monotonic() < expired + 30 and not load.errors, (load.errors[:3], dict(load.statuses))
            time.sleep(0.1)
        cluster.etcd.start()
        assert cluster.wait_leader(timeout=30) == leader
        cluster.wait_healthy(30)
        load.wait_for(len(load.acknowledged) + 10)
    assert not load.errors, load.errors[:5]
    assert load.statuses[500] == 0
    every_game_once(base, load)
