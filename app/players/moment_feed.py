"""The moments feed (``GET …/moments``): a page of a ladder's moments, newest first, optionally since a game or for
one player, looking through a bounded number of games per page; each page kept per process by the ladder's version
(:func:`page`), since many readers ask the same question between two games."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from app import storage
from app.core.cursors import decode_cursor, encode_cursor
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.core.schemas import MAX_ID
from app.players.moments import MOST_PER_GAME, Moment, moments
from app.players.schemas import MomentOut, MomentsPage

#: The games a page looks through at most, and in its first range per moment asked for (the next ones as many as
#: the moments found so far say it needs).
LOOK_THROUGH = 500
FIRST_RANGE = 25
GAMES_PER_MOMENT = 4
#: Pages kept per process (the oldest go first).
KEPT_PAGES = 256


def _valid(value: Any) -> bool:
    """[game number, index of the last moment of that game already given]."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 1 <= value[0] <= MAX_ID
        and 0 <= value[1] < MOST_PER_GAME
    )


def page(
    session: Session, ladder: LadderRow, limit: int, cursor: str | None, since: int | None, player: str | None
) -> MomentsPage:
    """:func:`feed`, kept per process: the same question at the same version of the ladder (every change a reader
    sees moves it) in the same week (a week's rise is told once the week is over) has the same answer."""
    now = datetime.now(UTC)
    key = (ladder.id, ladder.version, tuple(now.isocalendar())[:2], limit, cursor, since, player)
    pages = storage.cache.of(session, "moments")
    found = pages.get(key)
    if found is None:
        found = pages[key] = feed(session, ladder, limit, cursor, since, player, now)
        while len(pages) > KEPT_PAGES:
            pages.pop(next(iter(pages)), None)
    return found


def feed(
    session: Session,
    ladder: LadderRow,
    limit: int,
    cursor: str | None,
    since: int | None,
    player: str | None,
    now: datetime | None = None,
) -> MomentsPage:
    """The ladder's moments newest first (a game's in their order), of the games numbered above ``since``, those
    naming ``player`` only if given (404 if there is no such player), ``limit`` at most."""
    key = None
    if player is not None:
        key = ladder.player_key(player)
        if storage.players.get_row(session, ladder.id, key) is None:
            raise NotFound(f"There is no player {player!r} in ladder {ladder.slug!r}.")
    top, given = (storage.moments.last_number(session, ladder.id), -1) if cursor is None else (0, 0)
    if cursor is not None:
        top, given = decode_cursor(cursor, _valid)
    floor = (since or 0) + 1
    found: list[tuple[Moment, int]] = []
    hi, size = top, max(FIRST_RANGE, GAMES_PER_MOMENT * limit)
    while hi >= floor and len(found) <= limit and top - hi < LOOK_THROUGH:
        lo = max(floor, hi - size + 1, top - LOOK_THROUGH + 1)
        by_game: dict[int, list[Moment]] = {}
        for moment in moments(session, ladder, lo, hi, now):
            by_game.setdefault(moment.game, []).append(moment)
        for game in sorted(by_game, reverse=True):
            for index, moment in enumerate(by_game[game]):
                if (game == top and index <= given) or (key is not None and key not in moment.players):
                    continue
                found.append((moment, index))
        looked, hi = top - lo + 1, lo - 1
        size = max(FIRST_RANGE, (limit + 1 - len(found)) * looked // max(len(found), 1))  # at the rate found so far
    next_cursor = None
    if len(found) > limit:
        found = found[:limit]
        next_cursor = encode_cursor([found[-1][0].game, found[-1][1]])
    elif hi >= floor:  # the games below ``hi`` are not looked through yet
        next_cursor = encode_cursor([hi + 1, MOST_PER_GAME - 1])
    return MomentsPage(items=[MomentOut(**vars(m)) for m, _ in found], next_cursor=next_cursor)
