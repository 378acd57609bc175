"""Replays of the log (a void, a merge, an applied refit) racing game commits on a ladder with seats.

A replay locks every player row, reads the log and the learned seats, replays and writes them back.  Two
interleavings broke ``/audit`` on PostgreSQL (SQLite's single writer cannot interleave), both seen under load
and forced one at a time below:

* a seated game between two players new to the ladder holds none of the rows the replay locked: it read the
  seats and committed while the replay ran, and the replay then wrote the seats over its step;
* a void read its game (its members, its seats' state before it) before it waited for the locks of a merge
  whose replay rewrote that state, and replayed from what it had read.

Last, not a race: a void below an applied checkpoint left the players its replay does not reach with the
superseded checkpoint's vectors.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from app import storage
from app.analysis import refit_apply, refit_views
from app.core.db import Database
from app.domain.access import Caller, ladder_for_read
from app.games.intake import Post, request_hash
from app.games.posts import apply_posts
from app.games.schemas import GameIn
from app.games.voiding import void_game
from app.players import changes as player_changes
from app.players.changes import merge_players
from devtools.server import ADMIN_KEY
from tests.api.helpers import post_all, wait
from tests.conftest import bearer, make_ladder

#: Seconds of load: before the fix, PostgreSQL's audit went inconsistent within the first two seconds (3 of 3
#: runs of 10 s).
SECONDS = float(os.environ.get("MELO_RACE_SECONDS", "10"))
POOL = 16


def seated(white: str, black: str, rank: int) -> dict:
    return {
        "sides": [
            {"players": [white], "rank": rank, "seat": "white"},
            {"players": [black], "rank": 3 - rank, "seat": "black"},
        ]
    }


def test_voids_merges_and_refits_racing_seated_games_keep_the_audit_exact(server):
    """Five clients post seated games with Idempotency-Keys (every third between two new players), one voids
    recent games, one merges the new players into old ones, one starts refits and applies them, one reads
    ``/audit`` all along: every audit is exact."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    r = httpx.post(
        server + "/v1/ladders", json={"slug": "race", "k": 1, "seats": ["white", "black"], "seed": 1}, headers=admin
    )
    assert r.status_code == 201, r.text
    headers = {"Authorization": f"Bearer {r.json()['write_key']}"}
    rng = random.Random(0)
    seed = [seated(*rng.sample([f"p{i}" for i in range(POOL)], 2), rng.choice([1, 2])) for _ in range(300)]
    with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
        r = http.post("/v1/ladders/race/games/batch", json={"games": seed})
        assert r.status_code == 201, r.text
        acked = [g["id"] for g in r.json()["games"]]

    stop = threading.Event()
    lock = threading.Lock()
    fresh: list[str] = []  # players created by games between two new players: the merges' sources
    counts = {"posted": 0, "voided": 0, "merged": 0, "merge_409": 0, "applied": 0, "apply_409": 0, "audits": 0}
    bad: list[dict] = []
    errors: list[str] = []

    def poster(c: int) -> None:
        local = random.Random(c)
        with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
            n = 0
            while not stop.is_set():
                n += 1
                new = n % 3 == 0  # a game between two players new to the ladder
                pair = [f"n{c}-{n}a", f"n{c}-{n}b"] if new else local.sample([f"p{i}" for i in range(POOL)], 2)
                body = seated(*pair, local.choice([1, 2]))
                r = http.post("/v1/ladders/race/games", json=body, headers={"Idempotency-Key": f"c{c}-{n}"})
                if r.status_code != 201:
                    errors.append(f"post {r.status_code} {r.text}")
                    continue
                with lock:
                    acked.append(r.json()["id"])
                    counts["posted"] += 1
                    if new:
                        fresh.extend(pair)

    def voider() -> None:
        local = random.Random(100)
        with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
            while not stop.is_set():
                with lock:
                    game_id = acked.pop(len(acked) - 1 - local.randrange(min(len(acked), 200)))
                r = http.delete(f"/v1/ladders/race/games/{game_id}")
                if r.status_code != 200:
                    errors.append(f"void {r.status_code} {r.text}")
                with lock:
                    counts["voided"] += 1
                time.sleep(0.05)

    def merger() -> None:
        local = random.Random(200)
        with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
            while not stop.is_set():
                with lock:
                    source = fresh.pop(local.randrange(len(fresh))) if fresh else None
                if source is None:
                    time.sleep(0.01)
                    continue
                r = http.post(f"/v1/ladders/race/players/{source}/merge", json={"into": f"p{local.randrange(POOL)}"})
                with lock:
                    counts["merged" if r.status_code == 200 else "merge_409"] += 1
                if r.status_code not in (200, 409):
                    errors.append(f"merge {r.status_code} {r.text}")
                time.sleep(0.05)

    def refitter() -> None:
        with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
            while not stop.is_set():
                r = http.post("/v1/ladders/race/refits", json={"restarts": 1, "holdout": 0})
                if r.status_code != 202:
                    time.sleep(0.2)
                    continue
                while not stop.is_set():
                    job = http.get(r.headers["Location"]).json()
                    if job["status"] not in ("queued", "running"):
                        break
                    time.sleep(0.1)
                if job["status"] == "done":
                    a = http.post(f"/v1/ladders/race/refits/{job['id']}/apply")
                    with lock:
                        counts["applied" if a.status_code == 200 else "apply_409"] += 1

    def auditor() -> None:
        with httpx.Client(base_url=server, timeout=60) as http:
            while not stop.is_set():
                audit = http.get("/v1/ladders/race/audit").json()
                with lock:
                    counts["audits"] += 1
                if not audit["consistent"]:
                    bad.append(audit)
                time.sleep(0.05)

    threads = [threading.Thread(target=poster, args=(c,)) for c in range(5)]
    threads += [threading.Thread(target=f) for f in (voider, merger, refitter, auditor)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join()
    final = httpx.get(server + "/v1/ladders/race/audit").json()
    print(counts, final, bad[:3])
    assert not errors, errors[:5]
    assert final["consistent"] and not bad, (final, bad[:3])


# --- The exact interleavings, forced with pauses in the service code (in-process, one Database per side) ---


class Run(threading.Thread):
    """``work()`` in a thread of this name, keeping what it raised."""

    def __init__(self, work: Callable[[], object], name: str = "") -> None:
        super().__init__(name=name or None)
        self.work, self.error = work, None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        self.join(30)
        assert not self.is_alive(), f"{self.name} is stuck"
        if self.error is not None:
            raise self.error


def _seated_ladder(client, settings, n: int = 40):
    key = make_ladder(client, "race", k=1, seed=3, seats=["white", "black"])
    rng = random.Random(1)
    ids = post_all(client, "race", key, [seated(*rng.sample(["p0", "p1", "p2", "p3", "p4"], 2), 1) for _ in range(n)])
    return key, ids, Database.from_settings(settings)


def _post(db: Database, key: str, white: str, black: str) -> None:
    game = GameIn.model_validate(seated(white, black, 1))
    outcome = db.write(lambda s: apply_posts(s, [Post("race", Caller(key), [game], None, request_hash(game), False)]))
    assert isinstance(outcome.outcomes[0], dict), outcome.outcomes


def _void(db: Database, game_id: int) -> None:
    db.write(lambda s: void_game(s, ladder_for_read(s, "race", fresh=True), game_id, "test", None))


def _merge(db: Database, key: str, into: str) -> None:
    db.write(lambda s: merge_players(s, ladder_for_read(s, "race", fresh=True), key, into))


def _apply(db: Database, refit_id: int) -> None:
    def work(session):
        ladder = ladder_for_read(session, "race", fresh=True)
        refit_apply.apply_refit(session, ladder, refit_views.get_refit(session, ladder, refit_id))

    db.write(work)


@pytest.mark.parametrize("replay", ["void", "merge", "apply"])
def test_a_game_of_new_players_committed_during_a_replay_is_not_lost(client, settings, monkeypatch, replay):
    """The replay (of a void, a merge, an applied refit) has read the log and the seats; a seated game between
    two players new to the ladder, whom the replay's lock on every player row cannot hold back, commits
    meanwhile: the replay must not write the seats over its step."""
    key, ids, db = _seated_ladder(client, settings)
    if replay == "merge":
        post_all(client, "race", key, [seated("dup", "p9", 1), seated("p8", "dup", 2)])
        work = lambda: _merge(db, "dup", "p0")  # noqa: E731
    elif replay == "apply":
        r = client.post("/v1/ladders/race/refits", json={"restarts": 1, "holdout": 0}, headers=bearer(key))
        job = wait(client, r.headers["Location"])
        post_all(client, "race", key, [seated("p1", "p2", 1), seated("p3", "p1", 2)])  # replayed on top
        work = lambda: _apply(db, job["id"])  # noqa: E731
    else:
        work = lambda: _void(db, ids[20])  # noqa: E731
    read, go = threading.Event(), threading.Event()

    def pausing(real):
        def read_then_pause(*args, **kwargs):
            found = real(*args, **kwargs)
            if threading.current_thread().name == "replaying":
                read.set()
                go.wait(10)
            return found

        return read_then_pause

    monkeypatch.setattr(storage.log, "read_tail", pausing(storage.log.read_tail))  # voids and merges
    monkeypatch.setattr(storage.log, "read", pausing(storage.log.read))  # applied refits
    replaying = Run(work, name="replaying")
    replaying.start()
    assert read.wait(10)
    posting = Run(lambda: _post(db, key, "new-a", "new-b"))
    posting.start()
    posting.join(1.0)  # it committed at once while the replay did not hold the ladder's row; now it waits
    go.set()
    replaying.finish()
    posting.finish()
    db.dispose()
    audit = client.get("/v1/ladders/race/audit").json()
    assert audit["consistent"] and audit["max_abs_diff"] == 0.0, audit
    assert audit["games"] == {"void": 40 - 1, "merge": 40 + 2, "apply": 40 + 2}[replay] + 1


def test_a_void_reads_its_game_after_a_concurrent_merge_rewrote_it(client, settings, monkeypatch):
    """A merge replays the games after its player's first one (on a ladder with seats: all of them), rewriting
    the seat state recorded with each; a void of one of them, waiting for the merge's locks, must start its
    replay from the state the merge wrote, not from what it read before it waited."""
    key, ids, db = _seated_ladder(client, settings)
    post_all(client, "race", key, [seated("dup", "p9", 1)])
    ids += post_all(client, "race", key, [seated(*pair, 1) for pair in [("p1", "p2"), ("p3", "p4"), ("p2", "p3")]])
    merged, go, voiding_waits = threading.Event(), threading.Event(), threading.Event()
    real_replay, real_lock = player_changes.replay_from, storage.players.lock_all

    def replay_from(*args, **kwargs):
        out = real_replay(*args, **kwargs)
        merged.set()
        go.wait(10)
        return out

    def lock_all(*args, **kwargs):
        if threading.current_thread().name == "voiding":
            voiding_waits.set()
        return real_lock(*args, **kwargs)

    monkeypatch.setattr(player_changes, "replay_from", replay_from)
    monkeypatch.setattr(storage.players, "lock_all", lock_all)
    merging = Run(lambda: _merge(db, "dup", "p0"))
    merging.start()
    assert merged.wait(10)
    voiding = Run(lambda: _void(db, ids[-2]), name="voiding")
    voiding.start()
    # PostgreSQL: the void has read its game and waits for the merge's row locks; SQLite: it waits for the writer.
    voiding_waits.wait(1.0)
    time.sleep(0.2)
    go.set()
    merging.finish()
    voiding.finish()
    db.dispose()
    audit = client.get("/v1/ladders/race/audit").json()
    assert audit["consistent"] and audit["max_abs_diff"] == 0.0, audit


# --- Not a race: a change below an applied checkpoint, with players the replayed games do not reach ---


def _plain(a: str, b: str) -> dict:
    return {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]}


@pytest.mark.parametrize("change", ["void", "merge"])
def test_a_change_below_an_applied_checkpoint_replays_every_player_it_held(client, change):
    """x and y play only before the changed game: the replay of what the change reaches leaves them out, yet
    their vectors are the superseded checkpoint's; the ratings must be those of a replay from the one before."""
    key = make_ladder(client, "v", k=1, seed=5)
    games = [_plain("x", "y"), _plain("y", "x"), _plain("x", "y")] + [_plain("a", "b"), _plain("dup", "c")] * 5
    ids = post_all(client, "v", key, games)
    r = client.post("/v1/ladders/v/refits", json={"restarts": 1, "holdout": 0}, headers=bearer(key))
    job = wait(client, r.headers["Location"])
    assert client.post(f"/v1/ladders/v/refits/{job['id']}/apply", headers=bearer(key)).status_code == 200
    post_all(client, "v", key, [_plain("a", "b")] * 3)
    assert client.get("/v1/ladders/v/audit").json()["checkpoint_after_game"] == ids[-1]
    if change == "void":
        r = client.delete(f"/v1/ladders/v/games/{ids[5]}", headers=bearer(key))
    else:
        r = client.post("/v1/ladders/v/players/dup/merge", json={"into": "a"}, headers=bearer(key))
    assert r.status_code == 200, r.text
    audit = client.get("/v1/ladders/v/audit").json()
    assert audit["consistent"] and audit["checkpoint_after_game"] is None, audit
