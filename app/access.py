"""Finding a ladder for a request, and checking the key that writes to it (shared by every domain)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app import storage
from app.errors import NotFound
from app.security import require
from app.storage.ladders import LadderRow


def ladder_for_read(session: Session, slug: str, fresh: bool = False) -> LadderRow:
    """The ladder (404 if there is none): from this process's cache, whose id and rating settings never change,
    or as it is now if ``fresh``."""
    ladder = storage.ladders.by_slug(session, slug) if fresh else storage.ladders.cached(session, slug)
    if ladder is None:
        raise NotFound(f"There is no ladder {slug!r}.")
    return ladder


def ladder_for_write(session: Session, slug: str, bearer: str) -> LadderRow:
    """The ladder as it is now, if ``bearer`` is its write key (404, 403 otherwise)."""
    ladder = ladder_for_read(session, slug, fresh=True)
    may_write(ladder, bearer)
    return ladder


def may_write(ladder: LadderRow, bearer: str) -> None:
    """403 unless ``bearer`` is the ladder's write key."""
    require(bearer, ladder.write_key_hash, "write key of this ladder")
