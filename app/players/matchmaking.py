"""Matchmaking: whom a player should play next, for even chances or to become comparable (mathematics §7, §10)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core import deadline
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.players import rivals
from app.players.records import is_listed, listed_rows, provisional, row_of
from app.players.stakes import stakes
from app.rating.identifiability import Results, comparing_opponents
from app.rating.model import omega_apply
from app.rating.ranking import ELO_RESULTS
from app.storage.read_model import Table

#: Opponents are suggested from the best this many (later pages of the list end there).
MAX_OPPONENTS = 1000
#: A player's last this many games say whom they played lately.
LATELY = rivals.LATELY


def opponents_page(
    session: Session, ladder: LadderRow, key: str, limit: int, offset: int, purpose: str, now: datetime | None = None
) -> dict:
    """The page of :func:`opponents` after the first ``offset`` (a page's cursor is where the next starts), each
    with what is at stake in a singles game now (:mod:`app.players.stakes`), the games the two have played
    together, and why they are suggested."""
    end = min(offset + limit, MAX_OPPONENTS)
    table = storage.read_model.current_table(session, ladder)
    i = row_of(table, ladder, key)
    games = storage.games.dated_of_player(session, ladder.id, int(table.ids[i]))
    met = rivals.meetings(games, str(table.keys[i]))
    found = opponents(session, ladder, table, i, end + 1, purpose, met, games)
    more = len(found) > end and end < MAX_OPPONENTS
    page = found[offset:end]
    rows = np.array([table.row(item["key"]) for item in page], dtype=np.int64)
    if_win, if_lose = stakes(table, ladder, i, rows, now or datetime.now(UTC))
    lately = _lately(met)
    for item, j, win, lose in zip(page, rows.tolist(), if_win.tolist(), if_lose.tolist(), strict=True):
        together = met.get(item["key"])
        item |= {
            "if_win": win,
            "if_lose": lose,
            "games_together": 0 if together is None else together.games,
            "last_played": None if together is None else iso(together.last),
            "reason": _reason(table, ladder, i, j, item["probability"], lately.get(item["key"], 0), together),
        }
    return {"items": page, "next_cursor": str(end) if more else None}


def opponents(
    session: Session,
    ladder: LadderRow,
    table: Table,
    i: int,
    limit: int,
    purpose: str,
    met: dict[str, rivals.Meetings],
    games: list[tuple[datetime, dict]],
) -> list[dict]:
    """The players against whom player ``i`` (a row of ``table``) has the most even chances (mathematics §7); for
    ``purpose="comparable"``, those whose games would best make a player who is not yet comparable comparable
    (mathematics §10); for ``purpose="next"``, the games that would tell the most about the player now
    (:func:`_next`: even, against a settled rating, an opponent not met lately; ``met``: the player's
    meetings, in ``games``, theirs that count)."""
    if purpose == "comparable":
        found = _comparing(table, games, is_listed(table, ladder), i, limit)
        if found is not None:
            return found
    active = listed_rows(table, ladder)  # inactive players are not suggested
    best: np.ndarray | list[int]
    if purpose == "next":
        best = _next(table, ladder, i, active, limit, _lately(met))
    else:
        best = rating.balanced_opponents(table.C, i, limit=limit, candidates=active) if len(table.keys) > 1 else []
    probs = rating.pair_probability(table.C, np.full(len(best), i), np.asarray(best, dtype=int))
    return [
        {"key": table.keys[j], "name": table.names[j], "probability": float(p), "gain": None}
        for j, p in zip(np.asarray(best, dtype=int).tolist(), probs.tolist(), strict=True)
    ]


def _lately(met: dict[str, rivals.Meetings]) -> dict[str, int]:
    """How many of the player's last :data:`LATELY` games each opponent played against them."""
    return {key: found.recent for key, found in met.items() if found.recent}


def _next(
    table: Table, ladder: LadderRow, i: int, candidates: np.ndarray, limit: int, lately: dict[str, int]
) -> list[int]:
    """The ``limit`` best opponents for player ``i`` now, best first: each scored by how much a game tells (an
    even game the most: 4p(1 - p), 1 at p = ½; for a provisional player any result counts, so evenness matters
    half), halved against a provisional opponent (their rating settles nobody's), and divided by 1 + the games
    against them among the player's last :data:`LATELY`.  One vectorised pass over the listed players."""
    pool = candidates[candidates != i]
    if len(pool) == 0:
        return []
    p = rating.pair_probability(table.C, np.full(len(pool), i), pool)
    even = 4.0 * p * (1.0 - p)
    unsure = provisional(table, ladder.k)
    if unsure[i]:
        even = 0.5 + 0.5 * even
    score = even * np.where(unsure[pool], 0.5, 1.0)
    if lately:
        recent = np.zeros(len(table.keys))
        for key, games in lately.items():
            row = table.row(key)
            if row is not None:
                recent[row] = games
        score = score / (1.0 + recent[pool])
    limit = min(limit, len(pool))
    top = np.argpartition(-score, limit - 1)[:limit]
    return pool[top[np.lexsort((table.key_rank()[pool[top]], -score[top]))]].tolist()


def _reason(
    table: Table, ladder: LadderRow, i: int, j: int, p: float, recent: int, together: rivals.Meetings | None
) -> str:
    """Why a game against player ``j`` is worth playing for player ``i``, in words."""
    comparisons = int(table.counts[i, 4])
    if comparisons < ELO_RESULTS:
        need = ELO_RESULTS - comparisons
        first = f"Counts towards getting you ranked: {need} more game{'s' if need != 1 else ''} to go"
    elif provisional(table, ladder.k)[i]:
        first = "Helps place your rating: a win and a loss (or a draw) against the ranked players place it"
    elif abs(p - 0.5) < 0.1:
        first = f"An even game: your chance to win is {p:.0%}"
    else:
        first = f"Your chance to win is {p:.0%}"
    parts = [first]
    if provisional(table, ladder.k)[j]:
        parts.append("their own rating is not settled yet")
    if together is None or together.against == 0:
        parts.append("you have not played against them yet")
    elif recent:
        parts.append(f"you played them in {recent} of your last {LATELY} games")
    else:
        parts.append(f"not in your last {LATELY} games")
    return "; ".join(parts) + "."


def _comparing(
    table: Table, games: list[tuple[datetime, dict]], listed: np.ndarray, i: int, limit: int
) -> list[dict] | None:
    """Opponents along the witness direction of player ``i``'s results (in ``games``, theirs that count); None if
    they are comparable already."""
    W = np.zeros((table.C.shape[1], 0))
    if games:
        W = _results(table, games, i).directions(omega_apply(table.C), i)
    found = comparing_opponents(table.C, i, W, limit, among=listed)
    if found is None:
        return None
    best, gain = found
    probs = rating.pair_probability(table.C, np.full(len(best), i), best)
    return [
        {"key": table.keys[j], "name": table.names[j], "probability": float(p), "gain": float(g)}
        for j, p, g in zip(best.tolist(), probs.tolist(), gain.tolist(), strict=True)
    ]


def _results(table: Table, games: list[tuple[datetime, dict]], i: int) -> Results:
    """Player ``i``'s distinct results in ``games``: each player of every other side, and ``i``'s score against
    them.  Read from the payloads in one pass, costing the players ``i`` met (a game of 64 teams of 32 is 2,016 of
    them), with a budget check every few games."""
    key = str(table.keys[i])
    met: list[str] = []
    sizes: list[int] = []
    scores: list[float] = []
    for _, payload in deadline.steps(games):
        sides, ranks = payload["sides"], payload["ranks"]
        mine = next((s for s, players in enumerate(sides) if key in players), None)
        if mine is None:
            continue
        for s, players in enumerate(sides):
            if s != mine:
                met += players
                sizes.append(len(players))
                scores.append(1.0 if ranks[mine] < ranks[s] else 0.5 if ranks[mine] == ranks[s] else 0.0)
    rows = np.array([-1 if (row := table.row(other)) is None else row for other in met], dtype=np.int64)
    score = np.repeat(np.array(scores), np.array(sizes, dtype=np.int64))
    return Results.against(i, rows[rows >= 0], score[rows >= 0])  # (a key no longer in the table: not counted)
