"""The learning rate a refit chooses from the ladder's log (``tune_rate``), and giving it to the ladder."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.ladder import LadderRow
from app.domain.rerating import Prepared, lock_ladder, replay_log, replay_prepared
from app.ladders.schemas import RULE_LIMITS
from app.rating.prequential import prequential_losses
from app.rating.tuning import SEAT_PRIOR_SDS, choose_rate
from app.storage.log import LadderLog
from app.storage.refits import Refit

#: Multiples of the ladder's drift a rate choice also tries, where the steps follow it (a drift of 0 stays: time
#: was turned off).
DRIFT_FACTORS = (0.0, 0.5, 2.0)


def rate_choice(ladder: LadderRow, state: LadderLog, progress) -> dict:
    """The learning rate the ladder's log itself chooses (:func:`app.rating.tuning.choose_rate`), replayed from
    the players' initial vectors, each candidate's prequential log loss, and the rate it was compared with.
    Where the ladder's steps follow the drift, the drift is chosen too (Elo points a year in the answer)."""
    current = ladder.learning_rate()
    fresh = ladder.fresh_seats()
    drifts: tuple[float, ...] = ()
    if current.drift > 0:
        drifts = tuple(f * current.drift for f in DRIFT_FACTORS)
    sds = SEAT_PRIOR_SDS if fresh is not None else ()
    choice = choose_rate(
        state.start, state.log, current, fresh, progress, state.times, drifts, sds, rules=True, limits=RULE_LIMITS
    )
    rows = [row | {"drift": _elo_drift(ladder, row), "noise": _elo_noise(row)} for row in choice.rows]
    for row in rows:  # the ladder's own prior as it was set, not as its precision gives it back
        if fresh is not None and row["seat_prior"] == rows[0]["seat_prior"]:
            row["seat_prior"] = ladder.seat_prior
    chosen = rows[choice.index]
    variance = isinstance(choice.rate, rating.VarianceRule)
    return {
        "eta": chosen["eta"],
        "eta_tau": ladder.eta_tau if variance else chosen["tau"],  # the variance rule keeps the ladder's τ unused
        "rate_rule": chosen["rule"],
        "noise": chosen["noise"] if variance else ladder.noise,
        "cycles": chosen["cycles"] if variance else ladder.cycles,
        "previous_rate_rule": ladder.rate_rule,
        "previous_noise": ladder.noise,
        "previous_cycles": ladder.cycles,
        "drift": chosen["drift"],
        "seat_prior": chosen.get("seat_prior"),
        "changed": choice.index != 0,
        "previous_eta": ladder.eta,  # the ladder's (under the variance rule, the newcomer's variance's η)
        "previous_eta_tau": ladder.eta_tau,
        "previous_drift": ladder.drift,
        "previous_drift_steps": ladder.drift_steps,
        "previous_seat_prior": ladder.seat_prior if fresh is not None else None,
        "log_loss": chosen["log_loss"],
        "previous_log_loss": rows[choice.against]["log_loss"],  # on the same games: the row it was compared with
        "scored_games": chosen["scored_games"],
        "standard_error": chosen["standard_error"],
        "games": state.log.n_games,
        "applied": False,
        "candidates": rows,
    }


def live_check(session: Session, ladder: LadderRow, rate: dict, upto: int) -> dict:
    """A changed rate choice (:func:`rate_choice`) checked as the ladder would run it, in a read snapshot
    (``session``): given the rate, the ladder replays its log from its latest checkpoint (a refit's fitted
    vectors) with the state each player carries there under the new rule (under the variance rule, the variances
    the checkpoint kept: none, a newcomer's, if it was taken under the other rule), not from the initial vectors
    the choice scored it from.  So the new rule, replayed that way up to game ``upto`` (the choice's last), must
    predict the games since the checkpoint better than the ladder's own rule replayed the same way (the ratings and
    forecasts the ladder holds: every change of its rule replays from the checkpoint); else the choice is kept as a
    report, not applied (``changed`` false).  ``live`` in the answer gives both losses.  Without a
    checkpoint (or with a season's pull since it, which the replay pulls again) the ladder replays from the
    initial vectors: what was scored."""
    latest = storage.refits.latest_checkpoint(session, ladder.id)
    if not rate["changed"] or latest is None or storage.seasons.pulls(session, ladder.id, latest.after_game_id):
        return rate
    served = storage.log.read(session, ladder, upto=upto)
    if served.log.n_games == 0:
        return rate
    chosen = dataclasses.replace(ladder, **rate_settings(rate, ladder))
    per = float(np.add.reduceat(served.log.pair_weight, served.log.pair_ptr[:-1]).mean())  # a loss per comparison
    before = _replayed_loss(ladder, served) / per
    after = _replayed_loss(chosen, storage.log.read(session, chosen, upto=upto)) / per
    live = {"after_game_id": latest.after_game_id, "games": served.log.n_games, "log_loss": after}
    live |= {"previous_log_loss": before, "held": after < before}
    return rate | {"live": live, "changed": after < before}


def _replayed_loss(ladder: LadderRow, part: LadderLog) -> float:
    """The mean log loss per game of the ladder's rule replayed over ``part`` from its start state, as the ladder's
    own replay from there (:mod:`app.domain.rerating`) rates them."""
    rule = ladder.learning_rate()
    losses = prequential_losses(part.start, part.log, rule, part.start_seats, part.times, part.start_games)
    return float(losses.mean())


def _elo_noise(row: dict) -> float | None:
    """A variance-rule candidate's noise per game as the ladder's setting (Elo points, one standard deviation)."""
    return None if row["noise"] is None else round(math.sqrt(row["noise"]) * rating.ELO_PER_LOGIT, 9)


def _elo_drift(ladder: LadderRow, row: dict) -> float:
    """A candidate's drift in logits a year as the ladder's setting (Elo points a year): the setting itself where
    the candidate's rule takes that drift from it.  Otherwise its own, so that the ladder, given the candidate's
    rule, steps with the drift the candidate was compared at (a constant η ignores the drift: a variance rule or
    a τ chosen on such a ladder was compared without one, and would follow the ladder's drift once applied)."""
    tau = row["tau"] if row["rule"] == "steps" else ladder.eta_tau
    own = dataclasses.replace(ladder, rate_rule=row["rule"], eta_tau=tau).step_drift()
    return ladder.drift if row["drift"] == own else round(row["drift"] * rating.ELO_PER_LOGIT, 9)


def apply_rate_first(
    session: Session, ladder_id: int, refit_id: int, rate: dict, prepared: Prepared | None = None
) -> bool:
    """An auto refit's rate choice applied as soon as it is made, before the refit's guard and fit run (they take
    seconds, the choice a fraction of one): the ladder rates its next games with the rule its log chose meanwhile.
    Recorded in the running job's result.  The log is replayed at the new rate holding no lock (``prepared``:
    :func:`app.analysis.refit_apply.prepared_replay` with :func:`rate_settings`) and written here under every
    player's lock, with the games committed since on top (on PostgreSQL its history just before:
    :func:`write_history`); one that no longer holds is replayed here instead.  Whether it was applied (not if
    the job was cancelled, the rate is pinned or an admin changed it since)."""
    if not storage.refits.advance(session, ladder_id, refit_id, "running", {"result": {"rate": rate}}):
        return False
    ladder = storage.ladders.by_id(session, ladder_id)
    if ladder is None:
        return False
    lock_ladder(session, ladder_id, prepared)
    ladder = storage.ladders.by_id(session, ladder_id) or ladder
    job = storage.refits.get(session, ladder_id, refit_id)
    assert job is not None  # advanced above, in this transaction
    if not set_rate(session, ladder, job):
        if prepared is not None and prepared.rewrite is not None:  # history written at a rate not set after all
            replay_log(session, ladder)  # (pinned since): the log's again
            storage.ladders.bump(session, [ladder_id], reset=True)
        return False
    ladder = storage.ladders.by_id(session, ladder_id) or ladder
    if prepared is None or replay_prepared(session, ladder, prepared) is None:
        replay_log(session, ladder)
    storage.ladders.bump(session, [ladder_id], reset=True)
    return True


def rate_settings(rate: dict, ladder: LadderRow) -> dict:
    """The ladder's columns a rate choice (:func:`rate_choice`) sets."""
    values = {"eta": rate["eta"], "eta_tau": rate["eta_tau"], "drift": rate.get("drift", ladder.drift)}
    if "rate_rule" in rate:  # the rule and its noise, chosen with it (mathematics §3b)
        values |= {"rate_rule": rate["rate_rule"], "noise": rate["noise"]}
        if "cycles" in rate:
            values["cycles"] = rate["cycles"]
    if rate.get("seat_prior") is not None:
        values["seat_prior"] = rate["seat_prior"]
    return values


def rate_applies(ladder: LadderRow, rate: dict | None) -> bool:
    """Whether a refit's rate choice is to be given to the ladder: a new rate, the ladder's not pinned, and still
    the one the choice was compared with (an admin set none since)."""
    if not rate or not rate["changed"] or not ladder.auto_rate:
        return False
    previous = (rate["previous_eta"], rate["previous_eta_tau"], rate.get("previous_drift", ladder.drift))
    steps = rate.get("previous_drift_steps", ladder.drift_steps)
    prior = rate.get("previous_seat_prior") or ladder.seat_prior
    rule = (
        rate.get("previous_rate_rule", ladder.rate_rule),
        rate.get("previous_noise", ladder.noise),
        rate.get("previous_cycles", ladder.cycles),
    )
    now_set = (ladder.eta, ladder.eta_tau, ladder.drift, ladder.drift_steps, ladder.seat_prior, ladder.rate_rule)
    return (*now_set, ladder.noise, ladder.cycles) == (*previous, steps, prior, *rule)


def set_rate(session: Session, ladder: LadderRow, job: Refit) -> bool:
    """Give the ladder the learning rate the refit ``job`` chose, if it chose a new one, the ladder's rate is not
    pinned, and it is still the one the choice was compared with (the caller holds every player's lock, then
    replays the log and bumps the ladder with ``reset``); record it on the ladder and in the refit's report."""
    result = job.result or {}
    rate: dict | None = result.get("rate")
    if rate is None or not rate_applies(ladder, rate):
        return False
    prior = rate.get("previous_seat_prior") or ladder.seat_prior
    now = datetime.now(UTC)
    fields = ("eta", "eta_tau", "previous_eta", "previous_eta_tau", "log_loss", "previous_log_loss", "standard_error")
    choice = {name: rate[name] for name in (*fields, "games")} | {"refit": job.id, "applied_at": now.isoformat()}
    if "scored_games" in rate:
        choice["scored_games"] = rate["scored_games"]
    choice |= {"drift": rate.get("drift", ladder.drift), "previous_drift": rate.get("previous_drift", ladder.drift)}
    if "rate_rule" in rate:  # the rule and its noise, chosen with it (mathematics §3b)
        names = ("rate_rule", "noise", "previous_rate_rule", "previous_noise", "cycles", "previous_cycles")
        choice |= {name: rate[name] for name in names if name in rate}
    if rate.get("seat_prior") is not None:
        choice |= {"seat_prior": rate["seat_prior"], "previous_seat_prior": prior}
    storage.ladders.change(session, ladder.id, rate_settings(rate, ladder) | {"rate_choice": choice})
    storage.refits.update(session, job.ladder_id, job.id, {"result": result | {"rate": rate | {"applied": True}}})
    return True
