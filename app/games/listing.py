"""Reading a ladder's games: a page of them, or one by its number."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app import storage
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.core.schemas import Page
from app.games.answers import field_mean, stored_body


def list_games(session: Session, ladder: LadderRow, limit: int, cursor: int | None) -> Page[dict]:
    """A page of the ladder's games, newest first: ``limit`` of them, fewer where they hold more than
    :data:`~app.storage.games.PAGE_APPEARANCES` players (``next_cursor`` then goes on from the last)."""
    records, more = storage.games.page(session, ladder.id, limit, cursor)
    field = field_mean(session, ladder) if records else None
    items = [] if field is None else [stored_body(r, field) for r in records]
    return Page[dict](items=items, next_cursor=str(items[-1]["id"]) if more else None)


def get_game(session: Session, ladder: LadderRow, number: int) -> dict:
    record = storage.games.get(session, ladder.id, number)
    if record is None:
        raise NotFound(f"There is no game {number} in ladder {ladder.slug!r}.")
    return stored_body(record, field_mean(session, ladder))
