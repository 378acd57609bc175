"""A replay's history written ahead of its switch (a new rate, a refit's apply), in short write transactions of
its own: the same ratings and history as one replay under the locks, and the log's history back whenever the
switch does not happen (it fails, or the process that wrote it stopped)."""

import itertools
import threading
import time

import pytest
from fastapi.testclient import TestClient

from app import storage
from app.core.db import Database
from app.core.errors import Conflict, Unavailable
from app.domain import rerating
from app.domain.access import ladder_for_read
from app.games import voiding
from app.ladders import service as ladder_service
from app.ladders.schemas import LadderPatch
from app.main import create_app
from tests.api.helpers import (
    all_vectors,
    home_games,
    read_ladder,
    same_ratings_and_history,
    vectors_and_scores,
    with_draws,
)
from tests.conftest import bearer, make_ladder

CONFIG = {"k": 2, "seed": 3, "seats": ["home", "away"]}


@pytest.fixture(autouse=True)
def _short_runs(monkeypatch):
    """Runs of 64 memberships: these ladders' replays are written ahead in several transactions (a replay of one
    run's worth is left to the switch)."""
    monkeypatch.setattr(rerating, "AHEAD_ROWS", 64)


def _twins(client, games: list[dict], **config) -> dict[str, dict]:
    """Two ladders, ``test`` and ``twin``, given the same games."""
    ladders = {slug: bearer(make_ladder(client, slug, **CONFIG, **config)) for slug in ("test", "twin")}
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games}, headers=h).status_code == 201
    return ladders


def _history(client, slug: str) -> list:
    return [
        [p["after"] for side in g["sides"] for p in side["players"]]
        for g in client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"]
    ]


def _rewrite(db: Database, slug: str = "test") -> str | None:
    with db.reading() as session:
        return storage.ladders.history_rewrite(session, read_ladder(db, slug).id)


def test_a_new_rate_written_ahead_in_many_transactions_is_one_replay_bit_for_bit(client, settings, monkeypatch):
    """A PATCH of ``eta`` writes the history at the new rate in runs of a few memberships, each its own
    transaction, before the one that switches the ladder: the ratings, history, seats and draw counts of a ladder
    that had the rate from its first game, and no rewrite left in progress."""
    runs: list[slice] = []
    ahead = rerating._ahead

    def counted(db, prepared, rewrite, write):
        runs.append(write.keywords["games"])
        return ahead(db, prepared, rewrite, write)

    monkeypatch.setattr(rerating, "_ahead", counted)
    games = with_draws(home_games(240, seed=4))
    h = bearer(make_ladder(client, "test", **CONFIG))
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    assert client.patch("/v1/ladders/test", json={"eta": 0.3}, headers=h).status_code == 200
    assert len(runs) >= 7 and runs[0].start == 0 and runs[-1].stop == 240  # 480 memberships
    assert all(a.stop == b.start for a, b in itertools.pairwise(runs))
    h = bearer(make_ladder(client, "twin", **CONFIG, eta=0.3))
    assert client.post("/v1/ladders/twin/games/batch", json={"games": games}, headers=h).status_code == 201
    db = Database.from_settings(settings)
    same_ratings_and_history(client, db, ("test", "twin"))
    assert _rewrite(db) is None
    db.dispose()


def test_games_posted_after_the_history_is_written_ahead_are_replayed_by_the_switch(client, settings):
    """Once a new rate's history is written ahead, games posted before the switch (one with a new player) are
    rated at the old rate from the ratings as the log leaves them (the stored ratings always are the log's); the
    switch replays them on the prepared state: the ratings, history and kept field sum of a twin changed with
    nothing written ahead."""
    db = Database.from_settings(settings)
    ladders = _twins(client, with_draws(home_games(200, seed=8)), eta=0.6)
    prepared = rerating.prepared_replay(db, read_ladder(db).id, None, {"eta": 0.2})
    assert prepared is not None and prepared.written == len(prepared.parts) and prepared.rewrite is not None
    assert all_vectors(client, "test") == all_vectors(client, "twin")  # the ratings are the log's until the switch
    later = [{"sides": [{"players": ["new-1"], "rank": 1}, {"players": ["t0"], "rank": 2}]}]
    later += with_draws(home_games(6, seed=9))
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": later}, headers=h).status_code == 201

    def change(session, slug: str, prepared):
        ladder = ladder_for_read(session, slug, fresh=True)
        return ladder_service.change_settings(session, ladder, LadderPatch(eta=0.2), prepared)

    rerating.switch(db, prepared, lambda session: change(session, "test", prepared))
    db.write(lambda session: change(session, "twin", None))
    same_ratings_and_history(client, db, ("test", "twin"))
    with db.reading() as session:
        kept = [storage.ladder_state.field_sum(session, read_ladder(db, slug)) for slug in ("test", "twin")]
        counted = storage.ladder_state.field_sum(session, read_ladder(db, "test"), recount=True)
    assert kept[0][1] == kept[1][1] == counted[1] == 9
    assert kept[0][0] == pytest.approx(counted[0], abs=1e-9) and kept[1][0] == pytest.approx(counted[0], abs=1e-9)
    db.dispose()


def test_a_switch_that_fails_puts_the_logs_history_back(client, settings):
    """The history at a new rate is written ahead (the stored history is the new rate's, the ratings are not
    yet), then the transaction that was to switch the ladder fails after it locked the players: the history is
    the log's again, as the twin's that nothing happened to."""
    db = Database.from_settings(settings)
    _twins(client, with_draws(home_games(200, seed=5)))
    prepared = rerating.prepared_replay(db, read_ladder(db).id, None, {"eta": 0.4})
    assert prepared is not None and prepared.written == 1 and _rewrite(db) == prepared.rewrite
    assert _history(client, "test") != _history(client, "twin")  # written ahead

    def fails(session):
        rerating.lock_ladder(session, prepared.ladder_id, prepared)
        raise Conflict("the refit's log changed")

    with pytest.raises(Conflict):
        rerating.switch(db, prepared, fails)
    assert _rewrite(db) is None
    assert client.get("/v1/ladders/test").json()["eta"] == client.get("/v1/ladders/twin").json()["eta"]
    same_ratings_and_history(client, db, ("test", "twin"))
    db.dispose()


def test_a_rewrite_left_by_a_stopped_process_is_ended(client, settings):
    """A replay's history written ahead by a process that stopped before its switch (a crash, a cancelled
    refit's child) is the log's again once a server finds it (at its start, after each refit job): one whose
    process runs is left alone."""
    db = Database.from_settings(settings)
    _twins(client, with_draws(home_games(200, seed=6)))
    prepared = rerating.prepared_replay(db, read_ladder(db).id, None, {"eta": 0.4})
    assert prepared is not None and prepared.rewrite is not None
    assert rerating.end_abandoned(db) == []  # this process's: running
    stopped = prepared.rewrite.partition("@")[0] + "@" + "host-gone:1:0"
    db.write(lambda session: storage.ladders.set_history_rewrite(session, prepared.ladder_id, stopped))
    assert rerating.end_abandoned(db) == []  # another host's: not known to have stopped
    host = prepared.rewrite.rsplit(":", 2)[0].partition("@")[2]
    stopped = f"{prepared.rewrite.partition('@')[0]}@{host}:999999999:0"
    db.write(lambda session: storage.ladders.set_history_rewrite(session, prepared.ladder_id, stopped))
    assert rerating.end_abandoned(db) == [prepared.ladder_id]
    assert _rewrite(db) is None
    same_ratings_and_history(client, db, ("test", "twin"))
    db.dispose()


def test_a_void_during_a_rewrite_replays_the_log_and_ends_it(client, settings, monkeypatch):
    """A void while another replay's history is written ahead: the void replays the log (at the ladder's rate),
    the rewrite ends, and its switch replays the log under the locks; the twin, voided and changed the same way
    with nothing written ahead, ends the same."""
    monkeypatch.setattr(rerating, "after_rewrites", lambda *a: None)  # as when the wait for the other runs out
    db = Database.from_settings(settings)
    games = with_draws(home_games(200, seed=7))
    ladders = _twins(client, games, eta=0.6)
    prepared = rerating.prepared_replay(db, read_ladder(db).id, None, {"eta": 0.2})
    assert prepared is not None and prepared.rewrite is not None
    for slug, h in ladders.items():
        number = client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"][-10]["id"]
        assert client.post(f"/v1/ladders/{slug}/games/{number}/void", headers=h).status_code == 200
    assert _rewrite(db) is None

    def change(session, slug: str, prepared):  # PATCH eta, with a replay prepared before the void or without one
        ladder = ladder_for_read(session, slug, fresh=True)
        return ladder_service.change_settings(session, ladder, LadderPatch(eta=0.2), prepared)

    assert prepared.rewrite is not None
    rerating.switch(db, prepared, lambda session: change(session, "test", prepared))
    assert prepared.rewrite is None  # ended by the void: the switch replayed the log
    db.write(lambda session: change(session, "twin", None))
    same_ratings_and_history(client, db, ("test", "twin"))
    db.dispose()


def test_a_patch_near_its_deadline_rests_less_between_the_writes_ahead_and_answers_in_time(settings, monkeypatch):
    """A ``PATCH`` whose writes ahead, each followed by a rest two hundred times as long, would outlast its
    request's time (here 8 s, in ten writes: under a loaded CI, 5 s in sixty writes left too little for the writes
    themselves, and a rest is as long as its write again once they cannot end in time): the rests shrink so that
    everything is written ahead by the last fifth of it, and the answer is a 200 in time, with the ratings and
    history of a ladder that always had the rate."""
    monkeypatch.setattr(rerating, "AHEAD_ROWS", 48)
    monkeypatch.setattr(rerating, "AHEAD_REST", {"sqlite": 200.0, "postgresql": 200.0})
    db = Database.from_settings(settings)
    switched: list[int] = []
    write = rerating.write_prepared
    monkeypatch.setattr(
        rerating, "write_prepared", lambda s, ladder, p: switched.append(p.written) or write(s, ladder, p)
    )
    with TestClient(create_app(settings.model_copy(update={"request_timeout": 8.0}))) as client:
        ladders = _twins(client, with_draws(home_games(240, seed=10)))
        started = time.monotonic()
        answer = client.patch("/v1/ladders/test", json={"eta": 0.3}, headers=ladders["test"])
        assert answer.status_code == 200 and time.monotonic() - started < 8.0, answer.text
        assert switched == [1]  # its history was all written ahead
        monkeypatch.setattr(rerating, "AHEAD_REST", {"sqlite": 0.0, "postgresql": 0.0})  # the twin need not wait
        assert client.patch("/v1/ladders/twin", json={"eta": 0.3}, headers=ladders["twin"]).status_code == 200
        same_ratings_and_history(client, db, ("test", "twin"))
    assert _rewrite(db) is None
    db.dispose()


def _void_twins(client, games: list[dict], left_out: list[int]) -> tuple[dict[str, dict], list[int]]:
    """``test`` given ``games``, ``twin`` the same without those at the indices ``left_out``; test's numbers."""
    ladders = {slug: bearer(make_ladder(client, slug, **CONFIG, drift=300.0)) for slug in ("test", "twin")}
    numbers = []
    for game in games:
        answer = client.post("/v1/ladders/test/games", json=game, headers=ladders["test"])
        numbers.append(answer.json()["id"])
    kept = [game for n, game in enumerate(games) if n not in left_out]
    assert client.post("/v1/ladders/twin/games/batch", json={"games": kept}, headers=ladders["twin"]).status_code == 201
    return ladders, numbers


def _same_as_never_played(client) -> None:
    """``test``, whose voided games count nowhere, rates as ``twin``, which never had them: the ratings, seats,
    counters and the history of the games that count."""
    for slug in ("test", "twin"):
        audit = client.get(f"/v1/ladders/{slug}/audit").json()
        assert audit["consistent"] and audit["counts_consistent"], audit
    assert all_vectors(client, "test") == all_vectors(client, "twin")
    assert client.get("/v1/ladders/test").json()["seats"] == client.get("/v1/ladders/twin").json()["seats"]
    history = [client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"] for slug in ("test", "twin")]
    kept = [[vectors_and_scores(g) for g in h if not g["voided_at"]] for h in history]
    assert kept[0] == kept[1]


def test_a_void_replayed_and_written_ahead_writes_only_the_games_posted_since(client, settings, monkeypatch):
    """A void deep in the log: the games its players and seats reach are replayed holding no lock and written
    ahead (history, then players); games posted before its switch (one with a new player) are replayed by the
    switch on that state, not the tail again: the ratings, seats and history of a ladder that never had the
    game, with ``/audit`` exact."""
    db = Database.from_settings(settings)
    ladders, numbers = _void_twins(client, with_draws(home_games(160, seed=11)), [40])
    prepared = rerating.prepared_void(db, read_ladder(db).id, numbers[40])
    assert prepared is not None and prepared.written == 1
    assert _rewrite(db) == prepared.rewrite and prepared.parts[0][0].log.n_games > 60
    later = [{"sides": [{"players": ["new-1"], "rank": 1}, {"players": ["t3"], "rank": 2}]}]
    later += with_draws(home_games(8, seed=12))
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": later}, headers=h).status_code == 201
    since: list[int] = []
    read = rerating._since
    monkeypatch.setattr(rerating, "_since", lambda *a: since.append((tail := read(*a)).log.n_games) or tail)
    monkeypatch.setattr(voiding, "replay_from", None)  # not called: the prepared replay is written

    def work(session):
        return voiding.void_game(
            session, ladder_for_read(session, "test", fresh=True), numbers[40], "1", None, prepared
        )

    assert rerating.switch(db, prepared, work)["voided_at"]
    assert since == [9] and _rewrite(db) is None
    _same_as_never_played(client)
    db.dispose()


def test_a_void_whose_replay_another_void_made_stale_is_replayed_under_the_lock(client, settings, monkeypatch):
    """Another game voided between a void's prepared replay and its switch (ending its write-ahead): the switch
    replays the log's tail under the lock, and both voids count as if neither game had been played."""
    monkeypatch.setattr(rerating, "after_rewrites", lambda *a: None)  # as when the wait for the other runs out
    db = Database.from_settings(settings)
    ladders, numbers = _void_twins(client, with_draws(home_games(120, seed=13)), [30, 70])
    prepared = rerating.prepared_void(db, read_ladder(db).id, numbers[30])
    assert prepared is not None and prepared.rewrite is not None
    assert client.post(f"/v1/ladders/test/games/{numbers[70]}/void", headers=ladders["test"]).status_code == 200

    def work(session):
        return voiding.void_game(
            session, ladder_for_read(session, "test", fresh=True), numbers[30], "1", None, prepared
        )

    assert rerating.switch(db, prepared, work)["voided_at"]
    assert prepared.rewrite is None and _rewrite(db) is None
    _same_as_never_played(client)
    db.dispose()


def test_a_change_waits_while_another_is_written_ahead_on_its_ladder(client, settings):
    """A change prepared while another change's replay is written ahead on the ladder by a live process waits for
    it to end (its switch), up to its deadline: preparing at once would be stale, and either switch would replay
    the whole log under the locks.  A rewrite whose process stopped is not waited for."""
    db = Database.from_settings(settings)
    _twins(client, with_draws(home_games(60, seed=14)))
    ladder_id = read_ladder(db).id
    started = time.monotonic()
    rerating.after_rewrites(db, ladder_id, started + 5)
    assert time.monotonic() - started < 0.5  # none
    live = f"ab@{rerating.jobs.owner()}"
    db.write(lambda session: storage.ladders.set_history_rewrite(session, ladder_id, live))
    with pytest.raises(Unavailable):  # a live one: until its bound, then a 503 (retry later) holding nothing
        rerating.after_rewrites(db, ladder_id, time.monotonic() + 0.4)
    assert time.monotonic() - started >= 0.4
    ends = threading.Timer(0.3, lambda: db.write(lambda s: storage.ladders.set_history_rewrite(s, ladder_id, None)))
    ends.start()
    started = time.monotonic()
    rerating.after_rewrites(db, ladder_id, started + 5)
    assert 0.3 <= time.monotonic() - started < 2  # until it ends
    host = live.rsplit(":", 2)[0].partition("@")[2]
    db.write(lambda session: storage.ladders.set_history_rewrite(session, ladder_id, f"ab@{host}:999999999:0"))
    started = time.monotonic()
    rerating.after_rewrites(db, ladder_id, started + 5)
    assert time.monotonic() - started < 0.5  # its process stopped
    db.dispose()


def test_the_rest_after_a_write_ahead_shrinks_to_end_by_the_deadline_unless_it_cannot():
    """As long as the write with time to spare; shorter as the deadline nears, so that the writes still to come,
    each as long, end by it; as long again where they cannot end by then even without rests."""
    assert rerating.rest_after(0.05, 10, None, 0.0, 0.5) == 0.05 * 0.5
    assert rerating.rest_after(0.05, 10, 100.0, 0.0) == 0.05
    assert rerating.rest_after(0.05, 10, 0.61, 0.0) == pytest.approx(0.01)  # (0.61 - 10 × 0.05) / 11
    assert rerating.rest_after(0.05, 10, 0.5, 0.0) == 0.0
    assert rerating.rest_after(0.05, 10, 0.4, 0.0) == 0.05  # too late either way


def test_a_void_that_cannot_have_its_turn_in_time_answers_503_and_changes_nothing(settings):
    """A void while another change of the ladder is written ahead by a live process, past its deadline's share:
    a 503 (retry later) that holds no lock and voids nothing, where ending the other's rewrite would replay the
    whole log under the locks (seconds of every post held on a big ladder) for an answer late already."""
    with TestClient(create_app(settings.model_copy(update={"request_timeout": 2.0}))) as client:
        h = bearer(make_ladder(client, **CONFIG))
        games = {"games": home_games(30, seed=3)}
        assert client.post("/v1/ladders/test/games/batch", json=games, headers=h).status_code == 201
        db = Database.from_settings(settings)
        ladder_id = read_ladder(db).id
        live = f"ab@{rerating.jobs.owner()}"
        db.write(lambda session: storage.ladders.set_history_rewrite(session, ladder_id, live))
        started = time.monotonic()
        r = client.post("/v1/ladders/test/games/5/void", headers=h)
        assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json", r.text
        assert "retry" in r.json()["detail"] and "Retry-After" in r.headers
        assert 1.0 < time.monotonic() - started < 2.5  # it waited for its turn, within the request's time
        assert client.get("/v1/ladders/test/games/5").json()["voided_at"] is None
        db.write(lambda session: storage.ladders.set_history_rewrite(session, ladder_id, None))
        assert client.post("/v1/ladders/test/games/5/void", headers=h).status_code == 200  # its turn now
        assert client.get("/v1/ladders/test/audit").json()["consistent"]
        db.dispose()
