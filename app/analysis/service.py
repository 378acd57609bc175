"""Offline analytics of a ladder: refit jobs and checkpoints, identifiability, intransitivity, canonical form.

A refit (SPEC §9) runs in a child process: it reads the log in a read
transaction, fits outside any transaction (games keep flowing) and writes its
progress and result in short transactions.  Applying it is a checkpoint: the
refit's vectors replace the ratings as of the last game it saw, and the games
posted since are replayed on top with the online rule, so ``/audit`` (which
replays from the latest checkpoint) stays exact.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from app import rating
from app.analysis.schemas import (
    BlockOut,
    CanonicalOut,
    CanonicalPlayer,
    CheckpointOut,
    IdentifiabilityOut,
    IntransitivityOut,
    NotComparable,
    RefitIn,
    RefitOut,
)
from app.config import Settings
from app.db import Database, bulk_update
from app.errors import Conflict, InvalidInput, NotFound
from app.games.service import LadderLog, learning_rate, read_log
from app.models import Checkpoint, Game, Ladder, Player, Refit
from app.rating.analysis import canonical as canonical_form
from app.rating.analysis import empirical_hodge_of, hodge_norms
from app.rating.elo import pair_counts
from app.rating.identifiability import identifiability as identify
from app.rating.refit import evaluate, guard, guard_window, split_games
from app.rating.refit import refit as fit_log

logger = logging.getLogger("melo")
#: One refit at a time per server process.  Each runs in a child process of its own, at a lower
#: CPU priority: in a thread, its fit and its identifiability linear programs held the interpreter
#: lock the request threads need (bench_api: predict p50 3.4 -> 9.6 ms, POST /games 142 -> 70 req/s).
_jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="melo-refit")
_children: set[multiprocessing.process.BaseProcess] = set()
#: Seconds between progress writes.
PROGRESS_EVERY = 0.5
#: A queued or running refit silent for this long was lost with its process (a restart): it shows as failed.
STALE = timedelta(minutes=10)


def start_refit(session: Session, ladder: Ladder, params: RefitIn) -> Refit:
    """Record a queued refit; the caller commits, then :func:`submit` runs it."""
    if params.select_k and max(params.select_k) > ladder.k:
        raise InvalidInput(
            f"select_k: at most the ladder's k = {ladder.k}",
            errors=[{"field": "select_k", "message": f"values must be <= {ladder.k}"}],
        )
    job = Refit(ladder_id=ladder.id, status="queued", progress=0.0, params=params.model_dump(mode="json"))
    session.add(job)
    session.flush()
    return job


def submit(db: Database, refit_id: int) -> None:
    """Queue the refit; it runs in a child process (see :data:`_jobs`)."""
    _jobs.submit(_run_child, db, refit_id)


def stop_jobs() -> None:
    """Stop the running refit's process (server shutdown); the job shows as failed."""
    for child in list(_children):
        child.terminate()


def _run_child(db: Database, refit_id: int) -> None:
    url = db.write_engine.url.render_as_string(hide_password=False)
    child = multiprocessing.get_context("spawn").Process(target=_child_main, args=(url, refit_id), daemon=True)
    child.start()
    _children.add(child)
    child.join()
    _children.discard(child)
    if child.exitcode != 0:
        _fail(db, refit_id, f"the refit process exited with code {child.exitcode}")


def _child_main(url: str, refit_id: int) -> None:
    os.nice(10)
    db = Database.from_settings(Settings(database_url=url))
    try:
        run_refit(db, refit_id)
    except Exception as exc:  # the job's row records the failure
        logger.exception("refit %s failed", refit_id)
        _fail(db, refit_id, f"{type(exc).__name__}: {exc}")
    finally:
        db.dispose()


def _fail(db: Database, refit_id: int, error: str) -> None:
    with db.writing() as session:
        job = session.get(Refit, refit_id)
        if job is not None and job.status in ("queued", "running"):
            job.status, job.error = "failed", error[:2000]
            job.finished_at = job.updated_at = datetime.now(UTC)


def run_refit(db: Database, refit_id: int, progress=None) -> None:
    """Fit, check identifiability of the fit, store the result (also used by ``melo refit``).

    An ``auto`` refit is guarded first (:func:`_guard`) and applied when it passes.
    """
    with db.reading() as session:
        job = session.get(Refit, refit_id)
        ladder = session.get(Ladder, job.ladder_id)
        params = RefitIn.model_validate(job.params)
        state = read_log(session, ladder, from_start=True)  # every game up to state.last_game_id
        recent = read_log(session, ladder) if params.auto else None  # from the latest checkpoint
    _update(db, refit_id, status="running", after_game_id=state.last_game_id)
    last_write = [0.0]

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_EVERY:
            last_write[0] = now
            _update(db, refit_id, progress=0.95 * done / total)

    m = len(state.keys)
    if state.log.n_games == 0 or m < 2:
        raise ValueError("the ladder has no games to fit")
    guard, select_k, fit_progress = None, params.select_k, report
    if params.auto:  # the guard's fit takes the first half of the progress bar, the whole log's the second
        guard = _guard(ladder, state, recent, params, lambda done, total: report(done, 2 * total))
        if not guard["better"]:
            summary = {"games": state.log.n_games, "players": m, "guard": guard}
            _update(db, refit_id, status="rejected", progress=1.0, result=summary, finished_at=datetime.now(UTC))
            return
        select_k = [guard["k"]]

        def fit_progress(done: int, total: int) -> None:
            report(total + done, 2 * total)

    result = fit_log(
        state.log,
        m,
        ladder.k,
        l2=params.l2,
        restarts=params.restarts,
        holdout=params.holdout,
        seed=params.seed,
        current=state.stored,
        select_k=select_k,
        progress=fit_progress,
    )
    heldout = dict(result.heldout)
    if params.holdout > 0:
        eta = ladder.eta if params.eta is None else params.eta
        replay_k = ladder.k if params.replay_k is None else params.replay_k
        heldout["replay"] = _replay_metrics(ladder, state, eta, replay_k, params) | {"eta": eta, "k": replay_k}
    # Identifiability of the model chosen: its 2k' coordinates (Elo: (r, 1)), not the padding.
    found = identify(result.C[:, : 2 * max(result.k, 1)], state.log, m)
    summary = {
        "k": result.k,
        "log_likelihood": result.log_likelihood,
        "heldout": heldout,
        "restarts": result.restarts,
        "restart_max_abs_dp": result.restart_max_abs_dp,
        "k_selection": result.k_selection,
        "l2": result.l2,
        "l2_selection": result.l2_selection,
        "games": state.log.n_games,
        "players": m,
        "seconds": result.seconds,
        "identifiability": _identifiability_out(found, state.keys).model_dump(),
    } | ({"guard": guard} if guard else {})
    # Players without a game have nothing fitted (only the prior): they keep their initial vectors.
    played = np.bincount(state.log.member_player, minlength=m) > 0
    finished = {
        "status": "done",
        "progress": 1.0,
        "result": summary,
        "player_ids": state.player_ids[played].astype("<i8").tobytes(),
        "vectors": np.ascontiguousarray(result.C[played], dtype="<f8").tobytes(),
        "finished_at": datetime.now(UTC),
    }
    if params.auto:  # done and applied in one transaction: never seen done but not applied
        try:
            db.write(lambda session: _finish_and_apply(session, ladder.id, refit_id, finished))
            return
        except Conflict as exc:  # a late commit below the refit's last game: the next auto refit will retry
            logger.info("auto refit %s not applied: %s", refit_id, exc.detail)
    _update(db, refit_id, **finished)


def _finish_and_apply(session: Session, ladder_id: int, refit_id: int, finished: dict) -> None:
    apply_refit(session, session.get(Ladder, ladder_id), _set(session, refit_id, finished))


def _guard(ladder: Ladder, state: LadderLog, recent: LadderLog, params: RefitIn, progress) -> dict:
    """:func:`app.rating.refit.guard` on the latest games of the log.

    The window (:func:`app.rating.refit.guard_window`) never reaches back past
    the latest checkpoint, so the online forecasts it compares with
    are exactly those the ladder served (replayed from that checkpoint, as
    ``/audit`` does).
    """
    n = state.log.n_games
    window = guard_window(n, recent.log.n_games)
    if not 0 < window < n:
        return {"better": False, "window_games": window, "reason": "no games to compare on"}
    rate = learning_rate(ladder)
    served = rating.replay_history(recent.start, recent.log, rate, games0=recent.start_games).pair_p
    in_window = len(served) - (len(state.log.pair_a) - int(state.log.pair_ptr[n - window]))
    verdict = guard(
        state.log,
        state.start,  # from_start: the initial vectors
        window,
        served[in_window:],
        rate,
        ladder.k,
        params.select_k,
        params.l2,
        params.seed,
        progress,
    )
    return vars(verdict)


def _replay_metrics(ladder: Ladder, state: LadderLog, eta: float, k: int, params: RefitIn) -> dict:
    """Held-out quality of the online rule (SPEC §3-§6, §9 "Replay") over the training games, with η and k.

    It starts from the ladder's seeded initial vectors, drawn at ``k`` (the
    ladder's offset only applies at its own k).
    """
    train, test = split_games(state.log, params.holdout, params.seed)
    train_games = np.unique(np.searchsorted(state.log.pair_ptr, train, side="right") - 1)
    offset = ladder.init_offset if k == ladder.k else None
    start = rating.initial_vectors(state.keys, k, ladder.seed, ladder.init_scale, offset)
    C = rating.replay(start, state.log.take(train_games), rating.LearningRate(eta, ladder.eta_tau))
    return vars(evaluate(C, state.log, test))


def _update(db: Database, refit_id: int, **values) -> None:
    with db.writing() as session:
        _set(session, refit_id, values)


def _set(session: Session, refit_id: int, values: dict) -> Refit:
    job = session.get(Refit, refit_id)
    for name, value in values.items():
        setattr(job, name, value)
    job.updated_at = datetime.now(UTC)
    return job


def get_refit(session: Session, ladder: Ladder, refit_id: int) -> Refit:
    job = session.scalar(select(Refit).where(Refit.ladder_id == ladder.id, Refit.id == refit_id))
    if job is None:
        raise NotFound(f"There is no refit {refit_id} in ladder {ladder.slug!r}.")
    return job


def list_refits(session: Session, ladder: Ladder, limit: int) -> list[RefitOut]:
    query = select(Refit).where(Refit.ladder_id == ladder.id).order_by(Refit.id.desc()).limit(limit)
    jobs = session.scalars(query.options(defer(Refit.player_ids), defer(Refit.vectors)))
    return [refit_out(job) for job in jobs]


def refit_out(job: Refit) -> RefitOut:
    """The job as the API shows it; one whose process stopped (no progress for :data:`STALE`) shows as failed."""
    status, error = job.status, job.error
    if status in ("queued", "running") and datetime.now(UTC) - job.updated_at > STALE:
        minutes = int(STALE.total_seconds() // 60)
        status, error = "failed", f"no progress for {minutes} minutes: its server process stopped; start a new refit"
    return RefitOut(
        id=job.id,
        status=status,
        progress=job.progress,
        params=job.params,
        result=job.result,
        error=error,
        after_game=job.after_game_id,
        created_at=job.created_at,
        finished_at=job.finished_at,
        applied_at=job.applied_at,
    )


def apply_refit(session: Session, ladder: Ladder, job: Refit) -> CheckpointOut:
    """Checkpoint the refit's vectors after its last game and replay the later games on top (SPEC §9)."""
    if job.status != "done":
        raise Conflict(f"Refit {job.id} is {job.status}; only a finished refit can be applied.")
    dim = 2 * ladder.k
    rows = session.execute(
        select(Player.id, Player.initial).where(Player.ladder_id == ladder.id).order_by(Player.id).with_for_update()
    ).all()
    seen = session.scalar(
        select(func.count()).select_from(Game).where(Game.ladder_id == ladder.id, Game.id <= job.after_game_id)
    )
    if seen != job.result["games"]:
        raise Conflict("The log changed below the refit's last game (a late commit); run the refit again.")
    ids = np.array([r.id for r in rows], dtype=np.int64)
    fitted_ids = np.frombuffer(job.player_ids, dtype="<i8")
    fitted = np.frombuffer(job.vectors, dtype="<f8").reshape(-1, dim)
    start = np.frombuffer(b"".join(r.initial for r in rows), dtype="<f8").astype(np.float64).reshape(-1, dim)
    start[np.searchsorted(ids, fitted_ids)] = fitted
    checkpoint = Checkpoint(
        ladder_id=ladder.id,
        after_game_id=job.after_game_id,
        refit_id=job.id,
        player_ids=job.player_ids,
        vectors=job.vectors,
    )
    session.add(checkpoint)
    session.flush()
    state = read_log(session, ladder)  # now from this checkpoint: the games after the refit
    current = rating.replay(state.start, state.log, learning_rate(ladder), games0=state.start_games)
    blobs = [np.ascontiguousarray(row, dtype="<f8").tobytes() for row in current]
    bulk_update(session.connection(), Player.__table__, ("id", state.player_ids.tolist()), {"vector": blobs})
    job.applied_at = datetime.now(UTC)
    return CheckpointOut(id=checkpoint.id, refit=job.id, after_game=job.after_game_id, replayed_games=state.log.n_games)


def latest_refit(session: Session, ladder: Ladder) -> Refit | None:
    return session.scalar(
        select(Refit).where(Refit.ladder_id == ladder.id, Refit.status == "done").order_by(Refit.id.desc()).limit(1)
    )


#: Not-comparable keys of finished refits, by (id, finish time): a finished refit's report never changes.
_not_comparable: dict[tuple[int, datetime], frozenset[str]] = {}


def not_comparable_keys(session: Session, ladder: Ladder) -> frozenset[str]:
    """Players the latest finished refit found not comparable (they are provisional, SPEC §10).

    Read on every leaderboard and profile request, so each report is parsed once
    per process: its identifiability lists every player.
    """
    latest = session.execute(
        select(Refit.id, Refit.finished_at)
        .where(Refit.ladder_id == ladder.id, Refit.status == "done")
        .order_by(Refit.id.desc())
        .limit(1)
    ).first()
    if latest is None:
        return frozenset()
    keys = _not_comparable.get(tuple(latest))
    if keys is None:
        result = session.scalar(select(Refit.result).where(Refit.id == latest.id))
        keys = frozenset(row["key"] for row in result["identifiability"]["not_comparable"])
        if len(_not_comparable) >= 1024:
            _not_comparable.clear()
        _not_comparable[tuple(latest)] = keys
    return keys


def _identifiability_out(found, keys: list[str]) -> IdentifiabilityOut:
    return IdentifiabilityOut(
        unique=found.unique,
        comparable=[keys[i] for i in found.comparable],
        not_comparable=[
            NotComparable(key=keys[row["player"]], reason=row["reason"], direction=row["direction"])
            for row in found.not_comparable
        ],
        clique=[keys[i] for i in found.clique],
        components=[[keys[i] for i in group] for group in found.components],
    )


def identifiability(session: Session, ladder: Ladder, ratings: str) -> IdentifiabilityOut:
    """SPEC §10 on the current ratings, or on the latest finished refit's vectors."""
    state = read_log(session, ladder, from_start=True)
    C = state.stored.copy()
    if ratings == "refit":
        job = latest_refit(session, ladder)
        if job is None:
            raise Conflict("This ladder has no finished refit yet: POST …/refits first, or use ratings=current.")
        ids = np.frombuffer(job.player_ids, dtype="<i8")
        C[np.searchsorted(state.player_ids, ids)] = np.frombuffer(job.vectors, dtype="<f8").reshape(len(ids), -1)
    return _identifiability_out(identify(C, state.log, len(state.keys)), state.keys)


def intransitivity(session: Session, ladder: Ladder) -> IntransitivityOut:
    """I of the current A (SPEC §12) and of the empirical win rates on the observed pairs."""
    state = read_log(session, ladder, from_start=True)
    fitted = hodge_norms(state.stored)
    empirical, pairs = empirical_hodge_of(pair_counts(state.log, len(state.keys)))
    return IntransitivityOut(
        measure=fitted.intransitivity,
        transitive_norm=fitted.transitive_norm,
        cyclic_norm=fitted.cyclic_norm,
        empirical=None
        if empirical is None
        else {
            "measure": empirical.intransitivity,
            "transitive_norm": empirical.transitive_norm,
            "cyclic_norm": empirical.cyclic_norm,
            "pairs": pairs,
        },
    )


def canonical(session: Session, ladder: Ladder) -> CanonicalOut:
    """Per-player canonical disc coordinates and per-block summary (SPEC §12)."""
    state = read_log(session, ladder, from_start=True)
    form = canonical_form(state.stored)
    dominant = form.blocks[0] if form.blocks else None
    strength = form.disc_strength() if dominant is not None and dominant.transitive else None
    return CanonicalOut(
        blocks=[
            BlockOut(sigma=b.sigma, share=b.share, kind="transitive" if b.transitive else "cyclic") for b in form.blocks
        ],
        players=[
            CanonicalPlayer(
                key=key,
                coordinates=form.D[n].tolist(),
                strength=None if strength is None else float(strength[n]),
                consistency=None if strength is None else float(form.D[n, 1]),
            )
            for n, key in enumerate(state.keys)
        ],
    )


def disc_strength(C: np.ndarray) -> np.ndarray:
    """ũ = u/v of the dominant disc, or a 409 saying why there is none (SPEC §8)."""
    form = canonical_form(C)
    if not form.blocks or not form.blocks[0].transitive:
        share = form.blocks[0].share if form.blocks else 0.0
        raise Conflict(
            "The dominant disc of this ladder is cyclic "
            f"({share:.0%} of ‖A‖²): its players form a cycle, so no disc ordering exists. Use by=hodge or by=field."
        )
    return form.disc_strength()
