"""Applying a refit: the log after it is replayed before the writer's locks are taken, and only what was
committed meanwhile is replayed under them; the ratings are those of one replay, bit for bit."""

import numpy as np
import pytest

from app import storage
from app.analysis import refit_apply, refit_rate, refit_views
from app.core.db import Database
from app.domain import rerating
from app.domain.access import ladder_for_read
from app.ladders import service as ladder_service
from tests.api.helpers import (
    all_vectors,
    disc_games,
    home_games,
    read_ladder,
    run_refit,
    same_ratings_and_history,
    vectors_and_scores,
    wait,
    with_draws,
)
from tests.conftest import bearer, make_ladder


def _prepare(db: Database, slug: str, refit_id: int) -> rerating.Prepared:
    with db.reading() as session:
        ladder = ladder_for_read(session, slug, fresh=True)
        prepared = refit_apply.prepare_apply(db, ladder, refit_views.get_refit(session, ladder, refit_id))
    assert prepared is not None
    return prepared


def _apply(db: Database, slug: str, refit_id: int, prepared: rerating.Prepared | None) -> int:
    def work(session):
        ladder = ladder_for_read(session, slug, fresh=True)
        job = refit_views.get_refit(session, ladder, refit_id)
        return refit_apply.apply_refit(session, ladder, job, prepared).replayed_games

    return db.write(work)


def _log_replays(monkeypatch, module=refit_apply) -> list[int]:
    """How often ``module`` (a refit's apply, or a new rate's: ``refit_rate``) replayed the whole log under the
    writer's locks (it returns as it would)."""
    calls: list[int] = []
    whole = module.replay_log

    def counted(session, ladder):
        calls.append(ladder.id)
        return whole(session, ladder)

    monkeypatch.setattr(module, "replay_log", counted)
    return calls


def test_games_committed_after_the_replay_are_replayed_on_top_bit_for_bit(client, settings, monkeypatch):
    """Two ladders with the same games (seats, a learning rate shrinking with games played, k = 2): one applies
    its refit from the replay prepared outside the locks, caught up once with games committed meanwhile (a new
    player among them), with more games and another new player committed after that; the other is given the same
    games and replays its whole log under the locks. Same ratings."""
    db = Database.from_settings(settings)
    config = {"k": 2, "seed": 5, "eta": 0.3, "eta_tau": 20.0, "seats": ["home", "away"]}
    ladders = {slug: bearer(make_ladder(client, slug, **config)) for slug in ("prepared", "whole")}
    games = home_games(240, seed=1)
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[:200]}, headers=h).status_code == 201
    refit_ids = {slug: run_refit(client, slug, h) for slug, h in ladders.items()}
    after_refit = games[200:220]  # posted while the refit ran: in the prepared replay
    caught_up = [  # committed while it was prepared: replayed on top by a catch-up, outside the locks too
        *games[220:230],
        {"sides": [{"players": ["t1", "t2"], "rank": 1}, {"players": ["t3", "newcomer"], "rank": 2}]},
    ]
    since = [  # committed after it: replayed under the locks
        *games[230:],
        {"sides": [{"players": ["newcomer"], "rank": 1, "seat": "home"}, {"players": ["t0"], "rank": 2}]},
        {"sides": [{"players": ["latecomer"], "rank": 1}, {"players": ["newcomer"], "rank": 2}]},
    ]
    for slug, h in ladders.items():
        client.post(f"/v1/ladders/{slug}/games/batch", json={"games": after_refit}, headers=h)
    prepared = _prepare(db, "prepared", refit_ids["prepared"])
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": caught_up}, headers=h).status_code == 201
    with db.snapshot() as session:
        assert rerating.catch_up(session, prepared) == len(caught_up)
    with db.snapshot() as session:
        assert rerating.catch_up(session, prepared) == 0
    assert len(prepared.parts) == 2
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": since}, headers=h).status_code == 201

    replays = _log_replays(monkeypatch)
    posted = len(after_refit) + len(caught_up) + len(since)
    assert _apply(db, "prepared", refit_ids["prepared"], prepared) == posted
    assert replays == []  # only the games committed since the caught-up replay were read and replayed
    assert _apply(db, "whole", refit_ids["whole"], None) == posted
    assert len(replays) == 1
    db.dispose()

    for slug in ladders:
        audit = client.get(f"/v1/ladders/{slug}/audit").json()
        assert audit["consistent"] and audit["counts_consistent"], audit
    assert all_vectors(client, "prepared") == all_vectors(client, "whole")  # exactly: one replay, in two parts
    seats = [client.get(f"/v1/ladders/{slug}").json()["seats"] for slug in ladders]
    assert seats[0] == seats[1]
    # Each game's vectors and scores are the same; its Elo points are against the field's mean, whose kept sum
    # can differ in the last bits with the order it was summed in.
    history = [client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"] for slug in ladders]
    strip = [[vectors_and_scores(g) for g in h] for h in history]
    assert strip[0] == strip[1]


@pytest.mark.parametrize("change", ["void", "void, caught up", "merge", "eta"])
def test_a_prepared_replay_made_stale_is_dropped_and_the_log_replayed(client, settings, monkeypatch, change):
    """A void below the prepared replay's newest game (found by the apply, or by a catch-up with a game committed
    after the void), a merge or a new learning rate after it was prepared: the apply replays the log under the
    locks instead, the ratings are exact, and the voided game's history is left as it was."""
    monkeypatch.setattr(rerating, "after_rewrites", lambda *a: None)  # the change does not wait for this one
    db = Database.from_settings(settings)
    h = bearer(make_ladder(client, "test", k=1, seed=2, eta=0.2))
    games = home_games(160, seed=3)
    for g in games:
        for side in g["sides"]:
            side.pop("seat", None)
    client.post("/v1/ladders/test/games/batch", json={"games": games[:120]}, headers=h)
    refit_id = run_refit(client, "test", h)
    posted = client.post("/v1/ladders/test/games/batch", json={"games": games[120:]}, headers=h).json()
    extra = [
        {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]}
        for a, b in [("x", "t0"), ("y", "t1"), ("x", "t2")]
    ]
    client.post("/v1/ladders/test/games/batch", json={"games": extra}, headers=h)
    prepared = _prepare(db, "test", refit_id)
    voided = posted["games"][5]["id"]
    if change.startswith("void"):
        assert client.post(f"/v1/ladders/test/games/{voided}/void", headers=h).status_code == 200
        history = vectors_and_scores(client.get(f"/v1/ladders/test/games/{voided}").json())
    if change == "void, caught up":
        client.post("/v1/ladders/test/games", json=extra[0], headers=h)
        with db.snapshot() as session:
            assert rerating.catch_up(session, prepared) == 0
        assert prepared.stale
    elif change == "void":
        pass
    elif change == "merge":  # neither was fitted by the refit
        assert client.post("/v1/ladders/test/players/y/merge", json={"into": "x"}, headers=h).status_code == 200
    else:
        assert client.patch("/v1/ladders/test", json={"eta": 0.15}, headers=h).status_code == 200
    replays = _log_replays(monkeypatch)
    _apply(db, "test", refit_id, prepared)
    assert len(replays) == 1
    db.dispose()
    audit = client.get("/v1/ladders/test/audit").json()
    assert audit["consistent"] and audit["counts_consistent"], audit
    if change.startswith("void"):
        assert vectors_and_scores(client.get(f"/v1/ladders/test/games/{voided}").json()) == history


def test_the_apply_route_replays_the_log_before_it_takes_the_locks(client, monkeypatch):
    replays = _log_replays(monkeypatch)
    h = bearer(make_ladder(client, "test", k=1))
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(300)}, headers=h)
    started = client.post("/v1/ladders/test/refits", json={"select_k": [1]}, headers=h)
    job = wait(client, started.headers["location"])
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(30, seed=4)}, headers=h)
    applied = client.post(f"{started.headers['location']}/apply", headers=h)
    assert applied.status_code == 200 and applied.json()["replayed_games"] == 30, applied.text
    assert replays == [] and job["status"] == "done"
    assert client.get("/v1/ladders/test/audit").json()["consistent"]
    assert np.isfinite([v for row in all_vectors(client, "test").values() for v in row]).all()


def test_a_refit_whose_players_were_merged_since_is_not_applied(client):
    """Newcomers x and y play after refit A and before refit B, then y is merged into x: B (which fitted y) is
    refused with a 409 and changes nothing; A (which never saw them) is applied."""
    h = bearer(make_ladder(client, "test", k=1))
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(120)}, headers=h)
    before_them = run_refit(client, "test", h)
    for newcomer, opponent in [("x", "d0"), ("y", "d1")]:
        duel = {"sides": [{"players": [newcomer], "rank": 1}, {"players": [opponent], "rank": 2}]}
        assert client.post("/v1/ladders/test/games", json=duel, headers=h).status_code == 201
    with_them = run_refit(client, "test", h)
    assert client.post("/v1/ladders/test/players/y/merge", json={"into": "x"}, headers=h).status_code == 200
    vectors = all_vectors(client, "test")
    refused = client.post(f"/v1/ladders/test/refits/{with_them}/apply", headers=h)
    assert refused.status_code == 409 and "merged since" in refused.json()["detail"], refused.text
    assert all_vectors(client, "test") == vectors
    assert client.post(f"/v1/ladders/test/refits/{before_them}/apply", headers=h).status_code == 200
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def _running_rate_job(db: Database, slug: str, **forced) -> tuple[int, int, dict]:
    """A running auto refit of the ladder (the ladder's id, its id) and the rate its log chooses, a changed one,
    with the values ``forced`` over it (a rule, its noise): what an auto refit applies at once."""

    def start(session) -> tuple[int, int]:
        ladder = ladder_for_read(session, slug, fresh=True)
        job = storage.refits.insert(session, ladder.id, {"auto": True, "tune_rate": True}, "test")
        assert storage.refits.advance(session, ladder.id, job.id, "queued", {"status": "running"})
        return ladder.id, job.id

    ladder_id, job_id = db.write(start)
    with db.snapshot() as session:
        ladder = storage.ladders.by_id(session, ladder_id)
        rate = refit_rate.rate_choice(ladder, storage.log.read(session, ladder, from_start=True), lambda *_: None)
    assert rate["changed"], rate  # a learning rate far too large: the log chooses another
    return ladder_id, job_id, rate | forced


def _apply_rate(db: Database, ladder_id: int, job_id: int, rate: dict, prepared) -> bool:
    return db.write(lambda session: refit_rate.apply_rate_first(session, ladder_id, job_id, rate, prepared))


@pytest.mark.parametrize("rule", ["steps", "variance"])
def test_an_auto_refits_new_rate_is_replayed_outside_the_locks_bit_for_bit(client, settings, monkeypatch, rule):
    """The new rate an auto refit applies at once (to the shrinking step's η and τ, or to the variance rule with
    its noise), on two ladders with the same games: one replays the log at it from the latest checkpoint holding
    no lock, caught up with games committed meanwhile (a new player among them), and only the games committed
    after that under the locks; the other replays its log under the locks.  The same ratings, history and draw
    counts, and ``/audit`` agrees."""
    db = Database.from_settings(settings)
    config = {"k": 2, "seed": 5, "rate_rule": "steps", "eta": 8.0, "seats": ["home", "away"]}
    ladders = {slug: bearer(make_ladder(client, slug, **config)) for slug in ("prepared", "whole")}
    games = with_draws(home_games(260, seed=1))
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[:120]}, headers=h).status_code == 201
        assert (
            client.post(f"/v1/ladders/{slug}/refits/{run_refit(client, slug, h)}/apply", headers=h).status_code == 200
        )
        client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[120:200]}, headers=h)
    forced = {"rate_rule": rule} | ({"noise": 40.0, "cycles": 0.25} if rule == "variance" else {})
    jobs = {slug: _running_rate_job(db, slug, **forced) for slug in ladders}
    ladder_id, _, rate = jobs["prepared"]
    prepared = rerating.prepared_replay(
        db, ladder_id, None, refit_rate.rate_settings(rate, read_ladder(db, "prepared"))
    )
    assert prepared is not None and prepared.base > 0  # from the applied refit's checkpoint
    caught_up = [*games[200:230], {"sides": [{"players": ["t1"], "rank": 1}, {"players": ["newcomer"], "rank": 2}]}]
    since = [*games[230:], {"sides": [{"players": ["latecomer"], "rank": 1}, {"players": ["newcomer"], "rank": 2}]}]
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": caught_up}, headers=h).status_code == 201
    with db.snapshot() as session:
        assert rerating.catch_up(session, prepared) == len(caught_up)
    for slug, h in ladders.items():
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": since}, headers=h).status_code == 201

    replays = _log_replays(monkeypatch, refit_rate)
    assert _apply_rate(db, *jobs["prepared"], prepared)
    assert replays == []
    assert _apply_rate(db, *jobs["whole"], None)
    assert len(replays) == 1
    ladder = client.get("/v1/ladders/prepared").json()
    assert (ladder["eta"], ladder["rate_rule"]) == (rate["eta"], rule)
    same_ratings_and_history(client, db, ("prepared", "whole"))
    db.dispose()
    if rule == "variance":
        assert all(row["strength_se"] > 0 for row in client.get("/v1/ladders/prepared/leaderboard").json()["items"])


@pytest.mark.parametrize("change", ["eta", "pinned", "refit applied", "season pull", "void"])
def test_a_new_rate_replayed_outside_the_locks_and_made_stale_is_dropped(client, settings, monkeypatch, change):
    """After the replay at the new rate was prepared, an admin sets another rate or pins the ladder's (the new
    rate is not applied; the history written at it ahead is the log's again), a refit
    is applied or a season closes with a pull (the replay started from the checkpoint before), or a game below
    its end is voided: the log is replayed under the locks where the rate is applied.  A twin ladder given the
    same games and changes, whose apply replays its log under the locks, ends with the same ratings, history and
    draw counts."""
    monkeypatch.setattr(rerating, "AHEAD_ROWS", 64)  # its history is written ahead in several transactions
    monkeypatch.setattr(rerating, "after_rewrites", lambda *a: None)  # the change does not wait for this one
    db = Database.from_settings(settings)
    ladders = {
        s: bearer(make_ladder(client, s, k=1, seed=2, rate_rule="steps", eta=4.0, seats=["home", "away"]))
        for s in ("test", "twin")
    }
    games = with_draws(home_games(200, seed=3))
    posted = {
        slug: client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[:160]}, headers=h).json()
        for slug, h in ladders.items()
    }
    refits = {slug: run_refit(client, slug, h) for slug, h in ladders.items()}
    jobs = {slug: _running_rate_job(db, slug) for slug in ladders}
    rate = jobs["test"][2]
    prepared = rerating.prepared_replay(db, jobs["test"][0], None, refit_rate.rate_settings(rate, read_ladder(db)))
    assert prepared is not None and prepared.base == 0  # no checkpoint yet: from the initial vectors
    for slug, h in ladders.items():
        client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[160:]}, headers=h)
        if change in ("eta", "pinned"):
            setting = {"eta": 0.15} if change == "eta" else {"auto_rate": False}
            assert client.patch(f"/v1/ladders/{slug}", json=setting, headers=h).status_code == 200
        elif change == "refit applied":
            assert client.post(f"/v1/ladders/{slug}/refits/{refits[slug]}/apply", headers=h).status_code == 200
        elif change == "season pull":
            closed = client.post(f"/v1/ladders/{slug}/seasons", json={"name": "one", "pull": 0.5}, headers=h)
            assert closed.status_code == 201, closed.text
        else:
            voided = posted[slug]["games"][5]["id"]
            assert client.post(f"/v1/ladders/{slug}/games/{voided}/void", headers=h).status_code == 200
    replays = _log_replays(monkeypatch, refit_rate)
    applied = change not in ("eta", "pinned")
    assert _apply_rate(db, *jobs["test"], prepared) == applied
    # Pinned: the same settings, the history written ahead replaced by the apply; another eta: by the PATCH.
    assert len(replays) == int(applied or change == "pinned")
    assert _apply_rate(db, *jobs["twin"], None) == applied
    assert client.get("/v1/ladders/test").json()["eta"] == {"eta": 0.15, "pinned": 4.0}.get(change, rate["eta"])
    same_ratings_and_history(client, db, ("test", "twin"))
    db.dispose()


def test_the_apply_route_replays_at_the_rate_its_refit_chose_before_it_takes_the_locks(client, monkeypatch):
    replays = _log_replays(monkeypatch)
    h = bearer(make_ladder(client, "test", k=1, eta=4.0))
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(300)}, headers=h)
    started = client.post("/v1/ladders/test/refits", json={"select_k": [1], "tune_rate": True}, headers=h)
    job = wait(client, started.headers["location"])
    assert job["result"]["rate"]["changed"], job["result"]["rate"]
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(30, seed=4)}, headers=h)
    applied = client.post(f"{started.headers['location']}/apply", headers=h)
    assert applied.status_code == 200 and applied.json()["replayed_games"] == 30, applied.text
    assert replays == []
    assert client.get("/v1/ladders/test").json()["eta"] == job["result"]["rate"]["eta"]
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


@pytest.mark.parametrize("body", [{"eta": 0.35}, {"rate_rule": "variance"}])
def test_a_new_rate_set_by_patch_is_replayed_before_the_write_bit_for_bit(client, monkeypatch, body):
    """A PATCH of the learning rate replays the log holding no lock, then only writes it under the writer (no
    replay of the whole log there): the ratings are those of a ladder that had the rate from its first game."""
    replays = _log_replays(monkeypatch, ladder_service)
    h = bearer(make_ladder(client, "patched", k=2))
    client.post("/v1/ladders/patched/games/batch", json={"games": disc_games(300)}, headers=h)
    changed = client.patch("/v1/ladders/patched", json=body, headers=h)
    assert changed.status_code == 200, changed.text
    assert replays == []
    h = bearer(make_ladder(client, "always", k=2, **body))
    client.post("/v1/ladders/always/games/batch", json={"games": disc_games(300)}, headers=h)
    assert client.get("/v1/ladders/patched/audit").json()["consistent"]
    assert all_vectors(client, "patched") == all_vectors(client, "always")
