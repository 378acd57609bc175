"""An event of a ladder's log as it is shown to others: the event stream's ``data``, and a webhook delivery's."""

from __future__ import annotations

from collections.abc import Mapping

#: The kinds whose event names a game, shown as the API shows the game when it is sent.
GAME_KINDS = ("game", "void")


def shown(kind: str, version: int, data: dict, games: Mapping[int, dict]) -> dict | None:
    """The event's data as shown: ``{version, game}`` for a game or a void (the game from ``games``, by number, as
    :func:`app.games.answers.bodies` renders it), ``{version, ...}`` with the logged data otherwise; None where
    nothing is shown (a revoked key, which only makes listeners check their access again; a game of a ladder deleted
    since)."""
    if kind == "access":
        return None
    if kind in GAME_KINDS:
        game = games.get(data["game"])
        return None if game is None else {"version": version, "game": game}
    return {"version": version} | data
