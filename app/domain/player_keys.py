"""Which player each key of a request names: case-folded if the ladder matches keys so, then through its aliases."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app.core.ladder import LadderRow


def players_named(ladder: LadderRow, keys: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """For each of ``keys`` in turn: the key as the ladder matches it (:meth:`LadderRow.folded_key`), the player
    it names (:meth:`LadderRow.player_key`: a key no player has yet gives the key a new player would get), and the
    first of ``keys`` that named that player (another spelling of it: two keys of one player)."""
    first: dict[str, str] = {}
    for key in keys:
        player = ladder.player_key(key)
        yield ladder.folded_key(key), player, first.setdefault(player, key)
