"""Applying a finished refit (mathematics §9): a checkpoint, with the games posted since replayed on top.

The refit's vectors replace the ratings as of the last game it saw, and the
games posted since are replayed on top with the online rule, so ``/audit``
(which replays from the latest checkpoint) stays exact.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.analysis.refit_rate import rate_applies, rate_settings, set_rate
from app.analysis.schemas import CheckpointOut
from app.core.db import Database
from app.core.errors import Conflict
from app.core.ladder import LadderRow
from app.domain.rerating import (
    Prepared,
    checkpoint_variances,
    lock_ladder,
    prepared_replay,
    replay_log,
    replay_prepared,
)
from app.storage.refits import Refit


def prepare_apply(db: Database, ladder: LadderRow, job: Refit, until: float | None = None) -> Prepared | None:
    """The replay of the games after a finished refit's last game, from its vectors, computed in a read snapshot
    (no lock held) for :func:`apply_refit`; None if it is not finished (:func:`apply_refit` says so)."""
    if job.status != "done":
        return None
    assert job.after_game_id is not None  # set when it ran (a finished refit's log end)
    finished = {"player_ids": job.player_ids, "vectors": job.vectors, "result": job.result}
    checkpoint = storage.refits.checkpoint_of(ladder.id, job.id, job.after_game_id, finished)
    rate: dict | None = (job.result or {}).get("rate")
    # At the rate it will set.
    settings = rate_settings(rate, ladder) if rate is not None and rate_applies(ladder, rate) else None
    return prepared_replay(db, ladder.id, checkpoint, settings, until)


def apply_refit(session: Session, ladder: LadderRow, job: Refit, prepared: Prepared | None = None) -> CheckpointOut:
    """Checkpoint the refit's vectors after its last game and replay the later games on top (mathematics §9); their
    history shows the replayed vectors.  A learning rate the refit chose (``tune_rate``) is applied with it, unless
    the ladder's rate is pinned or was changed since (:func:`app.analysis.refit_rate.set_rate`).

    With ``prepared`` (:func:`prepare_apply`), the replay up to the newest game it saw is only written here,
    and the games committed since replayed on top: the writer's lock is held for writes, not for reading and
    replaying the log (a stale one is dropped and the log replayed here)."""
    if job.status != "done":
        raise Conflict(f"Refit {job.id} is {job.status}; only a finished refit can be applied.", field="refit_id")
    # A finished refit has its log's end (set when it ran), its result and its fitted rows (set with "done").
    assert job.after_game_id is not None and job.result is not None and job.player_ids is not None
    if prepared is not None and (prepared.checkpoint is None or prepared.checkpoint.refit_id != job.id):
        prepared = None
    lock_ladder(session, ladder.id, prepared)
    ladder = storage.ladders.by_id(session, ladder.id) or ladder  # its settings as they are under the lock
    if storage.refits.games_up_to(session, ladder.id, job.after_game_id) != job.result["games"]:
        raise Conflict(
            "The log changed below the refit's last game (a late commit or a void); run the refit again.",
            field="refit_id",
        )
    pulled = [[b, p] for b, p in storage.seasons.pulls(session, ladder.id) if b <= job.after_game_id]
    if pulled != job.result.get("season_pulls", []):
        raise Conflict(
            "A season closed with a pull since the refit read the log (it weighs the games by the pulls); run it "
            "again.",
            field="refit_id",
        )
    fitted = storage.codec.unpack_ids(job.player_ids)
    if not storage.players.all_exist(session, ladder.id, fitted):
        raise Conflict("Players the refit fitted were merged since; run the refit again.", field="refit_id")
    if len(job.vectors or b"") != 8 * 2 * ladder.k * len(fitted):
        raise Conflict(
            f"The refit fitted vectors of another k than the ladder's k = {ladder.k}; run it again.", field="refit_id"
        )
    new_rate = set_rate(session, ladder, job)
    if new_rate:  # the games after the checkpoint are replayed at the new rate
        ladder = storage.ladders.by_id(session, ladder.id) or ladder
    variances = checkpoint_variances(session, ladder, job.player_ids, job.after_game_id)
    checkpoint = storage.refits.add_checkpoint(session, ladder.id, job, variances)
    replayed = None
    if prepared is not None:
        replayed = replay_prepared(session, ladder, prepared)  # stale: None
    if replayed is None:
        replayed = replay_log(session, ladder)  # now from this checkpoint: the games after the refit
    storage.refits.update(session, ladder.id, job.id, {"applied_at": datetime.now(UTC)})
    storage.events.add(session, ladder.id, "refit", {"refit": job.id})
    storage.ladders.bump(session, [ladder.id], reset=new_rate)
    after_game = storage.games.number_of(session, ladder.id, job.after_game_id) or 0
    return CheckpointOut(id=checkpoint.id, refit=job.id, after_game=after_game, replayed_games=replayed)
