"""Which player each key of a request names: case-folded if the ladder matches keys so, then through its aliases."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app.storage.ladders import LadderRow, fold


def players_named(ladder: LadderRow, keys: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """For each of ``keys`` in turn: the key as the ladder matches it (:func:`app.storage.ladders.fold`ed if it
    matches keys case-insensitively), the player that names through the ladder's aliases (a key no player has
    yet: the key a new player would get), and the first of ``keys`` that named that player (another spelling of
    it: two keys of one player)."""
    first: dict[str, str] = {}
    for key in keys:
        folded = fold(key) if ladder.case_insensitive_keys else key
        player = ladder.aliases.get(folded, folded)
        yield folded, player, first.setdefault(player, key)
