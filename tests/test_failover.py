"""PostgreSQL high availability (docs/scaling.md): the service over a Patroni cluster of two PostgreSQL servers in
synchronous mode behind HAProxy, with the primary killed (kill -9 of its postmaster) twice in a row, and etcd
stopped, and the primary handed over as planned (``patronictl switchover``), while game servers post to several
ladders and people read.

No request gets a 500 or takes longer than the service's deadline and a margin; during the switch posts and reads
get a 503 with Retry-After; every acknowledged game is stored once afterwards (half of them posted without an
``external_id``: the Idempotency-Key alone keeps their retries from counting twice), every ladder's audit is
consistent, and the old primary rejoins as the synchronous standby.  At each kill a void, a season close and a
refit's apply are inside their transactions (waiting on the ladder's replay lock, held by the test), and a game
posted through the Python client is on its way: each ends done once, the client's game after a refused try."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from melo_client import Melo, Retry

from app.core.config import Settings
from app.core.migrate import upgrade
from app.storage.players import REPLAY_LOCKS
from devtools.game_load import Load, all_games
from devtools.patroni import TIGHT, Cluster, missing
from devtools.server import ADMIN_KEY, live_server
from tests.helpers import cwd, descendants, may_enter, owner, private_cwd

WHY = f"{missing()}: scripts/ensure-patroni.sh installs Debian's packages (make test does)"
pytestmark = pytest.mark.skipif(missing() is not None, reason=WHY)

#: The ladders of each test (a test's games go to its own).
LADDERS = {tag: [f"{tag}{n}" for n in range(4)] for tag in ("kill", "etcd", "switch")}
#: The service's request deadline (MELO_REQUEST_TIMEOUT); no request may take longer than it and SLACK seconds.
DEADLINE, SLACK = 5.0, 2.0
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Two members, synchronous mode, Patroni's tight timings (ttl 10, loop_wait 1, retry_timeout 4); started from
    a directory of mode 700, as a clone in a home directory is: one the postgres user, which runs Patroni and
    PostgreSQL, may not enter (tests/test_harness_cwd.py)."""
    cluster = Cluster(2, synchronous=True, timings=TIGHT)
    try:
        with private_cwd():
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
    env = {"MELO_READ_DATABASE_URL": cluster.replica_url("melo"), "MELO_REQUEST_TIMEOUT": str(DEADLINE)}
    with live_server(url, workers=2, env=env) as base:
        keys = {}
        for slug in [slug for ladders in LADDERS.values() for slug in ladders]:
            made = httpx.post(base + "/v1/ladders", json={"slug": slug}, headers=ADMIN).json()
            keys[slug] = {"Authorization": f"Bearer {made['write_key']}"}
        yield base, keys


def load_on(service, tag: str) -> Load:
    """Six posters and two readers on the ladders of test ``tag``."""
    base, keys = service
    return Load(base, {slug: keys[slug] for slug in LADDERS[tag]}, tag)


class Tries(httpx.HTTPTransport):
    """The Python client's transport: it holds the first request until ``go`` is set (the primary is dead, so the
    request is on its way across the kill), and records each try: (seconds, status or the connection error)."""

    def __init__(self, go: threading.Event) -> None:
        super().__init__()
        self.go, self.tries = go, []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self.tries:
            self.go.wait(30)
        sent = time.monotonic()
        try:
            response = super().handle_request(request)
        except httpx.TransportError as exc:
            self.tries.append((time.monotonic() - sent, repr(exc)))
            raise
        self.tries.append((time.monotonic() - sent, response.status_code))
        return response


class Chore(threading.Thread):
    """A ladder owner's write (a void, a season close, a refit's apply), tried again on a 503 or a lost
    connection for up to a minute, as a client does.  ``tries``: (sent, answered, status or error) each."""

    def __init__(self, base: str, kind: str, path: str, body: dict | None = None) -> None:
        super().__init__(name=kind)
        self.base, self.kind, self.path, self.body = base, kind, path, body
        self.tries: list[tuple[float, float, int | str]] = []
        self.error: str | None = None

    def run(self) -> None:
        try:
            self._send()
        except Exception as exc:
            self.error = repr(exc)

    def _send(self) -> None:
        deadline = time.monotonic() + 60
        with httpx.Client(base_url=self.base, headers=ADMIN, timeout=DEADLINE + SLACK) as http:
            while time.monotonic() < deadline:
                sent = time.monotonic()
                try:
                    status: int | str = http.post(self.path, json=self.body).status_code
                except httpx.TransportError as exc:
                    status = repr(exc)
                self.tries.append((sent, time.monotonic(), status))
                # A retry told 409 had an earlier try committed (checked afterwards).
                if status in (200, 201, 202) or (status == 409 and len(self.tries) > 1):
                    return
                if status != 503:
                    self.error = f"{self.kind}: {status}"
                    return
                time.sleep(0.2)
        self.error = f"{self.kind}: not done within 60 s: {self.tries}"

    def check(self, kill: float) -> None:
        """It was on its way at ``kill`` (sent before, answered after: a 2xx or a 503), then done, each try within
        the deadline."""
        assert self.error is None and not self.is_alive(), (self.error, self.tries)
        sent, answered, status = self.tries[0]
        assert sent < kill < answered and status in (200, 201, 202, 503), (kill, self.tries)
        assert self.tries[-1][2] in (200, 201, 202, 409), self.tries
        assert max(answered - sent for sent, answered, _ in self.tries) < DEADLINE + SLACK, self.tries


class InFlight:
    """A void (ladder kill1), a season close (kill2) and the apply of a finished refit (kill3), each inside its
    transaction and waiting for the ladder's replay lock, which the test holds (game commits do not take it) until
    the primary dies with it.  ``n`` names the season."""

    def __init__(self, cluster: Cluster, base: str, load: Load, n: int) -> None:
        self.cluster, self.base = cluster, base
        with httpx.Client(base_url=base, headers=ADMIN, timeout=30) as http:
            refit = http.post("/v1/ladders/kill3/refits", json={"select_k": [1], "restarts": 1})
            assert refit.status_code == 202, refit.text
            self.refit = f"/v1/ladders/kill3/refits/{refit.json()['id']}"
            deadline = time.monotonic() + 30
            while (status := http.get(self.refit).json()["status"]) in ("queued", "running"):
                assert time.monotonic() < deadline, status
                time.sleep(0.1)
            assert status == "done", http.get(self.refit).json()
        self.voided = max(game for slug, game, *_ in list(load.acknowledged.values()) if slug == "kill1")
        self.season = f"s{n}"
        self.chores = [
            Chore(base, "void", f"/v1/ladders/kill1/games/{self.voided}/void"),
            Chore(base, "season close", "/v1/ladders/kill2/seasons", {"name": self.season}),
            Chore(base, "refit apply", self.refit + "/apply"),
        ]

    def __enter__(self) -> InFlight:
        self.holder = psycopg.connect(self.cluster.url("melo"))
        slugs = ["kill1", "kill2", "kill3"]
        ids = self.holder.execute("SELECT id FROM ladders WHERE slug = ANY(%s) ORDER BY id", (slugs,)).fetchall()
        for (ladder_id,) in ids:
            self.holder.execute("SELECT pg_advisory_xact_lock(%s, %s)", (REPLAY_LOCKS, ladder_id))
        for chore in self.chores:
            chore.start()
        waiting, deadline = 0, time.monotonic() + 10
        with psycopg.connect(self.cluster.url("melo"), autocommit=True) as conn:
            while waiting < len(self.chores):
                assert time.monotonic() < deadline, f"{waiting} chores wait on the replay lock"
                time.sleep(0.02)
                sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory' AND datname = 'melo'"
                waiting = conn.execute(sql).fetchone()[0]
        return self

    def __exit__(self, *_) -> None:
        try:
            self.holder.close()  # dead with the primary, or the test failed before the kill
        finally:
            for chore in self.chores:
                chore.join(70)

    def check(self, kill: float) -> None:
        """Each chore was on its way at ``kill`` and ended done, once."""
        for chore in self.chores:
            chore.check(kill)
        with httpx.Client(base_url=self.base, timeout=30) as http:
            assert http.get(f"/v1/ladders/kill1/games/{self.voided}").json()["voided_at"] is not None
            seasons = http.get("/v1/ladders/kill2/seasons", params={"limit": 100}).json()["items"]
            assert [s["name"] for s in seasons].count(self.season) == 1, seasons
            assert http.get(self.refit).json()["applied_at"] is not None


def every_game_once(base: str, load: Load, extra: int = 0) -> None:
    """Every game the load got acknowledged is stored once on its ladder, nothing else is (but ``extra`` games),
    and every ladder's audit is consistent."""
    lost, twice = load.missing()
    assert not lost and not twice, f"{len(lost)} acknowledged games lost, {twice} stored more than once"
    assert sum(load.stored().values()) == len(load.acknowledged) + extra
    with httpx.Client(base_url=base, timeout=30) as http:
        for slug in load.ladders:
            audit = http.get(f"/v1/ladders/{slug}/audit").json()
            assert audit["consistent"], (slug, audit)


def test_every_process_of_the_cluster_runs_in_a_directory_of_the_cluster(cluster):
    """Started from a directory the postgres user may not enter (the fixture), each process of the cluster runs in
    one of its own directories, one its user may enter: Patroni (as postgres, and the PostgreSQL it starts), etcd and
    HAProxy."""
    assert cluster.haproxy is not None and cluster.etcd.proc is not None
    pids = {cluster.haproxy.pid: "haproxy", cluster.etcd.proc.pid: "etcd"}
    for member in cluster.members:
        assert member.proc is not None
        # Patroni, or runuser and Patroni (runuser's watching parent, root, waits in /), and its PostgreSQL
        patroni = descendants(member.proc.pid) if cluster.as_user else [member.proc.pid]
        found = [*patroni, *member.postgres_processes()]
        assert len(found) >= 3, (member.name, found)  # Patroni, its postmaster and the postmaster's processes
        pids |= dict.fromkeys(found, member.name)
    for pid, name in pids.items():
        where, user = cwd(pid), owner(pid)
        if where is None or user is None:  # a process that has ended meanwhile
            continue
        assert where.is_relative_to(cluster.dir) or where.is_relative_to(cluster.etcd.dir), (name, pid, user, where)
        assert may_enter(user, where), (name, pid, user, where)


def test_the_primary_killed_twice_under_load_loses_no_acknowledged_game(cluster, service):
    base, keys = service
    first = cluster.leader()
    go = threading.Event()
    tries = Tries(go)
    posted: list[object] = []  # the client's game, or what it raised

    def client_post() -> None:  # its first try is held until the primary is dead: its retries carry it across
        try:
            # The service may hold a request through the switch (HAProxy queues the connection until the new
            # primary is up): a try that takes longer than 2 s is given up and sent again, as a timeout is.
            retry, key = Retry(attempts=60, max_backoff=1.0), keys["kill0"]["Authorization"].split()[1]
            with Melo(base, key, "kill0", retry=retry, transport=tries, timeout=2.0) as melo:
                posted.append(melo.games.post("client-winner", "client-loser").id)
        except Exception as exc:
            posted.append(exc)

    poster = threading.Thread(target=client_post)
    with load_on(service, "kill") as load:
        load.wait_for(30)
        with InFlight(cluster, base, load, 1) as chores:
            poster.start()
            killed = time.monotonic()
            old, second, kills = cluster.fail_over(killed=go.set)
            assert old == first
            recovered = load.first_ack_after(killed)
        chores.check(killed)
        poster.join(70)
        # The old primary comes back as the synchronous standby (pg_rewind), and is failed over to at once.
        cluster.wait_healthy(120)
        roles = {m["name"]: m["role"] for m in cluster.state()}
        assert roles == {first: "sync_standby", second: "leader"}, cluster.patronictl_list()
        load.wait_for(len(load.acknowledged) + 20)
        with InFlight(cluster, base, load, 2) as chores_again:
            killed_again = time.monotonic()
            old, new, kills_again = cluster.fail_over()
            assert (old, new) == (second, first)
            recovered_again = load.first_ack_after(killed_again)
        chores_again.check(killed_again)
        load.wait_for(len(load.acknowledged) + 20)
    assert not load.errors, load.errors[:5]
    assert load.statuses[500] == 0 and load.statuses[503] > 0, load.statuses
    assert load.slowest < DEADLINE + SLACK, load.slowest
    print(f"kill -> first acknowledged post: {recovered:.1f} s, then {recovered_again:.1f} s; {dict(load.statuses)}")
    print(f"kills before Patroni failed over: {kills}, then {kills_again} (more than 1: restarted in place first)")
    print(f"the client's tries: {tries.tries}; slowest request {load.slowest:.1f} s")
    for kill, chore in [(killed, c) for c in chores.chores] + [(killed_again, c) for c in chores_again.chores]:
        print(f"{chore.kind}, from its kill:", [(round(a - kill, 2), round(b - kill, 2), s) for a, b, s in chore.tries])
    assert recovered < 30 and recovered_again < 30
    # The client's game: refused (or its connection lost) at first, then acknowledged, and stored once.
    assert not poster.is_alive() and len(posted) == 1 and isinstance(posted[0], int), posted
    assert len(tries.tries) >= 2 and tries.tries[0][1] != 201 and tries.tries[-1][1] == 201, tries.tries
    assert all(seconds < DEADLINE + SLACK for seconds, _ in tries.tries), tries.tries
    every_game_once(base, load, extra=1)
    with httpx.Client(base_url=base, timeout=30) as http:
        games = all_games(http, "kill0")
    mine = [g for g in games if any(p["key"] == "client-winner" for side in g["sides"] for p in side["players"])]
    assert [g["id"] for g in mine] == posted, mine
    cluster.wait_healthy(120)
    listed = cluster.patronictl_list()
    assert "Sync Standby" in listed and listed.count("running") + listed.count("streaming") == 2, listed


def test_etcd_stopped_under_load_the_primary_keeps_taking_games(cluster, service):
    base = service[0]
    leader = cluster.leader()
    with load_on(service, "etcd") as load:
        load.wait_for(20)
        cluster.etcd.stop()
        try:
            # Past the leader key's time to live: Patroni's failsafe mode keeps the primary (every member answers
            # it).
            expired = time.monotonic() + TIGHT["ttl"] + TIGHT["loop_wait"] + 1
            while time.monotonic() < expired + 1 or sum(t > expired for *_, t in load.acknowledged.values()) < 10:
                assert time.monotonic() < expired + 30 and not load.errors, (load.errors[:3], dict(load.statuses))
                time.sleep(0.1)
        finally:
            cluster.etcd.start()
        assert cluster.wait_leader(timeout=30) == leader
        cluster.wait_healthy(60)
        load.wait_for(len(load.acknowledged) + 10)
    assert not load.errors, load.errors[:5]
    assert load.statuses[500] == 0
    assert load.slowest < DEADLINE + SLACK, load.slowest
    every_game_once(base, load)


def test_a_planned_switchover_under_load_loses_nothing(cluster, service):
    """``patronictl switchover``, as before a machine's maintenance: the posts pause while the leader hands over,
    none gets a 500 or waits past the deadline, and every acknowledged game is stored once."""
    base = service[0]
    cluster.wait_healthy(120)
    with load_on(service, "switch") as load:
        load.wait_for(20)
        start = time.monotonic()
        old, new = cluster.switch_over()
        switched = time.monotonic() - start
        load.wait_for(len(load.acknowledged) + 20)
    assert not load.errors, load.errors[:5]
    acked = sorted(acked for *_, acked in load.acknowledged.values())
    pause = max(later - earlier for earlier, later in itertools.pairwise(acked) if later > start)
    print(f"switchover {old} -> {new}: {switched:.1f} s; longest pause between acknowledged posts {pause:.1f} s; "
          f"{dict(load.statuses)}")  # fmt: skip
    assert load.statuses[500] == 0
    assert load.slowest < DEADLINE + SLACK, load.slowest
    assert pause < switched + DEADLINE, (pause, switched)  # the posts wait for the switch, not for long after it
    every_game_once(base, load)
    cluster.wait_healthy(120)
    assert {m["name"]: m["role"] for m in cluster.state()} == {old: "sync_standby", new: "leader"}
