"""Liveness and readiness: /healthz never waits for the database, /readyz says whether it answers."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import anyio.to_thread
import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.http.middleware import Deadlines
from app.main import create_app
from devtools.postgres import PostgresServer
from devtools.server import ADMIN_KEY, free_port, live_server
from tests.conftest import bearer


def test_health_and_readiness(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}


@pytest.mark.serial  # a 503 within 10 s
def test_a_stopped_database_is_not_ready_but_the_process_is_alive():
    server = PostgresServer()
    server.start()
    try:
        settings = Settings(database_url=server.create_database("health"), migrate_on_start=False)
        upgrade(settings.sqlalchemy_url)
        with TestClient(create_app(settings)) as client:
            assert client.get("/readyz").status_code == 200
            server.stop()
            start = time.monotonic()
            r = client.get("/readyz")
            assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json", r.text
            assert client.get("/healthz").status_code == 200
            assert time.monotonic() - start < 10
            # Requests that need the database fail fast with a 503 problem, not a 500.
            r = client.get("/v1/ladders/any/predict?a=x&b=y")
            assert r.status_code == 503 and r.json()["status"] == 503, r.text
    finally:
        server.stop()


def test_liveness_does_not_wait_for_the_thread_pool(client):
    """With every thread of the pool taken (say by slow ladder-wide reads), /healthz still answers at once."""
    held = anyio.Event()
    release = anyio.Event()

    async def hold_every_thread() -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        tokens = [object() for _ in range(int(limiter.total_tokens))]
        for token in tokens:
            await limiter.acquire_on_behalf_of(token)
        held.set()
        await release.wait()
        for token in tokens:
            limiter.release_on_behalf_of(token)

    client.portal.start_task_soon(hold_every_thread)
    client.portal.call(held.wait)
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(client.get, "/healthz")
        try:
            assert answer.result(timeout=2).status_code == 200  # a sync endpoint would wait for a free thread
        finally:
            client.portal.call(release.set)


def test_security_headers(client):
    page = client.get("/")
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["x-frame-options"] == "DENY"
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in docs.text and "cdn" not in docs.text
    assert client.get("/docs-assets/swagger-ui-bundle.js").status_code == 200
    api = client.get("/v1/ladders")
    assert api.headers["x-content-type-options"] == "nosniff" and "content-security-policy" not in api.headers


def test_sqlite_durability_is_configurable(tmp_path):
    for level, code in (("NORMAL", 1), ("FULL", 2)):
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'd.db'}", sqlite_synchronous=level)
        db = Database.from_settings(settings)
        with db.writing() as session:
            assert session.connection().exec_driver_sql("PRAGMA synchronous").scalar() == code
        db.dispose()


def test_request_deadlines_expire_in_order_with_one_timer():
    async def run() -> None:
        deadlines, expired = Deadlines(0.3), []
        deadlines.start("a", lambda: expired.append("a"))
        await asyncio.sleep(0.2)
        for key in "bc":
            deadlines.start(key, lambda key=key: expired.append(key))
        deadlines.done("c")  # answered in time
        await asyncio.sleep(0.2)  # a is due, b not yet
        assert expired == ["a"] and deadlines.timer is not None
        await asyncio.sleep(0.2)
        assert expired == ["a", "b"] and not deadlines.pending and deadlines.timer is None

    asyncio.run(run())


@pytest.mark.serial  # 503s within 4 s, /healthz within 1 s
def test_a_frozen_database_gives_prompt_503s_and_the_server_recovers_by_itself():
    server = PostgresServer()
    server.start()
    try:
        url = server.create_database("frozen")
        upgrade(Settings(database_url=url).sqlalchemy_url)
        game = {"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}
        with live_server(url, env={"MELO_REQUEST_TIMEOUT": "2"}) as base:
            admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
            key = httpx.post(base + "/v1/ladders", json={"slug": "test"}, headers=admin).json()["write_key"]
            h = bearer(key)
            assert httpx.post(base + "/v1/ladders/test/games", json=game, headers=h).status_code == 201
            server.freeze()
            try:
                for method, path in [
                    ("GET", "/v1/ladders/test/leaderboard"),
                    ("GET", "/v1/ladders/test"),
                    ("GET", "/v1/ladders/test/predict?a=a&b=b"),
                    ("POST", "/v1/ladders/test/games"),
                ]:
                    start = time.monotonic()
                    r = httpx.request(
                        method, base + path, json=game, headers=h | {"Idempotency-Key": "late"}, timeout=30
                    )
                    assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json", r.text
                    assert r.headers["retry-after"] and time.monotonic() - start < 4, path
                start = time.monotonic()
                assert httpx.get(base + "/healthz").status_code == 200 and time.monotonic() - start < 1
                assert httpx.get(base + "/readyz", timeout=30).status_code == 503 and time.monotonic() - start < 4
            finally:
                server.freeze(False)
            deadline = time.monotonic() + 30
            while httpx.get(base + "/readyz").status_code != 200:  # no restart: the pools reconnect by themselves
                assert time.monotonic() < deadline
                time.sleep(0.2)
            # The post that got a 503 may still have been applied: its retry with the same key answers once.
            retry = httpx.post(base + "/v1/ladders/test/games", json=game, headers=h | {"Idempotency-Key": "late"})
            assert retry.status_code == 201
            assert httpx.get(base + "/v1/ladders/test").json()["games"] == 2
            assert httpx.get(base + "/v1/ladders/test/audit").json()["consistent"]
    finally:
        server.stop()


def test_a_wrong_method_is_405_with_the_allowed_ones(client):
    r = client.put("/v1/ladders")
    assert r.status_code == 405 and r.headers["content-type"] == "application/problem+json"
    assert set(r.headers["allow"].split(", ")) >= {"GET", "POST"}
    r = client.post("/v1/ladders/test/games/1")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) >= {"GET", "DELETE"}


def test_a_bug_answers_500_problem_and_keeps_the_connection(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'm.db'}")
    app = create_app(settings)

    def boom() -> None:  # a bug in some route
        raise RuntimeError("a bug")

    app.add_api_route("/boom", boom)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for path, status in [("/boom", 500), ("/healthz", 200), ("/boom", 500)]:  # one connection throughout
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
            assert response.status == status, body
            if status == 500:
                assert response.getheader("content-type") == "application/problem+json"
                assert json.loads(body)["title"] == "Internal server error" and b"a bug" not in body
        connection.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_liveness_answered_at_the_edge_is_the_documented_answer(client):
    """GET /healthz is answered by the outer middleware without routing; it is the answer the OpenAPI document
    describes, with the headers every response has, and it is counted in the metrics like any request."""
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert r.headers["content-type"] == "application/json" and r.headers["x-frame-options"] == "DENY"
    assert "/healthz" in client.get("/openapi.json").json()["paths"]
    assert client.post("/healthz").status_code == 405  # other methods are routed as usual
    metrics = client.get("/metrics").text
    assert 'melo_requests_total{method="GET",route="/healthz",status="200"}' in metrics


def test_every_problem_type_is_a_page_of_this_service(client):
    from app.core.errors import EXPLAINED

    answers = [
        client.get("/v1/ladders/nowhere"),
        client.get("/nowhere"),
        client.post("/v1/ladders", json={"slug": "x"}),
        client.post("/v1/ladders", json={"slug": 5}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}),
        client.put("/v1/ladders"),
    ]
    for r in answers:
        kind = r.json()["type"]
        assert kind.startswith("/problems/") and kind.removeprefix("/problems/") in EXPLAINED, kind
        page = client.get(kind)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), kind
        assert "What to do" in page.text and r.json()["title"].split()[0] in page.text
    assert {r.status_code for r in answers} == {401, 404, 405, 422}
    assert client.get("/problems/nothing-like-it").status_code == 404


def test_a_body_that_does_not_arrive_in_time_is_a_408_and_changes_nothing(tmp_path):
    """A client that declares a body and sends a part of it is answered 408 at the deadline, its connection
    closed (the server was not slow: a 503 would tell it to retry the same way); the others are served meanwhile."""
    with live_server(f"sqlite:///{tmp_path / 'slow.db'}", env={"MELO_REQUEST_TIMEOUT": "3"}) as base:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = httpx.post(base + "/v1/ladders", json={"slug": "test"}, headers=admin).json()["write_key"]
        body = json.dumps({"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}).encode()
        slow = http.client.HTTPConnection(*base.removeprefix("http://").split(":"), timeout=10)
        slow.putrequest("POST", "/v1/ladders/test/games")
        for name, value in {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                            "Content-Length": str(len(body))}.items():  # fmt: skip
            slow.putheader(name, value)
        slow.endheaders(body[:10])
        start = time.monotonic()
        assert httpx.get(base + "/v1/ladders/test").status_code == 200  # served while the slow body waits
        r = slow.getresponse()
        answered = json.loads(r.read())
        assert r.status == 408 and r.getheader("Content-Type") == "application/problem+json", answered
        assert answered["type"] == "/problems/request-timeout" and 2.5 < time.monotonic() - start < 6
        assert r.getheader("Connection") == "close"
        assert httpx.get(base + "/v1/ladders/test").json()["games"] == 0
        slow.close()
