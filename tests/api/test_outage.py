"""PostgreSQL frozen, then crashed, under load: prompt 503s, recovery without a restart, nothing acknowledged lost."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.pgbouncer import PgBouncer
from devtools.pgbouncer import installed as pgbouncer_installed
from devtools.postgres import PostgresServer
from devtools.server import ADMIN_KEY, live_server
from tests.api.helpers import all_games, idempotent_game

pytestmark = pytest.mark.serial  # failures within the deadline + 2 s, /healthz within 1 s, during an outage

#: The request deadline the server is given (MELO_REQUEST_TIMEOUT), and how long each outage lasts.
DEADLINE, OUTAGE = 2.0, 3.0


@pytest.mark.parametrize("through", ["direct", "pgbouncer"])
def test_an_outage_under_load_fails_fast_and_loses_nothing(through):
    if through == "pgbouncer" and not pgbouncer_installed():
        pytest.skip("PgBouncer is not installed: scripts/ensure-postgres.sh installs Debian's package (make test does)")
    server = PostgresServer()
    server.start()
    pooler = PgBouncer(server) if through == "pgbouncer" else None
    try:
        url = server.create_database("outage")
        upgrade(Settings(database_url=url).sqlalchemy_url)
        if pooler is not None:  # the database stops behind the pooler, which stays up
            pooler.start()
            url = pooler.url("outage")
        with live_server(url, workers=2, env={"MELO_REQUEST_TIMEOUT": str(DEADLINE)}) as base:
            admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
            key = httpx.post(base + "/v1/ladders", json={"slug": "crash"}, headers=admin).json()["write_key"]
            headers = {"Authorization": f"Bearer {key}"}
            outcomes: list[tuple[str, str, int, float, object]] = []  # phase, key, status, seconds, id or problem
            health: list[tuple[int, float]] = []
            phase = ["healthy"]
            stop = threading.Event()

            def client(c: int) -> None:
                with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
                    n = 0
                    while not stop.is_set():
                        idem, at = f"c{c}-{n}", time.monotonic()
                        r = http.post(
                            "/v1/ladders/crash/games", json=idempotent_game(idem), headers={"Idempotency-Key": idem}
                        )
                        seconds = time.monotonic() - at
                        if r.status_code == 201:
                            answer: object = r.json()["id"]
                        else:  # what the client was told: (content type, Retry-After)
                            answer = (r.headers["content-type"], r.headers.get("retry-after"))
                        outcomes.append((phase[0], idem, r.status_code, seconds, answer))
                        n += 1

            def liveness() -> None:
                with httpx.Client(base_url=base, timeout=30) as http:
                    while not stop.is_set():
                        at = time.monotonic()
                        status = http.get("/healthz").status_code
                        health.append((status, time.monotonic() - at))
                        time.sleep(0.05)

            def ready_again() -> float:
                start = time.monotonic()
                while httpx.get(base + "/readyz", timeout=30).status_code != 200:
                    assert time.monotonic() - start < 30, "no recovery without a restart"
                    time.sleep(0.1)
                return time.monotonic() - start

            threads = [threading.Thread(target=client, args=(c,)) for c in range(6)]
            threads.append(threading.Thread(target=liveness))
            for t in threads:
                t.start()
            try:
                time.sleep(1.0)
                phase[0] = "frozen"
                server.freeze()
                time.sleep(OUTAGE)
                assert httpx.get(base + "/readyz", timeout=30).status_code == 503
                server.freeze(False)
                phase[0] = "thawed"
                thawed_after = ready_again()
                time.sleep(1.0)
                phase[0] = "crashed"
                server.crash()
                time.sleep(OUTAGE)
                assert httpx.get(base + "/readyz", timeout=30).status_code == 503
                server.restart()
                phase[0] = "restarted"
                restarted_after = ready_again()
                time.sleep(1.0)
            finally:
                stop.set()
                for t in threads:
                    t.join()

            assert {o[2] for o in outcomes} <= {201, 503}, {o[2] for o in outcomes}
            failed = [o for o in outcomes if o[2] == 503]
            assert all(kind == "application/problem+json" and retry for _, _, _, _, (kind, retry) in failed)
            by_phase = {p: {o[2] for o in outcomes if o[0] == p} for p in ("healthy", "frozen", "crashed", "restarted")}
            assert 503 in by_phase["frozen"] and 503 in by_phase["crashed"], by_phase
            assert 201 in by_phase["healthy"] and 201 in by_phase["restarted"], by_phase
            slowest_failure = max(o[3] for o in failed)
            assert slowest_failure < DEADLINE + 2.0, slowest_failure
            worst_health = max(seconds for _, seconds in health)
            assert {status for status, _ in health} == {200} and worst_health < 1.0, worst_health

            # Nothing acknowledged was lost, and retrying every request sent applies each once.
            acknowledged = {o[1]: o[4] for o in outcomes if o[2] == 201}
            with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
                stored = {g["id"] for g in all_games(http, "crash")}
                assert set(acknowledged.values()) <= stored

                def retry(idem: str) -> int:
                    r = http.post(
                        "/v1/ladders/crash/games", json=idempotent_game(idem), headers={"Idempotency-Key": idem}
                    )
                    assert r.status_code == 201, r.text
                    return r.json()["id"]

                sent = [o[1] for o in outcomes]
                with ThreadPoolExecutor(6) as pool:
                    ids = dict(zip(sent, pool.map(retry, sent), strict=True))
                assert all(ids[idem] == game_id for idem, game_id in acknowledged.items())
                assert len(all_games(http, "crash")) == len(set(ids.values())) == len(sent)
                assert http.get("/v1/ladders/crash/audit").json()["consistent"]
            print(
                f"{len(outcomes)} posts, {len(acknowledged)} acknowledged, {len(failed)} got 503 "
                f"(slowest {slowest_failure:.2f} s), ready {thawed_after:.1f} s after the thaw and "
                f"{restarted_after:.1f} s after the restart, /healthz worst {worst_health * 1000:.0f} ms, "
                f"{len(sent) - len(stored)} applied only by the retry"
            )
    finally:
        if pooler is not None:
            pooler.stop()
        server.stop()
