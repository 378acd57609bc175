"""The event stream (``GET …/events``) against a real server: every change once, in commit order, resumable."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest

from app import storage
from app.core.config import Settings
from app.core.db import Database
from app.domain.access import ladder_for_read
from app.events import hub
from app.storage import events
from devtools.server import ADMIN_KEY, LIVE, live_server
from tests.conftest import make_ladder, module_server, serve


class Listener:
    """A client of the stream in a thread of its own, parsing what it reads as (id, event, data)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.events: list[tuple[int | None, str, dict]] = []
        self.status: int | None = None
        self.body = b""
        self.started = threading.Event()
        self.client = httpx.Client(timeout=httpx.Timeout(10, read=60))
        threading.Thread(target=self._read, args=(url, headers or {}), daemon=True).start()
        assert self.started.wait(10), "the stream did not answer"

    def _read(self, url: str, headers: dict[str, str]) -> None:
        try:
            with self.client.stream("GET", url, headers=headers) as response:
                self.status, self.headers = response.status_code, response.headers
                self.socket = response.extensions["network_stream"].get_extra_info("socket")
                if response.status_code != 200:
                    self.body = response.read()
                    return
                self.started.set()
                fields: dict[str, str] = {}
                for line in response.iter_lines():
                    if line:
                        if not line.startswith(":"):
                            name, _, value = line.partition(":")
                            fields[name] = value.removeprefix(" ")
                        continue
                    if "event" in fields:
                        event_id = int(fields["id"]) if "id" in fields else None
                        self.events.append((event_id, fields["event"], json.loads(fields["data"])))
                    fields = {}
        except httpx.HTTPError:  # closed by the test
            pass
        finally:
            self.started.set()

    def wait(self, done: Callable[[list[tuple[int | None, str, dict]]], bool], seconds: float = 5.0) -> list:
        deadline = time.monotonic() + seconds
        while not done(self.events):
            assert time.monotonic() < deadline, f"not seen within {seconds} s: {self.events}"
            time.sleep(0.02)
        return self.events

    def of(self, kind: str) -> list[dict]:
        return [data for _, name, data in self.events if name == kind]

    def close(self) -> None:
        """Hang up (closing the client from another thread would leave the reading thread's socket open)."""
        if self.status == 200:
            with contextlib.suppress(OSError):  # the server ended the stream and the reading thread closed it
                self.socket.shutdown(socket.SHUT_RDWR)
        self.client.close()


#: One server over each kind of database for the module; each test makes a ladder of its own on it.
server = module_server("sqlite", "postgresql")
_slugs = itertools.count()


@pytest.fixture
def slug() -> str:
    return f"live-{next(_slugs)}"


@pytest.fixture
def own_server(database_url) -> Iterator[str]:
    """A server over a fresh database of its own, for a test that prunes every ladder's events."""
    with serve(database_url) as base:
        yield base


def _ladder(base: str, slug: str = "live", **config) -> dict[str, str]:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    r = httpx.post(base + "/v1/ladders", json={"slug": slug, **config}, headers=admin)
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['write_key']}"}


def _game(winner: str, loser: str) -> dict:
    return {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}


@pytest.mark.serial  # the game event within 2 s of its commit
def test_a_listener_sees_each_change_as_it_commits(server, slug):
    key = _ladder(server, slug)
    listener = Listener(server + f"/v1/ladders/{slug}/events")
    try:
        assert listener.status == 200 and listener.headers["content-type"].startswith("text/event-stream")
        hello = listener.wait(lambda seen: seen)[0]
        assert hello[1] == "hello" and hello[2] == {"version": 0}
        posted = httpx.post(server + f"/v1/ladders/{slug}/games", json=_game("ann", "bob"), headers=key).json()
        started = time.monotonic()
        listener.wait(lambda seen: listener.of("game"), seconds=2)  # within 2 s of its commit
        shown = listener.of("game")[0]
        assert time.monotonic() - started < 2
        assert shown["game"] == posted  # the game as the post answered it
        assert shown["version"] == httpx.get(server + f"/v1/ladders/{slug}/leaderboard").json()["ladder_version"]

        assert httpx.patch(server + f"/v1/ladders/{slug}/players/ann", json={"name": "Ann"}, headers=key).is_success
        assert httpx.delete(server + f"/v1/ladders/{slug}/games/1", headers=key).is_success
        assert httpx.post(server + f"/v1/ladders/{slug}/games", json=_game("cy", "dee"), headers=key).is_success
        assert httpx.post(server + f"/v1/ladders/{slug}/players/cy/merge", json={"into": "ann"}, headers=key).is_success
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        assert httpx.patch(server + f"/v1/ladders/{slug}", json={"name": "Live"}, headers=admin).is_success
        seen = listener.wait(lambda seen: [kind for _, kind, _ in seen][-1:] == ["ladder"])
    finally:
        listener.close()
    assert [kind for _, kind, _ in seen] == ["hello", "game", "player", "void", "game", "player", "ladder"]
    assert listener.of("player") == [
        {"version": 2, "action": "updated", "key": "ann"},
        {"version": 5, "action": "merged", "key": "cy", "into": "ann"},
    ]
    voided = listener.of("void")[0]["game"]
    assert voided["id"] == 1 and voided["voided_at"] is not None
    ids = [event_id for event_id, kind, _ in seen if kind != "hello"]
    assert ids == sorted(set(ids))  # increasing, none twice


def test_concurrent_posts_reach_a_listener_once_each_in_commit_order(server, slug):
    """Eight clients post 240 games at once (PostgreSQL: through two workers); the listener gets each game once,
    in the order of the game numbers, which is the order of the commits."""
    key = _ladder(server, slug)
    listener = Listener(server + f"/v1/ladders/{slug}/events")
    n_games = 240

    def post(client_number: int) -> None:
        with httpx.Client(base_url=server, headers=key, timeout=60) as client:
            for n in range(n_games // 8):
                body = _game(f"p{client_number}", f"p{(client_number + 1 + n % 7) % 8}")
                assert client.post(f"/v1/ladders/{slug}/games", json=body).status_code == 201

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(post, range(8)))
        listener.wait(lambda seen: len(listener.of("game")) >= n_games, seconds=10)
        time.sleep(0.6)  # one more look at the log: nothing else comes
    finally:
        listener.close()
    numbers = [data["game"]["id"] for data in listener.of("game")]
    assert numbers == list(range(1, n_games + 1))
    versions = [data["version"] for data in listener.of("game")]
    assert versions == sorted(versions)


def test_a_listener_resumes_after_the_last_event_it_saw(server, slug):
    key = _ladder(server, slug)
    first = Listener(server + f"/v1/ladders/{slug}/events")
    httpx.post(server + f"/v1/ladders/{slug}/games", json=_game("ann", "bob"), headers=key)
    seen = first.wait(lambda seen: len(seen) == 2)
    first.close()
    last_id = seen[-1][0]
    for winner, loser in [("bob", "cy"), ("cy", "ann"), ("ann", "cy")]:  # while it is away
        httpx.post(server + f"/v1/ladders/{slug}/games", json=_game(winner, loser), headers=key)
    for how in ({"headers": {"Last-Event-ID": str(last_id)}}, {"query": f"?after={last_id}"}):
        again = Listener(server + f"/v1/ladders/{slug}/events" + how.get("query", ""), how.get("headers"))
        try:
            seen = again.wait(lambda seen: len(seen) >= 4)
            time.sleep(0.3)
        finally:
            again.close()
        assert seen[0][:2] == (last_id, "hello")  # the resume point stays where it was
        assert [data["game"]["id"] for data in again.of("game")] == [2, 3, 4]


def test_a_resume_point_no_longer_kept_gets_a_reset(own_server, database_url):
    server = own_server
    key = _ladder(server)
    httpx.post(server + "/v1/ladders/live/games", json=_game("ann", "bob"), headers=key)
    kept = Listener(server + "/v1/ladders/live/events?after=0")
    first_id = kept.wait(lambda seen: len(seen) == 2)[1][0]
    kept.close()
    db = Database.from_settings(Settings(database_url=database_url))
    try:
        with db.writing() as session:  # what the writer does to events older than MELO_EVENTS_TTL_HOURS
            assert events.prune(session, before=events.utcnow() + timedelta(seconds=1)) == 1
    finally:
        db.dispose()
    httpx.post(server + "/v1/ladders/live/games", json=_game("bob", "ann"), headers=key)
    for start in (first_id, 10**9):  # pruned, or never given out
        listener = Listener(server + f"/v1/ladders/live/events?after={start}")
        try:
            seen = listener.wait(lambda seen: len(seen) >= 2)
            time.sleep(0.3)
        finally:
            listener.close()
        assert [kind for _, kind, _ in seen] == ["hello", "reset"]
        assert seen[0][0] > first_id  # it goes on from now


def test_private_ladders_need_a_key_and_bad_resume_points_are_422(server, slug):
    key = _ladder(server, slug)
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert httpx.patch(server + f"/v1/ladders/{slug}", json={"private": True}, headers=admin).is_success
    anonymous = httpx.get(server + f"/v1/ladders/{slug}/events")
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"] == "application/problem+json"
    listener = Listener(server + f"/v1/ladders/{slug}/events", key)
    try:
        assert listener.wait(lambda seen: seen)[0][1] == "hello"
    finally:
        listener.close()
    for headers, params in [({"Last-Event-ID": "abc"}, {}), ({}, {"after": "-1"}), ({}, {"after": "x"})]:
        answer = httpx.get(server + f"/v1/ladders/{slug}/events", params=params, headers=key | headers)
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    assert httpx.get(server + "/v1/ladders/nowhere/events").status_code == 404


def test_erasing_a_player_takes_their_key_out_of_the_kept_events(server, slug):
    key = _ladder(server, slug)
    httpx.post(server + f"/v1/ladders/{slug}/players", json={"key": "ann.smith"}, headers=key)
    httpx.post(server + f"/v1/ladders/{slug}/games", json=_game("ann.smith", "bob"), headers=key)
    assert httpx.delete(server + f"/v1/ladders/{slug}/players/ann.smith", headers=key).is_success
    listener = Listener(server + f"/v1/ladders/{slug}/events?after=0")
    try:
        seen = listener.wait(lambda seen: len(seen) == 4)
    finally:
        listener.close()
    assert [kind for _, kind, _ in seen] == ["hello", "player", "game", "player"]
    assert "ann.smith" not in json.dumps(seen)
    assert seen[-1][2]["action"] == "erased"


@pytest.mark.serial  # the server stops within 5 s
def test_streams_are_bounded_and_do_not_hold_the_server_when_it_stops(tmp_path):
    with live_server(f"sqlite:///{tmp_path / 'melo.db'}", env={"MELO_MAX_STREAMS": "2"}) as base:
        _ladder(base)
        listeners = [Listener(base + "/v1/ladders/live/events") for _ in range(2)]
        for listener in listeners:
            listener.wait(lambda seen: seen)
        full = httpx.get(base + "/v1/ladders/live/events")
        assert full.status_code == 503 and full.headers["retry-after"]
        assert httpx.get(base + "/healthz").status_code == 200
        listeners.pop().close()
        time.sleep(0.3)
        listeners.append(Listener(base + "/v1/ladders/live/events"))  # a place again
        assert listeners[-1].status == 200
        process = LIVE[base]
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        assert time.monotonic() - started < 5  # the open streams ended
        for listener in listeners:
            listener.close()


class Pacer:
    """A game every ``every`` seconds on the ladder from another thread, as a busy office or game server posts;
    the numbers of the games posted after :meth:`mark` was called (so committed after what it marks)."""

    def __init__(self, base: str, slug: str, key: dict[str, str], every: float = 1.0) -> None:
        self.url, self.key, self.every = base + f"/v1/ladders/{slug}/games", key, every
        self.stop, self.marked = threading.Event(), threading.Event()
        self.after_mark: list[int] = []
        self.thread = threading.Thread(target=self._post, daemon=True)
        self.thread.start()

    def _post(self) -> None:
        for n in itertools.count():
            marked = self.marked.is_set()
            answer = httpx.post(self.url, json=_game(f"p{n % 5}", f"p{(n + 1) % 5}"), headers=self.key, timeout=60)
            assert answer.status_code == 201, answer.text
            if marked:  # posted after the mark: committed after it
                self.after_mark.append(answer.json()["id"])
            if self.stop.wait(self.every):
                return

    def mark(self) -> None:
        self.marked.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def _ended(listener: Listener, seconds: float) -> bool:
    """Whether the server ended the listener's stream within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if listener.socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                return True
        except BlockingIOError:
            pass
        time.sleep(0.05)
    return False


def _private(base: str, slug: str) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert httpx.patch(base + f"/v1/ladders/{slug}", json={"private": True}, headers=admin).is_success


def _key(base: str, slug: str, role: str = "read", **fields) -> tuple[int, dict[str, str]]:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    made = httpx.post(base + f"/v1/ladders/{slug}/keys", json={"name": role, "role": role, **fields}, headers=admin)
    assert made.status_code == 201, made.text
    return made.json()["id"], {"Authorization": f"Bearer {made.json()['key']}"}


def test_a_stream_ends_before_the_first_game_after_its_key_is_revoked_with_a_game_every_second(server, slug):
    """A read key's listener on a private ladder posted to every second: the revocation is in the log's order,
    so no game committed after it reaches the listener, and the stream ends at once (not at a quiet moment)."""
    key = _ladder(server, slug)
    _private(server, slug)
    key_id, reader = _key(server, slug)
    listener = Listener(server + f"/v1/ladders/{slug}/events", reader)
    pacer = Pacer(server, slug, key)
    try:
        listener.wait(lambda seen: len(listener.of("game")) >= 2)
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        assert httpx.delete(server + f"/v1/ladders/{slug}/keys/{key_id}", headers=admin).status_code == 200
        pacer.mark()
        assert _ended(listener, 3), "the stream went on after its key was revoked"
        time.sleep(2.5)  # games go on being posted
    finally:
        pacer.close()
        listener.close()
    assert len(pacer.after_mark) >= 2
    sent = {data["game"]["id"] for data in listener.of("game")}
    assert not sent & set(pacer.after_mark), "a game committed after the revocation was sent"


def test_a_stream_ends_when_its_ladder_is_made_private_or_its_key_expires(server, slug):
    key = _ladder(server, slug)
    _, reader = _key(server, slug)
    expires = time.monotonic() + 8
    _, expiring = _key(server, slug, expires_at=(events.utcnow() + timedelta(seconds=8)).isoformat())
    anonymous = Listener(server + f"/v1/ladders/{slug}/events")
    keyed, short = (Listener(server + f"/v1/ladders/{slug}/events", headers) for headers in (reader, expiring))
    pacer = Pacer(server, slug, key, every=0.5)
    try:
        anonymous.wait(lambda seen: len(anonymous.of("game")) >= 2)
        _private(server, slug)
        pacer.mark()
        assert _ended(anonymous, 3), "an anonymous stream went on after its ladder was made private"
        assert _ended(short, expires - time.monotonic() + 2), "a stream went on after its key expired"
        assert time.monotonic() > expires - 0.5  # not before
        assert not _ended(keyed, 0.5)  # a key that still reads the private ladder
        assert keyed.wait(lambda seen: [kind for _, kind, _ in seen].count("ladder") == 1)
    finally:
        pacer.close()
        for listener in (anonymous, keyed, short):
            listener.close()
    assert pacer.after_mark
    assert not {data["game"]["id"] for data in anonymous.of("game")} & set(pacer.after_mark)


def test_superscript_and_overlong_last_event_ids_are_422_even_without_a_key(server, slug):
    """``"²".isdigit()`` is true and ``int("²")`` raises: such a header was a 500, before any key check."""
    _ladder(server, slug)
    _private(server, slug)
    for value in (b"\xb2", b"\xb9", b"\xb3", b"1\xb2", b"1" * 5000, b"", b"1 1", b"-1"):
        answer = httpx.get(server + f"/v1/ladders/{slug}/events", headers={"Last-Event-ID": value})
        assert answer.status_code == 422, (value[:10], answer.status_code, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"


def test_each_ladder_numbers_its_own_events(server, slug):
    """A ladder's event ids say nothing of the other ladders' traffic: a new ladder starts at 0, whatever the
    server has seen."""
    busy = _ladder(server, slug + "-busy")
    for n in range(5):
        httpx.post(server + f"/v1/ladders/{slug}-busy/games", json=_game(f"a{n}", f"b{n}"), headers=busy)
    key = _ladder(server, slug)
    listener = Listener(server + f"/v1/ladders/{slug}/events")
    try:
        assert listener.wait(lambda seen: seen)[0][:2] == (0, "hello")
        httpx.post(server + f"/v1/ladders/{slug}/games", json=_game("ann", "bob"), headers=key)
        seen = listener.wait(lambda seen: listener.of("game"))
    finally:
        listener.close()
    assert [(event_id, kind) for event_id, kind, _ in seen] == [(0, "hello"), (1, "game")]


def test_a_resume_more_than_the_catch_up_bound_behind_gets_a_reset(server, slug):
    """Catching up from the log is bounded (``CATCH_UP`` events): further back, a listener reads the ladder
    anew, rather than each of many listeners replaying the log on its own.  Exactly CATCH_UP back is caught up.
    (No auto refit: its event, landing after ``head`` was read, made the resume at the bound one too far.)"""
    key = _ladder(server, slug, k=1, auto_refit=False)
    url = server + f"/v1/ladders/{slug}/games/batch"
    for start in range(0, hub.CATCH_UP + 1, 1000):
        games = [_game(f"p{n % 40}", f"p{(n + 1 + n // 40 % 39) % 40}") for n in range(start, start + 1000)]
        assert httpx.post(url, json={"games": games}, headers=key, timeout=120).status_code == 201
    latest = Listener(server + f"/v1/ladders/{slug}/events")
    head = latest.wait(lambda seen: seen)[0][0]
    latest.close()
    for after, expected in ((0, ["hello", "reset"]), (head - hub.CATCH_UP - 1, ["hello", "reset"])):
        listener = Listener(server + f"/v1/ladders/{slug}/events?after={after}")
        try:
            seen = listener.wait(lambda seen: len(seen) >= 2)
            time.sleep(0.3)
        finally:
            listener.close()
        assert [kind for _, kind, _ in seen] == expected and seen[0][0] == head
    at_the_bound = Listener(server + f"/v1/ladders/{slug}/events?after={head - hub.CATCH_UP}")
    try:
        seen = at_the_bound.wait(lambda seen: len(seen) >= 2)
        assert [(event_id, kind) for event_id, kind, _ in seen[:2]] == [
            (head - hub.CATCH_UP, "hello"),
            (head - hub.CATCH_UP + 1, "game"),
        ]
    finally:
        at_the_bound.close()
    near = Listener(server + f"/v1/ladders/{slug}/events?after={head - 1200}")  # within the bound: every game
    try:
        near.wait(lambda seen: len(near.of("game")) == 1200, seconds=20)
    finally:
        near.close()
    assert [event_id for event_id, kind, _ in near.events if kind == "game"] == list(range(head - 1199, head + 1))


def test_hello_carries_the_version_where_the_stream_starts_not_the_requests(settings, client):
    """A stream's answer goes out (its headers: a page shows itself live) before the stream reads where it starts,
    and the request read the ladder's version before that: a game committed in between is in neither the
    listener's reads nor the stream.  ``hello`` carries the version at the stream's start, so the listener knows
    to read the ladder again; here the request's version is older than the two games already posted."""
    h = {"Authorization": f"Bearer {make_ladder(client, 'race', k=1)}"}
    for winner, loser in [("a", "b"), ("c", "d")]:
        assert client.post("/v1/ladders/race/games", json=_game(winner, loser), headers=h).status_code == 201
    db = Database.from_settings(settings)
    with db.reading() as session:
        ladder_id = ladder_for_read(session, "race", fresh=True).id
        version = storage.ladders.version(session, ladder_id)

    async def first_frame() -> bytes:
        async def access() -> float:
            return float("inf")

        async def receive() -> dict:
            await asyncio.sleep(3600)
            return {}

        stream = hub.Hub(db, 1).stream(ladder_id, 0, None, access, receive)
        try:
            return await anext(stream)
        finally:
            await stream.aclose()

    try:
        text = asyncio.run(first_frame()).decode()
    finally:
        db.dispose()
    hello = json.loads(text.split("data: ", 1)[1].split("\n", 1)[0])
    assert "event: hello" in text and hello["version"] == version > 0, text
