"""Head to head: a player's record against and with each other player, singles, doubles and free-for-alls apart,
read from the games of theirs that count."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from app import storage
from app.core import deadline
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.players.records import row_of
from app.storage.read_model import Table

#: The kinds of meeting a head-to-head record keeps apart.
KINDS = ("singles", "doubles", "partners", "free_for_all")
#: A player's last this many games say whom they played lately.
LATELY = 10
_COLUMN = {1: 1, 0: 2, -1: 3}  # a result's column in (games, wins, draws, losses)


@dataclass
class Meetings:
    """What one player's games say about another player: a record (games, wins, draws, losses) for each of
    :data:`KINDS`, and when they last met."""

    records: dict[str, list[int]] = field(default_factory=lambda: {kind: [0, 0, 0, 0] for kind in KINDS})
    last: datetime | None = None
    recent: int = 0  # games against them among the player's last LATELY

    def add(self, kind: str, result: int, when: datetime) -> None:
        record = self.records[kind]
        record[0] += 1
        record[_COLUMN[result]] += 1
        self.last = when if self.last is None or when > self.last else self.last

    @property
    def games(self) -> int:
        return sum(record[0] for record in self.records.values())

    @property
    def against(self) -> int:
        """Games on opposite sides (every kind but partners)."""
        return self.games - self.records["partners"][0]


def meetings(games: list[tuple[datetime, dict]], key: str) -> dict[str, Meetings]:
    """Everyone ``key`` met in ``games`` ((played_at, stored payload) in log order), by key: singles (two sides
    of one player), doubles (two sides, a team on either: those on the other side), partners (on ``key``'s own
    side, the side's result) and free-for-alls (three sides or more: who finished ahead, level or behind); and how
    many of ``key``'s last :data:`LATELY` games were against each (``recent``)."""
    met: dict[str, Meetings] = {}
    lately = len(games) - LATELY
    for number, (when, payload) in enumerate(games):
        if number % 64 == 0:
            deadline.check()  # a player's thousands of games of hundreds of players each: stop when asked
        sides, ranks = payload["sides"], payload["ranks"]
        mine = next((s for s, players in enumerate(sides) if key in players), None)
        if mine is None:  # the log names every player by their key now; nothing to count if it does not
            continue
        n = len(sides)
        kind = "free_for_all" if n > 2 else "doubles" if any(len(players) > 1 for players in sides) else "singles"
        side_result = _side_result(ranks, mine)
        for s, players in enumerate(sides):
            for other in players:
                if other == key:
                    continue
                found = met.setdefault(other, Meetings())
                if s == mine:
                    found.add("partners", side_result, when)
                    continue
                found.add(kind, _compare(ranks[mine], ranks[s]), when)  # a lower rank finished ahead
                found.recent += number >= lately
    return met


def _compare(mine: float, theirs: float) -> int:
    """1 if the rank ``mine`` is ahead of (below) ``theirs``, 0 level, -1 behind."""
    return (mine < theirs) - (mine > theirs)


def _side_result(ranks: list[float], side: int) -> int:
    """A side's result as a record counts it (:func:`app.rating.results` of its rank-share score): its points
    (a side finished behind 2, a tie 1) above, at or below N - 1, the points of the average share 1/N."""
    points = sum(1 + _compare(ranks[side], rank) for other, rank in enumerate(ranks) if other != side)
    return _compare(len(ranks) - 1, points)


def meetings_of(session: Session, ladder: LadderRow, table: Table, n: int) -> dict[str, Meetings]:
    """:func:`meetings` of player ``n`` (a row of ``table``), over all their games that count (one read of
    them)."""
    games = storage.games.dated_of_player(session, ladder.id, int(table.ids[n]))
    return meetings(games, str(table.keys[n]))


def _record(values: list[int]) -> dict:
    games, wins, draws, losses = values
    return {"games": games, "wins": wins, "draws": draws, "losses": losses}


def _most_met_first(item: tuple[str, Meetings]) -> tuple[int, float, str]:
    """Most games together first, then the latest met, then by key."""
    key, found = item
    assert found.last is not None  # meetings() makes one only to add() a game to it, which sets ``last``
    return -found.games, -found.last.timestamp(), key


def head_to_head_page(session: Session, ladder: LadderRow, key: str, limit: int, offset: int) -> dict:
    """Everyone the player met, most games together first (then the latest met, then by key), a page after the
    first ``offset``."""
    table = storage.read_model.current_table(session, ladder)
    met = meetings_of(session, ladder, table, row_of(table, ladder, key))
    order = sorted(met.items(), key=_most_met_first)
    items = []
    for other, found in order[offset : offset + limit]:
        row = table.row(other)
        items.append(
            {
                "key": other,
                "name": None if row is None else table.names[row],
                "games": found.games,
                "last_played": iso(found.last),
                **{kind: _record(found.records[kind]) for kind in KINDS},
            }
        )
    more = offset + limit < len(order)
    return {"items": items, "next_cursor": str(offset + limit) if more else None}
