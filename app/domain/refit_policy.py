"""When a ladder's next auto refit is due (mathematics §9): what the policy (:mod:`app.analysis.auto`) and a
ladder's own answer (its ``auto_refit_note``) both read."""

from __future__ import annotations

import math

from sqlalchemy.orm import Session

from app import storage
from app.core.ladder import LadderRow
from app.storage.refits import Refit

#: The first auto refit starts at this many comparisons (pairs of sides: a two-sided game is one, a free-for-all
#: of N sides N(N - 1)/2), the next each time they have grown by GROWTH since the log the last one read
#: (``bench/quality.py`` measured the policy on two-sided games and chose these numbers).
FIRST_COMPARISONS = 1_000
GROWTH = 0.2


def policy(session: Session, ladder_id: int) -> tuple[Refit | None, int, int]:
    """The latest auto refit, how many in a row failed, and the comparisons (:func:`app.storage.ladders.comparisons`)
    at which the next one is due: when they have grown by :data:`GROWTH` since the log the last one read (the
    start of the log that reached its due count: :func:`app.analysis.refit_run.due_part`), and twice as
    much more after each failure in a row (a ladder too large for a refit does not start one at every check).
    What a free-for-all tells is its pairs: counted in games, a log of 676 events of 27 players (151,540 pairs)
    would never reach its first refit."""
    recent = [job for job in storage.refits.recent(session, ladder_id, 20, reports=False) if job.params.get("auto")]
    last = recent[0] if recent else None
    failures = next((n for n, job in enumerate(recent) if job.status != "failed"), len(recent))
    # A job started before comparisons were kept has its games (as many, on a ladder of two-sided games).
    seen = 0 if last is None else last.log_comparisons or last.log_games or 0
    return last, failures, max(FIRST_COMPARISONS, math.ceil((1 + GROWTH * 2**failures) * seen))


def due_point(next_at: int, compared: int) -> int:
    """The count an auto refit due at ``next_at`` comparisons reads the log up to, now that it holds ``compared``
    (≥ ``next_at``): the last of next_at, (1 + :data:`GROWTH`) times it, and so on, that the log has reached.  A
    refit that ran while several were passed, or an import of a whole history, reads nearly all of it; a ladder
    whose refits keep up reads each point in turn: the same points however busy the server was."""
    due = next_at
    while (after := math.ceil((1 + GROWTH) * due)) <= compared:
        due = after
    return due


def note(session: Session, ladder: LadderRow) -> str | None:
    """What a ladder's admin should know of its auto refits: why the latest failed, and when the next starts."""
    if not ladder.auto_refit:
        return None
    last, failures, next_at = policy(session, ladder.id)
    if last is None or failures == 0:
        return None
    times = "the latest auto refit" if failures == 1 else f"the latest {failures} auto refits"
    return f"{times} failed ({last.error}); the next starts at {next_at:,} comparisons (a two-sided game is one)"
