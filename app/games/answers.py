"""Games as the API shows them: the answer to a post, a stored game, and the games an event names."""

from __future__ import annotations

from datetime import datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.ladder import LadderRow
from app.core.schemas import iso


def elo_points(before: np.ndarray, after: np.ndarray, field: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Members' strengths before and after their game in Elo-equivalent points, as the leaderboard shows a
    strength, against the field's mean vector ``field`` (one, or one a member)."""
    return (
        rating.elo_equivalent(rating.hodge_strength_against(before, field)),
        rating.elo_equivalent(rating.hodge_strength_against(after, field)),
    )


def shown_members(
    keys: list[str],
    before: np.ndarray,
    after: np.ndarray,
    field: np.ndarray,
    posted: list[float | None] | None = None,
) -> list[dict]:
    """Each participant of a game as an answer shows them: their vectors before and after it, and the same as
    Elo-equivalent points against the field's mean vector ``field``; their change, as ``posted`` where it is kept
    (what the game's post answered), else after minus before."""
    elo_before, elo_after = elo_points(before, after, field)
    changes = (elo_after - elo_before).tolist()
    if posted is not None:
        changes = [change if kept is None else kept for change, kept in zip(changes, posted, strict=True)]
    return members_shown(keys, before, after, (elo_before, elo_after), changes)


def members_shown(
    keys: list[str], before: np.ndarray, after: np.ndarray, elo: tuple[np.ndarray, np.ndarray], changes: list[float]
) -> list[dict]:
    """:func:`shown_members` of strengths (:func:`elo_points`) and changes worked out already."""
    columns = (keys, before.tolist(), after.tolist(), elo[0].tolist(), elo[1].tolist(), changes)
    return [
        {"key": k, "before": b, "after": a, "elo_before": eb, "elo_after": ea, "elo_change": float(change)}
        for k, b, a, eb, ea, change in zip(*columns, strict=True)
    ]


def game_body(
    seq: int,
    played_at: datetime,
    external_id: str | None,
    payload: dict,
    sides: list[tuple[list[dict], float, float]],
    matrix: list[list[float]] | None = None,
) -> dict:
    """A game as the API shows it (``GameOut``), as JSON-ready values; ``payload`` is its stored input.  Its id is
    its number within the ladder (``seq``); the global id stays inside.  ``matrix``: a game of more than two
    sides as its post answers it, P(side a finishes above side b) before the game."""
    seats = payload.get("seats") or [None] * len(sides)
    scores = payload.get("scores") or [None] * len(sides)
    out = [
        {
            "players": players,
            "rank": rank,
            "score": score,
            "actual_score": actual,
            "expected_score": expected,
            "seat": seat,
        }
        for (players, actual, expected), rank, score, seat in zip(sides, payload["ranks"], scores, seats, strict=True)
    ]
    return {
        "id": seq,
        "seq": seq,
        "played_at": iso(played_at),
        "external_id": external_id,
        "sides": out,
        "match": payload.get("match"),
        "matrix": matrix,
        "voided_at": None,
        "voided_by": None,
        "reason": None,
    }


def field_mean(session: Session, ladder: LadderRow) -> np.ndarray:
    """The mean vector of the ladder's players now (the kept sum: one row read)."""
    total, count = storage.ladder_state.field_sum(session, ladder)
    return total / max(count, 1)


def stored_body(record: storage.games.GameRecord, field: np.ndarray) -> dict:
    """A stored game as the API shows it (the same shape as the response to its post), its players' Elo-equivalent
    points against the field's mean vector ``field`` (today's), their changes as the post answered them."""
    by_key = {m.key: m for m in record.members}
    sides = []
    for keys in record.payload["sides"]:
        parts = [by_key[key] for key in keys]
        before, after = np.array([p.before for p in parts]), np.array([p.after for p in parts])
        players = shown_members([p.key for p in parts], before, after, field, [p.elo_change for p in parts])
        sides.append((players, parts[0].actual_score, parts[0].expected_score))
    body = game_body(record.seq, record.played_at, record.external_id, record.payload, sides)
    if record.voided_at is not None:
        body |= {"voided_at": iso(record.voided_at), "voided_by": record.voided_by, "reason": record.void_reason}
    return body


def bodies(session: Session, ladder_id: int, numbers: list[int]) -> dict[int, dict]:
    """The ladder's games ``numbers`` as the API shows them (:func:`stored_body`), by number; numbers no game has
    (a ladder deleted since) are left out."""
    records = storage.games.numbered(session, ladder_id, numbers)
    ladder = storage.ladders.by_id(session, ladder_id)
    if not records or ladder is None:
        return {}
    field = field_mean(session, ladder)
    return {record.seq: stored_body(record, field) for record in records}
