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
from devtools.game_load import Load, all_games
from devtools.patroni import TIGHT, Cluster, installed
from devtools.server import ADMIN_KEY, live_server

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


def load_on(service, tag: str) -> Load:
    """Six posters and two readers on the ladders of test ``tag``."""
    base, keys = service
    return Load(base, {slug: keys[slug] for slug in LADDERS[tag]}, tag)


class Chores(threading.Thread):
    """A ladder's owner at work through the failovers: voiding games, closing seasons, running refits and applying
    them, in turn, each retried on a 503 as a client does (a retry told 409 had its first try committed)."""

    def __init__(self, base: str, keys: dict[str, dict], load: Load) -> None:
        super().__init__()
        self.base, self.keys, self.load = base, keys, load
        self.done: Counter[str] = Counter()
        self.stop_ = threading.Event()

    def wait_all(self, timeout: float = 60) -> None:
        """Until each chore was done once at least (a refit cut off by a failover fails, and is run again)."""
        deadline = time.monotonic() + timeout
        while not all(self.done[chore] for chore in ("void", "season", "refit applied")) and not self.load.errors:
            assert time.monotonic() < deadline, self.done
            time.sleep(0.1)

    def _send(self, http: httpx.Client, method: str, path: str, headers: dict, body: dict | None = None) -> dict:
        """The answer's body once it succeeds; {} if a retry was told 409."""
        retried = False
        while True:
            r = http.request(method, path, json=body, headers=headers)
            if r.status_code in (200, 201, 202):
                return r.json()
            if r.status_code == 409 and retried:
                return {}
            self.load._answered(r, f"{method} {path}")  # a 503 problem with Retry-After, or an error
            if r.status_code != 503:
                return {}
            retried = True
            time.sleep(0.1)

    def run(self) -> None:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        with httpx.Client(base_url=self.base, timeout=60) as http:
            n = 0
            while not self.stop_.is_set() and not self.load.errors:
                slug = self.load.ladders[n % len(self.load.ladders)]
                games = [g for s, g, *_ in list(self.load.acknowledged.values()) if s == slug]
                chore = ("void", "season", "refit")[n % 3]
                if chore == "void" and games:
                    if self._send(http, "POST", f"/v1/ladders/{slug}/games/{games[len(games) // 2]}/void", admin):
                        self.done["void"] += 1
                elif chore == "season":
                    if self._send(http, "POST", f"/v1/ladders/{slug}/seasons", admin, {"name": f"s{n}"}):
                        self.done["season"] += 1
                elif games:
                    refit = self._send(
                        http, "POST", f"/v1/ladders/{slug}/refits", admin, {"select_k": [1], "restarts": 1}
                    )
                    while refit and refit["status"] in ("queued", "running") and not self.stop_.is_set():
                        time.sleep(0.2)
                        refit = self._send(http, "GET", f"/v1/ladders/{slug}/refits/{refit['id']}", admin)
                    # A refit cut off by a failover failed: the next one is applied.
                    apply = f"/v1/ladders/{slug}/refits/{refit['id']}/apply" if refit else ""
                    if refit and refit["status"] == "done" and self._send(http, "POST", apply, admin):
                        self.done["refit applied"] += 1
                n += 1
                time.sleep(0.05)


def every_game_once(base: str, load: Load, extra: int = 0) -> None:
    """Every game the load got acknowledged is stored once on its ladder, nothing else is (but ``extra`` games),
    and every ladder's audit is consistent."""
    lost, twice = load.missing()
    assert not lost and not twice, f"{len(lost)} acknowledged games lost, {twice} stored twice"
    with httpx.Client(base_url=base, timeout=30) as http:
        assert sum(len(all_games(http, slug)) for slug in load.ladders) == len(load.acknowledged) + extra
        for slug in load.ladders:
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

    with load_on(service, "kill") as load:
        chores = Chores(base, keys, load)
        chores.start()
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
        chores.wait_all()
        chores.stop_.set()
        chores.join()
    assert not load.errors, load.errors[:5]
    assert all(chores.done[chore] for chore in ("void", "season", "refit applied")), chores.done
    assert load.statuses[500] == 0
    print(f"kill -> first acknowledged post: {recovered:.1f} s, then {recovered_again:.1f} s; {dict(load.statuses)}")
    print(f"during the failovers: {dict(chores.done)}")
    assert recovered < 30 and recovered_again < 30
    assert len(through_client) == 1
    every_game_once(base, load, extra=1)
    with httpx.Client(base_url=base, timeout=30) as http:  # the client's game, once, in its ladder
        assert sum(g["id"] == through_client[0] for g in all_games(http, "kill0")) == 1
    cluster.wait_healthy(60)
    listed = cluster.patronictl_list()
    assert "Sync Standby" in listed and listed.count("running") + listed.count("streaming") == 2, listed


def test_etcd_stopped_under_load_the_primary_keeps_taking_games(cluster, service):
    base = service[0]
    leader = cluster.leader()
    with load_on(service, "etcd") as load:
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
