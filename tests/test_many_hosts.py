"""Two hosts over one PostgreSQL database, through PgBouncer, behind HAProxy: posts and reads spread over both, and
one host killed (kill -9) under load: every acknowledged game kept, each applied once, the other host serving."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.haproxy import HAPROXY, binary
from devtools.server import ADMIN_KEY, free_port, wait_up
from tests.api.helpers import all_games, idempotent_game, start


@pytest.fixture
def haproxy_config() -> str:
    found = binary()
    if found is None:
        pytest.skip("HAProxy is not installed: scripts/ensure-postgres.sh installs Debian's package (make test does)")
    return found


def test_two_hosts_behind_a_load_balancer_lose_nothing_when_one_is_killed(postgres, pgbouncer, haproxy_config):
    postgres.create_database("hosts")
    upgrade(Settings(database_url=postgres.url("hosts")).sqlalchemy_url)
    url = pgbouncer.url("hosts")
    (a, base_a), (b, base_b) = start(url, 1), start(url, 1)
    folder = Path(tempfile.mkdtemp(prefix="melo-haproxy-"))
    port = free_port()
    ports = {"a": base_a.rsplit(":", 1)[1], "b": base_b.rsplit(":", 1)[1]}
    (folder / "haproxy.cfg").write_text(HAPROXY.format(port=port, **ports))
    balancer = subprocess.Popen([haproxy_config, "-db", "-f", str(folder / "haproxy.cfg")], stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(base, "HAProxy")
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = httpx.post(base + "/v1/ladders", json={"slug": "crash"}, headers=admin).json()["write_key"]
        headers = {"Authorization": f"Bearer {key}"}
        acknowledged: dict[str, int] = {}
        served_by: Counter[str] = Counter()
        reads: dict[str, list[int]] = {base_a: [], base_b: []}
        errors: list[str] = []  # what went wrong in a thread, asserted on below
        stop, killed, lock = threading.Event(), threading.Event(), threading.Lock()

        def poster(c: int) -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
                n = 0
                while not stop.is_set():
                    idem, deadline = f"c{c}-{n}", time.monotonic() + 30
                    while True:  # a client retries with the same key until it is told the game is in
                        if time.monotonic() > deadline:
                            errors.append(f"{idem}: never acknowledged")
                            return
                        try:
                            r = http.post(
                                "/v1/ladders/crash/games", json=idempotent_game(idem), headers={"Idempotency-Key": idem}
                            )
                        except httpx.TransportError:
                            continue
                        if r.status_code == 201:
                            with lock:
                                acknowledged[idem] = r.json()["id"]
                                served_by[r.headers["x-melo-host"]] += 1
                            break
                        if r.status_code not in (502, 503):
                            errors.append(f"{idem}: {r.status_code} {r.text}")
                            return
                        time.sleep(0.05)
                    n += 1

        def reader(host: str) -> None:
            with httpx.Client(base_url=host, timeout=30) as http:
                while not stop.is_set():
                    try:
                        reads[host].append(http.get("/v1/ladders/crash/leaderboard").status_code)
                    except httpx.TransportError:
                        if host == base_b or not killed.is_set():
                            errors.append(f"{host} stopped answering")
                        return
                    time.sleep(0.02)

        threads = [threading.Thread(target=poster, args=(c,)) for c in range(8)]
        threads += [threading.Thread(target=reader, args=(host,)) for host in reads]
        for t in threads:
            t.start()
        time.sleep(2.0)
        before = dict(served_by)
        killed.set()
        os.killpg(a.pid, signal.SIGKILL)
        a.wait()
        time.sleep(2.0)
        stop.set()
        for t in threads:
            t.join()

        # Posts went to both hosts, and on to the one left standing; reads answered on both, throughout on b.
        assert not errors, errors[:5]
        assert before.get("a", 0) > 0 and before.get("b", 0) > 0, before
        assert served_by["b"] > before["b"], served_by
        assert reads[base_a] and set(reads[base_a]) == {200}
        assert reads[base_b] and set(reads[base_b]) == {200}
        with httpx.Client(base_url=base_b, headers=headers, timeout=30) as http:
            stored = [g["id"] for g in all_games(http)]
            assert len(stored) == len(set(stored)) == len(acknowledged)  # each once, none lost
            assert set(acknowledged.values()) == set(stored)
            assert http.get("/v1/ladders/crash/audit").json()["consistent"]
    finally:
        balancer.terminate()
        balancer.wait(10)
        for proc in (a, b):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
