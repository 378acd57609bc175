"""The rules a posted game follows beyond its own shape: the kinds of games its ladder plays (the ladder's
``play``: singles, doubles, free-for-all, draws, games to 11 or 21, matches of best of 3 or 5), and a date no
later than the server's clock allows.

Posts are checked here, not imports: a restore takes back every game its ladder once accepted, whatever the
ladder plays now.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.core.errors import InvalidInput
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.games.intake import Post, check_external_ids, check_players_exist, check_post_seats, resolve_players
from app.games.schemas import GameIn, all_given, match_wins

#: How far after the server's clock a game may be dated: clocks that are a little ahead are not typos.
FUTURE_SLACK = timedelta(minutes=10)


def check_dates(post: Post, now: datetime) -> None:
    """No game dated more than :data:`FUTURE_SLACK` after ``now`` (422 naming it)."""
    for g, game in enumerate(post.games):
        if game.played_at is not None and game.played_at > now + FUTURE_SLACK:
            name = post.field(g, "played_at")
            when, clock = iso(game.played_at), iso(now)
            message = f"played_at is in the future: {when} is more than 10 minutes after the server's clock ({clock})"
            raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}])


def check_play(ladder: LadderRow, post: Post) -> None:
    """Every game is of a kind the ladder plays, and its scores and match follow the ladder's points and best_of
    (422 naming the game's field and the rule)."""
    play = ladder.play
    assert play is not None  # LadderRow.__post_init__ fills it in (PLAY, where the row has none)
    for g, game in enumerate(post.games):
        try:
            _check(play, game)
        except _Broken as broken:
            name = post.field(g, broken.field)
            message = broken.message
            raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}]) from None


class _Broken(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def kind(game: GameIn) -> str:
    """``singles``, ``doubles`` (two sides, a team among them) or ``free_for_all`` (more than two sides)."""
    if len(game.sides) > 2:
        return "free_for_all"
    return "singles" if all(len(side.players) == 1 for side in game.sides) else "doubles"


#: A kind of game in words.
_WORDS = {"singles": "singles", "doubles": "doubles or other team games", "free_for_all": "free-for-all games"}


def _check(play: dict, game: GameIn) -> None:
    played = kind(game)
    if not play[played]:
        raise _Broken("sides", f"this ladder does not play {_WORDS[played]}")
    if game.match is not None:
        _check_match(play, game.match)
        return
    ranks = all_given([side.rank for side in game.sides])
    scores = all_given([side.score for side in game.sides])
    if ranks is not None:
        order = ranks
    else:
        assert scores is not None  # a game without a match or ranks has scores (GameIn._consistent)
        order = [-s for s in scores]
    if not play["draws"] and len(set(order)) < len(order):
        raise _Broken("sides", "this ladder does not play draws: no two sides may tie")
    points = play["points"]
    if scores is not None and points is not None and len(scores) == 2 and not ends_a_game(scores[0], scores[1], points):
        raise _Broken("sides[0].score", _not_an_end(scores[0], scores[1], points))


def _check_match(play: dict, match: list[list[int]]) -> None:
    best_of = play["best_of"]
    if len(match) > best_of:
        raise _Broken("match", f"a best-of-{best_of} has at most {best_of} game{'s' if best_of > 1 else ''}")
    needed = best_of // 2 + 1
    for n, (a, b) in enumerate(match):
        if play["points"] is not None and not ends_a_game(a, b, play["points"]):
            raise _Broken(f"match[{n}]", f"game {n + 1}: " + _not_an_end(a, b, play["points"]))
        won = match_wins(match[: n + 1])
        if max(won) == needed and n + 1 < len(match):
            raise _Broken(
                f"match[{n + 1}]",
                f"game {n + 2} comes after the match was decided: {won[0]}-{won[1]} wins a best-of-{best_of}",
            )
    won = match_wins(match)
    if max(won) < needed:
        raise _Broken(
            "match", f"the match is undecided at {won[0]}-{won[1]}: a best-of-{best_of} is won with {needed} games"
        )


def ends_a_game(a: float, b: float, points: int) -> bool:
    """Whether ``a``-``b`` (either way) ends a game to ``points``: the winner reaches ``points`` with a lead of 2
    or more, or, past ``points - 1`` all, wins by exactly 2 (11-9, 12-10, 13-11)."""
    high, low = max(a, b), min(a, b)
    if high != int(high) or low != int(low) or low < 0:
        return False
    return (high == points and high - low >= 2) or (high > points and high - low == 2)


def _not_an_end(a: float, b: float, points: int) -> str:
    tied = f"{points - 1}-{points - 1}"
    return (
        f"{a:g}-{b:g} does not end a game to {points} (the winner reaches {points} with a lead of 2; past {tied}, "
        "wins by exactly 2)"
    )


def check_post(session: Session, ladder: LadderRow, post: Post, seen: set[str], now: datetime | None = None) -> None:
    """Every check a post of games passes before anything is locked, in one list for a live post and an import:
    its player keys resolved (case folding, aliases), its external ids new (``seen``: those that earlier posts of
    the same transaction bring), its players known where the ladder creates none, its seats the ladder's; and, for
    a live post (``now``), the kinds of games the ladder plays and the dates (an import brings the past as it
    was)."""
    resolve_players(ladder, post)
    check_external_ids(session, ladder, post, seen)
    if not ladder.auto_create_players:
        check_players_exist(session, ladder, post)
    check_post_seats(ladder, post)
    if now is not None:
        check_play(ladder, post)
        check_dates(post, now)
