"""Leaderboards: the orders (``by``), their first pages without sorting everyone, keyset cursors, the JSON
page and its ``form`` (mathematics §8)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.cursors import decode_cursor, encode_cursor
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.players.last_game import last_game_changes
from app.players.records import (
    clock,
    conservative,
    hodge,
    is_listed,
    listed_rows,
    page_se,
    provisional,
    record_fields,
    variances,
)
from app.rating.intransitivity import canonical
from app.rating.ranking import (
    conservative_bound,
    first_rows,
    first_rows_by_bound,
    leaderboard_order,
    rows_ahead,
    rows_before,
    rows_through,
)
from app.storage.read_model import Table

#: The leaderboard orders (``by``).
ORDERS = ("hodge", "field", "disc", "conservative")


def _disc_strength(C: np.ndarray) -> np.ndarray:
    """ũ = u/v of the dominant disc, or a 409 saying why there is none (mathematics §8)."""
    form = canonical(C)
    if not form.blocks or not form.blocks[0].transitive:
        share = form.blocks[0].share if form.blocks else 0.0
        raise Conflict(
            "The dominant disc of this ladder is cyclic "
            f"({share:.0%} of ‖A‖²): its players form a cycle, so no disc ordering exists. Use by=hodge or by=field.",
            field="by",
        )
    return form.disc_strength()


class Ranking(NamedTuple):
    """One leaderboard order over every player: sorted by (group, -score, key), ``order`` the rows listed."""

    score: np.ndarray
    group: np.ndarray  # 0, or 1 for the provisional players below the others (by=conservative)
    order: np.ndarray


def _ranking(table: Table, ladder: LadderRow, by: str, inactive: bool) -> Ranking:
    """One leaderboard order, computed once per table.

    The scores are over every player (inactive ones are still part of the field); the order leaves the
    inactive ones out unless ``inactive``.  ``by=conservative`` lists the established players first and the
    provisional ones below, each group by conservative strength.
    """

    def compute() -> Ranking:
        score, group = _scores(table, ladder, by)
        order = leaderboard_order(score, group, table.key_rank())
        if not inactive:
            order = order[is_listed(table, ladder)[order]]
        return Ranking(score, group, order)

    return table.derived(("ranking", by, inactive), compute)


def _scores(table: Table, ladder: LadderRow, by: str) -> tuple[np.ndarray, np.ndarray]:
    """Every player's score in the order ``by`` and their group (0, or 1 for the provisional players listed
    below the others by=conservative), once per table."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        group = np.zeros(len(table.keys), dtype=np.int64)
        if by == "disc":
            return _disc_strength(table.C), group
        if by == "field":
            return rating.field_score(table.C), group
        if by == "conservative":
            return conservative(table, ladder), provisional(table, ladder.k).astype(np.int64)
        return hodge(table), group

    return table.derived(("scores", by), compute)


def _first_page(table: Table, ladder: LadderRow, by: str, limit: int, inactive: bool) -> _Page:
    """The first page of an order without sorting everyone: the rows at or above the ``limit``-th (group, score)
    by one linear selection, then those few sorted.

    ``by=conservative`` does not compute every player's standard error (a
    sample of the field per player): each player's conservative strength is
    at most the one a perfectly informative record would give
    (:func:`app.rating.ranking.conservative_bound`), so the exact values of
    the players with the highest bounds settle the page once the ``limit``-th
    of them is above every bound left out.
    """
    listed = np.arange(len(table.keys)) if inactive else listed_rows(table, ladder)
    if by != "conservative":
        score, group = _scores(table, ladder, by)
        page = first_rows(score, group, table.key_rank(), listed, limit)
        return _Page(page, score[page], group[page], len(listed) > limit)
    group = provisional(table, ladder.k)

    def exact(candidates: np.ndarray) -> np.ndarray:
        return rating.conservative(hodge(table)[candidates], page_se(table, ladder, candidates))

    rows, score = first_rows_by_bound(_conservative_bound(table, ladder), group, table.key_rank(), listed, limit, exact)
    return _Page(rows, score, group[rows], len(listed) > limit)


def leading_rows(table: Table, ladder: LadderRow, n: int) -> np.ndarray:
    """The rows of the first ``n`` of the default standings (by=conservative), in order."""
    return _first_page(table, ladder, "conservative", n, False).rows


class _Page(NamedTuple):
    rows: np.ndarray
    score: np.ndarray  # of each row, in the order asked for
    group: np.ndarray
    more: bool  # whether players follow


def _conservative_bound(table: Table, ladder: LadderRow) -> np.ndarray:
    """An upper bound of every conservative strength (:func:`app.rating.ranking.conservative_bound`), once per
    table.  Under the variance rule a standard error is at least √u (mathematics §3b, §8)."""
    rule = ladder.learning_rate()
    if isinstance(rule, rating.VarianceRule):
        floor = np.sqrt(variances(table, rule))
        return table.derived("conservative bound", lambda: rating.conservative(hodge(table), floor))
    return table.derived("conservative bound", lambda: conservative_bound(hodge(table), table.experience))


def leaderboard(table: Table, ladder: LadderRow, by: str, limit: int, cursor: str | None, inactive: bool) -> bytes:
    """Players ordered by an invariant of A (mathematics §8), keyset-paginated on (score, key), as a JSON body.

    The first page of each order and size is rendered once per table (it is
    what nearly every request asks for).
    """

    def render() -> bytes:
        return json.dumps(_leaderboard(table, ladder, by, limit, cursor, inactive)).encode()

    return render() if cursor is not None else table.derived(("page", by, limit, inactive), render)


#: Results a leaderboard's ``form`` shows, and their letters.
FORM_GAMES = 5
LETTERS = {1: "W", 0: "D", -1: "L"}


def with_form(session: Session, ladder: LadderRow, table: Table, body: bytes) -> bytes:
    """A leaderboard page (a JSON body) of the ladder with each player's ``form``, their last results, newest
    first, and ``last_game_change``, what their own last game did to their rating."""
    page = json.loads(body)
    rows: list[int] = []
    for item in page["items"]:
        row = table.row(item["key"])
        assert row is not None  # the page was rendered from a table of this version: its keys are this one's
        rows.append(row)
    ids = [int(table.ids[n]) for n in rows]
    recent = storage.games.recent_results(session, ladder.id, ids, FORM_GAMES)
    changes = last_game_changes(session, ladder, table, rows)
    for item, player_id, change in zip(page["items"], ids, changes, strict=True):
        games = np.array(recent[player_id], dtype=np.float64).reshape(-1, 2)
        item["form"] = [LETTERS[r] for r in rating.results(games[:, 0], games[:, 1]).tolist()]
        item["last_game_change"] = change
    return json.dumps(page).encode()


def rendered_page(table: Table, by: str, limit: int, cursor: str | None, inactive: bool) -> bytes | None:
    """The first page if it is rendered already (no work to do), else None."""
    return table.memo.get(("page", by, limit, inactive)) if cursor is None else None


def _leaderboard(table: Table, ladder: LadderRow, by: str, limit: int, cursor: str | None, inactive: bool) -> dict:
    if cursor is None:
        return _page(table, ladder, by, inactive, _first_page(table, ladder, by, limit, inactive), 0)
    ranking = _ranking(table, ladder, by, inactive)
    order = ranking.order
    side, (group, score, key) = _leaderboard_position(cursor, by, inactive, table.as_of)
    g, s, keys = ranking.group[order], ranking.score[order], table.keys[order].astype(str)
    if side == "after":
        start = rows_through(g, s, keys, group, score, key)
        end = start + limit
    else:  # the page before the row a page started with
        end = rows_before(g, s, keys, group, score, key)
        start = max(0, end - limit)
    rows = order[start:end]
    page = _Page(rows, ranking.score[rows], ranking.group[rows], end < len(order))
    return _page(table, ladder, by, inactive, page, start)


def around(table: Table, ladder: LadderRow, by: str, limit: int, key: str, inactive: bool) -> bytes:
    """The ``limit`` rows of an order centred on the player ``key`` names (fewer at the ends), as a JSON body; a
    404 if they are not on it (unknown, or inactive unless ``inactive``)."""
    ranking = _ranking(table, ladder, by, inactive)
    row = table.row(ladder.player_key(key))
    place = _places(table, ranking, by, inactive)[row] if row is not None else -1
    if place < 0:
        why = "no player" if row is None else "inactive"  # with ``inactive`` everyone is listed
        raise NotFound(f"Player {key!r} is not on this leaderboard of ladder {ladder.slug!r} ({why}).")
    start = max(0, place - (limit - 1) // 2)
    rows = ranking.order[start : place + limit // 2 + 1]
    page = _Page(rows, ranking.score[rows], ranking.group[rows], start + len(rows) < len(ranking.order))
    return json.dumps(_page(table, ladder, by, inactive, page, start)).encode()


def ranked(table: Table, by: str, inactive: bool) -> bool:
    """Whether the table's order ``by`` and each player's place in it are known already (:func:`around` is then a
    few rows' work)."""
    return ("ranking", by, inactive) in table.memo and ("places", by, inactive) in table.memo


def _places(table: Table, ranking: Ranking, by: str, inactive: bool) -> np.ndarray:
    """Each player's place in the order (from 0; -1: not listed), once per table."""

    def compute() -> np.ndarray:
        places = np.full(len(table.keys), -1, dtype=np.int64)
        places[ranking.order] = np.arange(len(ranking.order))
        return places

    return table.derived(("places", by, inactive), compute)


def rank(table: Table, ladder: LadderRow, row: int) -> int | None:
    """Player ``row``'s rank on the default leaderboard (by Hodge strength, active players), by one pass over the
    players (no sort); None if they are not on it."""
    listed = is_listed(table, ladder)
    if not listed[row]:
        return None
    score, group = _scores(table, ladder, "hodge")
    rows = listed_rows(table, ladder)
    at = int(np.searchsorted(rows, row))
    return rows_ahead(group[rows], score[rows], table.key_rank()[rows], at) + 1


def _page(table: Table, ladder: LadderRow, by: str, inactive: bool, page: _Page, start: int) -> dict:
    items = []
    errors = page_se(table, ladder, page.rows)
    rows = zip(page.rows.tolist(), errors.tolist(), page.score.tolist(), strict=True)
    for rank, (i, se, score) in enumerate(rows, start=start + 1):
        items.append({"rank": rank, "key": table.keys[i], **record_fields(table, ladder, i, se), "strength": score})
    # A current table's cursors name its version: the walk goes on with it while the worker keeps it.
    listing = {"by": by, "inactive": inactive} | ({"as_of": table.as_of} if table.as_of else {"v": table.version})

    def cursor(side: str, n: int) -> str:
        return encode_cursor(
            listing | {side: [int(page.group[n]), page.score[n].item(), str(table.keys[page.rows[n]])]}
        )

    next_cursor = cursor("after", len(page.rows) - 1) if page.more and len(page.rows) else None
    prev_cursor = cursor("before", 0) if start > 0 and len(page.rows) else None
    clock_now = iso(storage.codec.moment(clock(table)))
    return {
        "items": items,
        "next_cursor": next_cursor,
        "prev_cursor": prev_cursor,
        "ladder_version": table.version,
        "ladder_clock": clock_now,
    }


def _listing(by: str, inactive: bool, as_of: str | None) -> str:
    return f"by={by}&inactive={str(inactive).lower()}" + (f"&as_of={as_of}" if as_of else "")


def _leaderboard_position(
    cursor: str, by: str, inactive: bool, as_of: str | None
) -> tuple[str, tuple[int, float, str]]:
    """Which side of a row a leaderboard cursor asks for (``after``: the next page, ``before``: the previous one)
    and that row's (group, score, key): the last of the page it came after, or the first of the page it came
    before.

    A cursor names the listing it was made for (the order ``by``, ``inactive`` and ``as_of``): its score is that
    listing's, so it cannot place a row in another (an empty or a shifted page); there it is a 422 naming
    ``cursor``.
    """
    value = decode_cursor(cursor, _valid_cursor)
    if (value["by"], value["inactive"], value.get("as_of")) != (by, inactive, as_of):
        made, asked = _listing(value["by"], value["inactive"], value.get("as_of")), _listing(by, inactive, as_of)
        message = f"made for {made}, not {asked}: a cursor continues only its own listing; start again without one"
        raise InvalidInput(f"cursor: {message}", errors=[{"field": "cursor", "message": message}])
    side = "after" if "after" in value else "before"
    group, score, key = value[side]
    return side, (group, score, key)


def cursor_version(cursor: str) -> int | None:
    """The ladder version of the page a leaderboard cursor came from (None: none, or not a valid cursor, which its
    page then refuses)."""
    try:
        return decode_cursor(cursor, _valid_cursor).get("v")
    except InvalidInput:
        return None


def _version(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63


def _valid_cursor(v: Any) -> bool:
    """{"by": order, "inactive": bool, "after" or "before": [group, score, key]} (and "as_of": a time, or "v": the
    version of the page it came from), the group 0 or (by=conservative) 1."""

    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool) and abs(x) < 1e300

    if not (
        isinstance(v, dict) and set(v) - {"as_of", "v"} in ({"by", "inactive", "after"}, {"by", "inactive", "before"})
    ):
        return False
    if not isinstance(v.get("as_of", ""), str) or not _version(v.get("v", 0)):
        return False
    by, inactive, at = v["by"], v["inactive"], v.get("after", v.get("before"))
    return (
        by in ORDERS
        and isinstance(inactive, bool)
        and isinstance(at, list)
        and len(at) == 3
        and at[0] in ((0, 1) if by == "conservative" else (0,))
        and not isinstance(at[0], bool | float)
        and number(at[1])
        and isinstance(at[2], str)
    )
