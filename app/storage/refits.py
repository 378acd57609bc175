"""Refit jobs and the checkpoints that apply them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import and_, func, or_, select
from sqlalchemy import update as orm_update
from sqlalchemy.orm import Session, defer

from app.storage import cache, codec
from app.storage.sql import rowcount
from app.storage.tables import Checkpoint, Game, Refit


def insert(
    session: Session,
    ladder_id: int,
    params: dict,
    owner: str,
    log_games: int | None = None,
    log_comparisons: int | None = None,
    after_game_id: int | None = None,
) -> Refit:
    job = Refit(
        ladder_id=ladder_id,
        status="queued",
        progress=0.0,
        params=params,
        log_games=log_games,
        log_comparisons=log_comparisons,
        after_game_id=after_game_id,
        owner=owner,
    )
    session.add(job)
    session.flush()
    return job


def unfinished(session: Session) -> list[tuple[int, int, str, str | None]]:
    """(ladder id, id, status, owner) of every job queued or running, of every ladder."""
    query = select(Refit.ladder_id, Refit.id, Refit.status, Refit.owner).where(Refit.status.in_(("queued", "running")))
    rows = session.execute(query.order_by(Refit.id))
    return [(ladder_id, refit_id, state, owner) for ladder_id, refit_id, state, owner in rows]


def take_over(session: Session, ladder_id: int, refit_id: int, owner: str | None, new_owner: str) -> bool:
    """Make ``new_owner`` the job's owner if ``owner`` still is (one of several starting servers wins)."""
    which = (Refit.id == refit_id, Refit.ladder_id == ladder_id, Refit.owner == owner, Refit.status == "queued")
    query = Refit.__table__.update().where(*which)
    return rowcount(session, query.values(owner=new_owner, updated_at=datetime.now(UTC))) == 1


def cancel_auto(session: Session, ladder_id: int, why: str) -> list[int]:
    """Cancel the ladder's auto refits queued or running (their processes see it and stop): their ids."""
    query = select(Refit.id, Refit.params).where(Refit.ladder_id == ladder_id, Refit.status.in_(("queued", "running")))
    ids = [refit_id for refit_id, params in session.execute(query) if params.get("auto")]
    if ids:
        now = datetime.now(UTC)
        values = {"status": "cancelled", "error": why, "finished_at": now, "updated_at": now}
        unfinished = Refit.status.in_(("queued", "running"))
        which = (Refit.ladder_id == ladder_id, Refit.id.in_(ids), unfinished)
        session.execute(Refit.__table__.update().where(*which).values(**values))
    return ids


def advance(session: Session, ladder_id: int, refit_id: int, status: str, values: dict) -> bool:
    """Set fields of the ladder's job if it is still ``status`` (not cancelled meanwhile): whether it was."""
    which = (Refit.id == refit_id, Refit.ladder_id == ladder_id, Refit.status == status)
    query = Refit.__table__.update().where(*which)
    return rowcount(session, query.values(**values, updated_at=datetime.now(UTC))) == 1


def status(session: Session, ladder_id: int, refit_id: int) -> str | None:
    return session.scalar(select(Refit.status).where(Refit.id == refit_id, Refit.ladder_id == ladder_id))


def get(session: Session, ladder_id: int, refit_id: int) -> Refit | None:
    """The ladder's job ``refit_id``, or None."""
    return session.scalar(select(Refit).where(Refit.id == refit_id, Refit.ladder_id == ladder_id))


def update(session: Session, ladder_id: int, refit_id: int, values: dict) -> None:
    """Set fields of the ladder's job (and its ``updated_at``), on the job this session holds too (an ORM-enabled
    UPDATE; a change flushed by the ORM's unit of work would match the mapped primary key, ``id``, alone)."""
    query = orm_update(Refit).where(Refit.id == refit_id, Refit.ladder_id == ladder_id)
    session.execute(query.values(**values, updated_at=datetime.now(UTC)))


def recent(
    session: Session, ladder_id: int, limit: int, reports: bool = True, before: int | None = None
) -> list[Refit]:
    """The latest jobs (before the job ``before``), newest first, without their vectors (and without their reports
    unless asked)."""
    query = select(Refit).where(Refit.ladder_id == ladder_id)
    if before is not None:
        query = query.where(Refit.id < before)
    query = query.order_by(Refit.id.desc()).limit(limit)
    blobs = (Refit.player_ids, Refit.vectors, Refit.not_comparable_ids, Refit.outside_field_ids)
    heavy = [defer(column) for column in blobs] + ([] if reports else [defer(Refit.result)])
    return list(session.scalars(query.options(*heavy)))


def active(session: Session, ladder_id: int | None, queued_since: datetime, running_since: datetime) -> int:
    """Jobs (of one ladder, or of all) queued since ``queued_since`` or running with progress since
    ``running_since``: the others lost their server."""
    alive = or_(
        and_(Refit.status == "queued", Refit.updated_at >= queued_since),
        and_(Refit.status == "running", Refit.updated_at >= running_since),
    )
    query = select(func.count()).select_from(Refit).where(alive)
    if ladder_id is not None:
        query = query.where(Refit.ladder_id == ladder_id)
    return session.scalar(query) or 0


def latest_done(session: Session, ladder_id: int) -> Refit | None:
    return session.scalar(
        select(Refit).where(Refit.ladder_id == ladder_id, Refit.status == "done").order_by(Refit.id.desc()).limit(1)
    )


def _none() -> np.ndarray:
    return np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Placement:
    """What the latest applied refit found about who its results place (mathematics §10), as sorted player ids."""

    #: Not comparable on every coordinate: their cyclic coordinates are not pinned down yet.
    not_comparable: np.ndarray = field(default_factory=_none)
    #: Outside the largest strongly connected component of the "beat" graph: not even an Elo-scale rating
    #: places them against the rest (they never both beat and lost to, or drew with, that field).
    outside_field: np.ndarray = field(default_factory=_none)

    @staticmethod
    def of(not_comparable: np.ndarray, outside_field: np.ndarray) -> Placement:
        return Placement(np.unique(not_comparable).astype(np.int64), np.unique(outside_field).astype(np.int64))

    def packed(self) -> dict[str, bytes]:
        """The columns of a refit that hold it."""
        return {
            "not_comparable_ids": codec.pack_ids(self.not_comparable),
            "outside_field_ids": codec.pack_ids(self.outside_field),
        }

    def is_outside(self, ids: np.ndarray) -> np.ndarray:
        return codec.among(ids, self.outside_field)

    def is_not_comparable(self, ids: np.ndarray) -> np.ndarray:
        return codec.among(ids, self.not_comparable)


def placement(session: Session, ladder_id: int) -> Placement:
    """:class:`Placement` from the latest applied refit (a refit nobody applied changes nothing shown); each
    is read once per process."""
    latest = session.execute(
        select(Refit.id, Refit.applied_at)
        .where(Refit.ladder_id == ladder_id, Refit.status == "done", Refit.applied_at.is_not(None))
        .order_by(Refit.applied_at.desc(), Refit.id.desc())
        .limit(1)
    ).first()
    if latest is None:
        return Placement()
    read = cache.of(session, "placement")  # by (refit id, applied at): an applied refit never changes
    found = read.get(tuple(latest))
    if found is None:
        query = select(Refit.not_comparable_ids, Refit.outside_field_ids).where(
            Refit.id == latest.id, Refit.ladder_id == ladder_id
        )
        not_comparable, outside = session.execute(query).one()
        found = Placement(codec.unpack_ids(not_comparable or b""), codec.unpack_ids(outside or b""))
        if len(read) >= 1024:
            read.clear()
        read[tuple(latest)] = found
    return found


def latest_checkpoint(session: Session, ladder_id: int) -> Checkpoint | None:
    """The checkpoint the ratings replay from: the latest one not superseded by a void."""
    query = select(Checkpoint).where(Checkpoint.ladder_id == ladder_id, Checkpoint.superseded_at.is_(None))
    return session.scalar(query.order_by(Checkpoint.id.desc()).limit(1))


def supersede_checkpoints(session: Session, ladder_id: int, game_id: int) -> int:
    """Checkpoints that saw game ``game_id`` (now voided) are never replayed from again; how many there were.

    When there were some, the ratings came through one of them: the caller replays the whole log from the
    latest checkpoint left (:func:`app.domain.rerating.replay_log`), not only what the change reaches."""
    saw_it = (
        Checkpoint.ladder_id == ladder_id,
        Checkpoint.after_game_id >= game_id,
        Checkpoint.superseded_at.is_(None),
    )
    update = Checkpoint.__table__.update().where(*saw_it).values(superseded_at=datetime.now(UTC))
    return rowcount(session, update)


def checkpoint_of(ladder_id: int, refit_id: int, after_game_id: int, finished: dict) -> Checkpoint:
    """The checkpoint a finished refit (``finished``: its ``player_ids``, ``vectors`` and ``result``) would
    add, not stored."""
    seats = (finished.get("result") or {}).get("seats")
    return Checkpoint(
        ladder_id=ladder_id,
        after_game_id=after_game_id,
        refit_id=refit_id,
        player_ids=finished["player_ids"],
        vectors=finished["vectors"],
        seat_state=seats,
    )


def add_checkpoint(session: Session, ladder_id: int, job: Refit, variances: np.ndarray | None = None) -> Checkpoint:
    """The checkpoint of the refit ``job``, stored (with the players' ``variances`` there, under the variance
    rule)."""
    # A finished refit has its log's end (set when it ran) and its fitted rows (set with "done").
    assert job.after_game_id is not None and job.player_ids is not None and job.vectors is not None
    seats = (job.result or {}).get("seats")
    return insert_checkpoint(
        session, ladder_id, job.after_game_id, job.player_ids, job.vectors, job.id, seats, variances
    )


def insert_checkpoint(
    session: Session,
    ladder_id: int,
    after_game_id: int,
    player_ids: bytes,
    vectors: bytes,
    refit_id: int | None,
    seat_state: dict | None = None,
    variances: np.ndarray | None = None,
) -> Checkpoint:
    """Vectors (packed by :mod:`app.storage.codec`) that replace the ratings of ``player_ids`` after a game, and
    the learned seats' state (``{"advantage": [...], "information": [...]}``) if the ladder has seats; under the
    variance rule the players' ``variances`` there (mathematics §3b)."""
    checkpoint = Checkpoint(
        ladder_id=ladder_id,
        after_game_id=after_game_id,
        refit_id=refit_id,
        player_ids=player_ids,
        vectors=vectors,
        seat_state=seat_state,
        variances=None if variances is None else codec.pack(variances),
    )
    session.add(checkpoint)
    session.flush()
    return checkpoint


def replayed_checkpoints(session: Session, ladder_id: int) -> list[Checkpoint]:
    """The checkpoints the ratings went through, in log order: the latest one not superseded and those before
    it in the log that were applied before it (later in the log and applied earlier: replaced by it)."""
    live = session.scalars(
        select(Checkpoint)
        .where(Checkpoint.ladder_id == ladder_id, Checkpoint.superseded_at.is_(None))
        .order_by(Checkpoint.id.desc())
    ).all()
    kept: list[Checkpoint] = []
    for checkpoint in live:
        if not kept or checkpoint.after_game_id < kept[-1].after_game_id:
            kept.append(checkpoint)
    return kept[::-1]


def games_up_to(session: Session, ladder_id: int, game_id: int) -> int:
    """Games that count (not voided) of the ladder with id ≤ ``game_id`` (a late commit or a void changes this)."""
    counted = (Game.ladder_id == ladder_id, Game.id <= game_id, Game.voided_at.is_(None))
    return session.scalar(select(func.count()).select_from(Game).where(*counted)) or 0
