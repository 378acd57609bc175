"""A ladder's auto-refit policy: a guarded background refit as the log grows (issue 6, SPEC §9).

When a ladder with ``auto_refit`` has at least :data:`FIRST_GAMES` games and
its log has grown by :data:`GROWTH` since the last auto refit started, the
service starts an ``auto`` refit (k chosen among 0..k).  The job applies
itself as a checkpoint only if it would have predicted the latest games
better than the online ratings did (``service._guard``); the per-game update
stays the normalised, distributed rule.  ``bench/quality.py`` measured the
policy and chose these numbers.

Every worker process counts the games it posts per ladder and looks at the
database only every :data:`CHECK_EVERY` games, so posting stays cheap.  Two
workers may rarely start a refit each; both are guarded, and applying one
after the other is still exact.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import defer

from app.analysis import service
from app.analysis.schemas import RefitIn
from app.db import Database
from app.models import Game, Ladder, Refit

logger = logging.getLogger("melo")
FIRST_GAMES = 1_000
GROWTH = 0.2
CHECK_EVERY = 100

_posted: dict[int, int] = {}
_lock = threading.Lock()


def games_posted(db: Database, ladder_id: int, games: int) -> None:
    """Count ``games`` just committed to a ladder; every :data:`CHECK_EVERY`, start an auto refit if one is due."""
    with _lock:
        count = _posted.get(ladder_id, 0) + games
        _posted[ladder_id] = 0 if count >= CHECK_EVERY else count
    if count >= CHECK_EVERY:
        try:
            start_if_due(db, ladder_id)
        except Exception:  # never fail a game post for the policy's sake
            logger.exception("auto refit check of ladder %s failed", ladder_id)


def start_if_due(db: Database, ladder_id: int) -> int | None:
    """Start an auto refit if the policy says so; return its id."""
    with db.writing() as session:
        ladder = session.get(Ladder, ladder_id)
        if ladder is None or not ladder.auto_refit:
            return None
        games = session.scalar(select(func.count()).select_from(Game).where(Game.ladder_id == ladder_id)) or 0
        recent = session.scalars(
            select(Refit)
            .where(Refit.ladder_id == ladder_id)
            .order_by(Refit.id.desc())
            .limit(20)
            .options(defer(Refit.result), defer(Refit.player_ids), defer(Refit.vectors))  # large, not needed
        ).all()
        last = next((job for job in recent if job.params.get("auto")), None)
        running = last is not None and last.status in ("queued", "running")
        if running and datetime.now(UTC) - last.updated_at <= service.STALE:
            return None
        seen = 0 if last is None else last.log_games or 0
        if games < max(FIRST_GAMES, (1 + GROWTH) * seen):
            return None
        params = RefitIn(select_k=list(range(ladder.k + 1)), restarts=1, auto=True)
        job = service.start_refit(session, ladder, params)
        job.log_games = games
        job_id = job.id
    service.submit(db, job_id)
    return job_id
