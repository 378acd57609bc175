"""An event of a ladder's log as it is shown to others: the event stream's ``data``, and a webhook delivery's."""

from __future__ import annotations

from collections.abc import Mapping

#: The kinds whose event names a game, shown as the API shows the game when it is sent.
GAME_KINDS = ("game", "void")


def shown(
    kind: str, version: int, data: dict, games: Mapping[int, dict], challenges: Mapping[int, dict] | None = None
) -> dict | None:
    """The event's data as shown: ``{version, game}`` for a game or a void (the game from ``games``, by number, as
    :func:`app.games.answers.bodies` renders it), ``{version, action, challenge}`` for a challenge (from
    ``challenges``, by number, as the API shows it now), ``{version, ...}`` with the logged data otherwise; None where
    nothing is shown (a revoked key, which only makes listeners check their access again; a game or a challenge gone
    since: a deleted ladder, a merge of a challenge's two players)."""
    if kind == "access":
        return None
    if kind in GAME_KINDS:
        game = games.get(data["game"])
        return None if game is None else {"version": version, "game": game}
    if kind == "challenge":
        challenge = (challenges or {}).get(data["id"])
        return None if challenge is None else {"version": version, "action": data["action"], "challenge": challenge}
    return {"version": version} | data
