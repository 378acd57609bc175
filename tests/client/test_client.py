"""melo-client against a real server (uvicorn in a subprocess) on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from melo_client import (
    AsyncMelo,
    Conflict,
    Event,
    Forbidden,
    InvalidInput,
    Melo,
    NotFound,
    Retry,
    Side,
    Unauthorized,
    Unavailable,
    game,
)

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.postgres import PostgresServer
from devtools.server import ADMIN_KEY, free_port, live_server
from tests.conftest import module_server

README = Path(__file__).parents[2] / "clients" / "python" / "README.md"


#: One server over each kind of database for the module; each test makes ladders of its own on it.
server = module_server("sqlite", "postgresql")
_slugs = itertools.count()


@pytest.fixture
def slug() -> str:
    return f"pingpong-{next(_slugs)}"


def ladder(base: str, slug: str = "pingpong", **settings) -> str:
    """A new ladder; its write key."""
    with Melo(base, key=ADMIN_KEY) as admin:
        return admin.ladders.create(slug, **settings).write_key


def test_the_readme_quickstart_runs_in_at_most_15_lines(server, slug, capsys):
    (code,) = re.findall(r"## Quickstart\n\n```python\n(.*?)```", README.read_text(), re.S)
    assert len(code.splitlines()) <= 15
    code = code.replace("http://localhost:8000", server).replace("ADMIN_KEY", ADMIN_KEY)
    exec(code.replace('"pingpong"', f'"{slug}"'), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("{'p4': ") and len(lines) == 1 + 6 + 10
    board = [line.split()[1] for line in lines[1:7]]
    assert board[0] == "p0" and board[-1] == "p5" and sorted(board) == ["p0", "p1", "p2", "p3", "p4", "p5"]
    assert lines[-1].split()[:2] == ["p3", "newcomer"]


def test_every_game_form_and_what_a_game_server_reads(server, slug):
    key = ladder(server, slug, seats=["white", "black"])
    with Melo(server, key=key, ladder=slug) as melo:
        single = melo.games.post(winner="ann", loser="bob")
        assert single.id == 1 and not single.replayed
        changes = single.elo_changes
        assert changes["ann"] > 0 > changes["bob"]
        assert changes == {p.key: p.elo_after - p.elo_before for side in single.sides for p in side.players}
        team = melo.games.post(winner=["ann", "cy"], loser=["bob", "dee"])
        assert [[p.key for p in side.players] for side in team.sides] == [["ann", "cy"], ["bob", "dee"]]
        draw = melo.games.post(winner="cy", loser="dee", draw=True)
        assert [side.actual_score for side in draw.sides] == [0.5, 0.5]
        seats = melo.games.post(sides=[Side(["ann"], score=3, seat="white"), {"players": ["dee"], "score": 1}])
        assert seats.sides[0].seat == "white" and seats.sides[0].rank == 1
        free_for_all = melo.games.post(
            sides=[Side(["bob"], rank=2), Side(["cy"], rank=1), Side(["dee"], rank=3)], external_id="round-7"
        )
        assert free_for_all.external_id == "round-7" and sum(s.actual_score for s in free_for_all.sides) == 1
        assert melo.games.void(2, "wrong winner").reason == "wrong winner"
        assert melo.games.get(2).voided_at is not None
        assert [g.id for g in melo.games.list(page_size=2)] == [5, 4, 3, 2, 1]

        pair = melo.predict("ann", "zed")
        assert pair.a_known and not pair.b_known and 0 < pair.probability < 1
        match = melo.predict_match(["ann", ["bob", "cy"], Side(["dee"], seat="black")])
        assert [[p.key for p in side.players] for side in match.sides] == [["ann"], ["bob", "cy"], ["dee"]]
        assert match.sides[2].seat == "black" and len(match.matrix) == 3
        assert sum(match.expected_scores) == pytest.approx(1)
        teams = melo.teams(["ann", "bob", "cy", "dee"], 2)
        assert sorted(p for team_ in teams.teams for p in team_) == ["ann", "bob", "cy", "dee"] and teams.exact
        suggested = melo.opponents("ann", limit=3, purpose="next")
        assert {o.key for o in suggested} <= {"bob", "cy", "dee"}
        assert all(o.if_win > 0 > o.if_lose and o.reason for o in suggested)

        board = list(melo.leaderboard(page_size=2))
        assert [e.rank for e in board] == [1, 2, 3, 4] and {e.key for e in board} == {"ann", "bob", "cy", "dee"}
        assert [e.key for e in melo.around(board[2].key, limit=3)] == [e.key for e in board[1:4]]
        assert [melo.players.get(e.key).rank for e in board] == [1, 2, 3, 4]
        assert melo.players.get("ann").games == 2  # games 1 and 4 (2 is voided)
        # A fresh post names the version it made; reads naming it are never older (wherever the server reads).
        assert single.ladder_version is not None and seats.ladder_version > single.ladder_version
        assert melo.players.get("ann", min_version=seats.ladder_version).ladder_version >= seats.ladder_version
        assert len(list(melo.leaderboard(min_version=seats.ladder_version))) == 4
        renamed = melo.players.rename("ann", "anne", name="Anne")
        assert renamed.key == "anne" and renamed.name == "Anne" and "ann" in renamed.aliases
        melo.games.post(winner="dee-at-home", loser="bob")
        merged = melo.players.merge("dee-at-home", into="dee")
        assert merged.key == "dee" and "dee-at-home" in merged.aliases
        assert melo.ladders.get().seats[0].name == "white"
        paged = [x.slug for x in Melo(server).ladders.list(page_size=1)]  # the module's other tests' ladders too
        assert slug in paged and len(set(paged)) == len(paged) == len(list(Melo(server).ladders.list(page_size=100)))


def test_post_many_goes_through_the_batch_endpoint_in_order(server, slug):
    key = ladder(server, slug)
    games = [game(winner=f"p{n % 9}", loser=f"p{n % 7}x") for n in range(2_500)]
    with Melo(server, key=key, ladder=slug) as melo:
        posted = melo.games.post_many(games, batch_size=1_000)
        assert [g.id for g in posted] == list(range(1, 2_501))
        assert melo.ladders.get().games == 2_500
        # at most 1,000 appearances: batches of 500 two-player games
        assert len(melo.games.post_many(games[:1_200], max_appearances=1_000)) == 1_200


def test_each_problem_is_a_typed_exception_carrying_it(server, slug):
    key = ladder(server, slug)
    with Melo(server, key=key, ladder=slug) as melo:
        with pytest.raises(NotFound) as missing:
            melo.players.get("nobody")
        assert missing.value.problem.status == 404 and "nobody" in missing.value.problem.detail
        with pytest.raises(InvalidInput) as invalid:
            melo.games.post(sides=[Side(["ann"], rank=1)])
        assert invalid.value.errors and invalid.value.errors[0].field.startswith("sides")
        assert invalid.value.errors[0].message
        melo.games.post(winner="ann", loser="bob")
        with pytest.raises(InvalidInput) as itself:
            melo.players.merge("ann", into="ann")
        assert itself.value.errors[0].field == "into"
        with pytest.raises(NotFound):
            melo.predict("ann", "bob", ladder="no-such-ladder")
    with Melo(server, key=ADMIN_KEY) as admin, pytest.raises(Conflict) as taken:
        admin.ladders.create(slug)
    assert taken.value.errors[0].field == "slug"
    with Melo(server, key="mk_wrong", ladder=slug) as stranger, pytest.raises(Unauthorized):
        stranger.games.post(winner="ann", loser="bob")
    with Melo(server, key=key) as writer, pytest.raises(Forbidden):
        writer.ladders.create("another")
    with Melo(server) as anonymous, pytest.raises(ValueError, match="no ladder"):
        anonymous.predict("ann", "bob")


class LoseAnswers(httpx.HTTPTransport):
    """The network between client and server: the first ``n`` answers are lost after the server sent them."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.lost, self.sent = n, []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.sent.append(request.headers.get("idempotency-key"))
        if self.lost:
            self.lost -= 1
            response.read()
            raise httpx.ReadError("connection reset", request=request)
        return response


def test_a_post_whose_answer_was_lost_is_retried_with_the_same_key_and_counts_once(server, slug):
    key = ladder(server, slug)
    network = LoseAnswers(2)
    with Melo(server, key=key, ladder=slug, transport=network, retry=Retry(backoff=0.01)) as melo:
        posted = melo.games.post(winner="ann", loser="bob")
        assert posted.replayed and len(network.sent) == 3 and len(set(network.sent)) == 1
        assert melo.ladders.get().games == 1
        network.lost = 1
        assert len(melo.games.post_many([game(winner="a", loser="b")] * 3)) == 3
        assert melo.ladders.get().games == 4
        network.lost = 1  # a rename is not retried once sent: the caller hears it failed
        with pytest.raises(Unavailable):
            melo.players.rename("ann", "anne")
    with Melo(server, key=key, ladder=slug, retry=Retry(attempts=1)) as melo:
        assert melo.players.get("anne").key == "anne"  # it was done: the answer was lost


def test_retry_after_is_honoured_up_to_its_cap():
    retry = Retry(max_retry_after=10)
    assert retry.wait(0, httpx.Response(503, headers={"Retry-After": "2"})) == 2
    assert retry.wait(0, httpx.Response(429, headers={"Retry-After": "60"})) == 10
    assert 0.125 <= retry.wait(1, httpx.Response(503)) <= 0.5  # no header: backoff 0.25 × 2, with jitter


def test_retries_stop_at_their_count_or_their_time():
    busy = httpx.Response(503, headers={"Retry-After": "1"})
    assert Retry().again(0, 0.0, busy) == 1.0  # seconds the call's tries have failed for
    assert Retry().again(0, 58.5, busy) == 1.0
    assert Retry().again(0, 59.5, busy) == 0.5  # the last wait ends as the minute does
    assert Retry().again(0, 60.0, busy) is None
    assert Retry(within=5).again(3, 4.0, httpx.Response(503, headers={"Retry-After": "30"})) == 1.0
    assert Retry(attempts=3).again(1, 0.0, busy) == 1.0 and Retry(attempts=3).again(2, 0.0, busy) is None
    # Retry-After 1 from a service whose database is failing over: the default tries for a minute, not 5 times.
    waits: list[float] = []
    while (wait := Retry().again(len(waits), sum(waits), busy)) is not None:
        waits.append(wait)
    assert len(waits) == 60 and sum(waits) == 60.0


def _serve(database_url: str, port: int) -> subprocess.Popen:
    env = os.environ | {"MELO_DATABASE_URL": database_url, "MELO_ADMIN_KEY": ADMIN_KEY}
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--log-level", "warning"]
    return subprocess.Popen(cmd, env=env, start_new_session=True)


def _ready(base: str) -> None:
    deadline = time.time() + 30
    with httpx.Client() as http:  # one client: each httpx.get builds a TLS context, ~40 ms of CPU
        while time.time() < deadline:
            try:
                if http.get(base + "/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def test_a_post_retried_across_a_kill_9_and_restart_counts_once(database_url):
    """The server commits the game and is killed with -9 before its answer arrives; the client, with its default
    retries, keeps trying under the same key (connection refused while it is down) and gets the stored answer from
    the restarted server."""
    port = free_port()
    base, procs = f"http://127.0.0.1:{port}", [_serve(database_url, port)]
    try:
        _ready(base)
        key = ladder(base)

        class KillAfterCommit(httpx.HTTPTransport):
            killed = False

            def handle_request(self, request: httpx.Request) -> httpx.Response:
                response = super().handle_request(request)
                if request.method == "POST" and not self.killed:
                    self.killed = True
                    response.read()
                    os.killpg(procs[0].pid, signal.SIGKILL)
                    procs[0].wait()
                    procs.append(_serve(database_url, port))  # back in a few seconds; the client keeps trying
                    raise httpx.RemoteProtocolError("server disconnected", request=request)
                return response

        with Melo(base, key=key, ladder="pingpong", transport=KillAfterCommit()) as melo:
            posted = melo.games.post(winner="ann", loser="bob")
            assert posted.replayed and posted.id == 1
            assert melo.ladders.get().games == 1 and melo.players.get("ann").wins == 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)


def test_the_async_client_does_the_same(server, slug):
    key = ladder(server, slug)

    async def main() -> None:
        async with AsyncMelo(server, key=key, ladder=slug) as melo:
            posted = [await melo.games.post(winner=f"p{n % 3}", loser=f"p{n % 3 + 1}") for n in range(9)]
            assert [g.id for g in posted] == list(range(1, 10))
            many = await melo.games.post_many([game(winner="x", loser="y")] * 5)
            assert len(many) == 5
            board = [entry.key async for entry in melo.leaderboard(page_size=2)]
            assert sorted(board) == ["p0", "p1", "p2", "p3", "x", "y"] and board.index("p0") < board.index("p3")
            assert (await melo.predict("p0", "p3")).probability > 0.5
            with pytest.raises(NotFound):
                await melo.players.get("nobody")
            job = await melo.refits.run(poll=0.2, timeout=120)
            assert job.status == "done" and job.result is not None

    asyncio.run(main())


def test_a_refit_run_and_applied(server, slug):
    key = ladder(server, slug)
    with Melo(server, key=key, ladder=slug) as melo:
        melo.games.post_many([game(winner=f"p{n % 4}", loser=f"p{(n + 1) % 4}") for n in range(40)])
        job = melo.refits.run(poll=0.2, timeout=120, select_k=[1])
        assert job.status == "done"
        assert melo.refits.get(job.id).id == job.id
        assert melo.refits.apply(job.id).refit == job.id


def test_events_follow_a_ladder_across_a_kill_9_and_restart_missing_none(database_url):
    port = free_port()
    base, procs = f"http://127.0.0.1:{port}", [_serve(database_url, port)]
    seen: list[Event] = []

    def listen() -> None:
        with Melo(base, ladder="pingpong", retry=Retry(attempts=100, backoff=0.1, max_backoff=0.3)) as melo:
            for event in melo.events():
                seen.append(event)
                if sum(e.kind == "game" for e in seen) == 6:
                    return

    def until(done, seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        while not done():
            assert time.monotonic() < deadline, seen
            time.sleep(0.02)

    try:
        _ready(base)
        key = ladder(base)
        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        until(lambda: seen)
        with Melo(base, key=key, ladder="pingpong") as melo:
            for n in range(3):
                melo.games.post(winner=f"p{n}", loser=f"p{n + 1}")
        until(lambda: sum(e.kind == "game" for e in seen) == 3)
        os.killpg(procs[0].pid, signal.SIGKILL)
        procs[0].wait()
        procs.append(_serve(database_url, port))
        _ready(base)
        with Melo(base, key=key, ladder="pingpong") as melo:
            for n in range(3):
                melo.games.post(winner=f"q{n}", loser=f"q{n + 1}")
        listener.join(timeout=30)
        assert not listener.is_alive()
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
    games = [e.game for e in seen if e.kind == "game"]
    assert [g.id for g in games if g is not None] == [1, 2, 3, 4, 5, 6]
    assert [e.kind for e in seen].count("hello") == 2  # it reconnected once, after the last event it had
    assert games[3] is not None and games[3].sides[0].players[0].key == "q0"


def test_the_async_client_listens_too(server, slug):
    key = ladder(server, slug)

    async def main() -> None:
        async with AsyncMelo(server, key=key, ladder=slug) as melo:
            stream = melo.events()
            assert (await anext(stream)).kind == "hello"
            await melo.games.post(winner="ann", loser="bob")
            await melo.games.void(1, reason="wrong winner")
            kinds = [(await anext(stream)).kind for _ in range(2)]
            await stream.aclose()
            assert kinds == ["game", "void"]

    asyncio.run(main())


def test_post_many_answers_are_games_made_when_read():
    from melo_client.models import PostedGames

    answers = [({"id": n, "sides": [], "played_at": None}, {"replayed": n == 2}) for n in range(1, 4)]
    posted = PostedGames(answers[:2])
    posted += PostedGames(answers[2:])
    assert len(posted) == 3 and posted._made == {}  # nothing made until read
    assert posted[-1].id == 3 and posted[-1] is posted[2] and posted[1].replayed and not posted[0].replayed
    assert [g.id for g in posted[::2]] == [1, 3] and [g.id for g in posted] == [1, 2, 3]
    with pytest.raises(IndexError):
        posted[3]
    assert posted == list(posted) and posted != list(posted)[:2]


@pytest.mark.serial  # the database is down for 12 s: a busy machine must not stretch the server's restart
def test_the_default_retries_carry_a_game_across_a_database_down_longer_than_a_failover(tmp_path):
    """PostgreSQL is down for 12 s (what a failover with Patroni's defaults takes, docs/scaling.md; the old
    default of 5 tries gave up after about 4 s): the service answers 503 with Retry-After, the client with its
    default retries keeps posting the game under its key, and it counts once when the database is back."""
    database = PostgresServer()
    database.start()
    try:
        url = database.create_database("outage")
        upgrade(Settings(database_url=url).sqlalchemy_url)
        with live_server(url, workers=1) as base:
            key = ladder(base)
            database.crash()
            back = threading.Timer(12.0, database.restart)
            back.start()
            started = time.monotonic()
            try:
                with Melo(base, key=key, ladder="pingpong") as melo:
                    posted = melo.games.post(winner="ann", loser="bob")
                    took = time.monotonic() - started
                    assert took > 10.0 and posted.id == 1, (took, posted)
                    assert melo.ladders.get().games == 1 and melo.players.get("ann").wins == 1
            finally:
                back.join()
    finally:
        database.stop()
