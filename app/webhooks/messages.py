"""What a webhook is sent: an event of the ladder's log as the event stream shows it (``data``), with one readable
line (``text``) that Slack and Microsoft Teams incoming webhooks show as it is, and the weekly digest.

A delivery's body is ``{"event", "ladder", "ladder_name", "event_id", "text", "data"}`` (a season's adds its
``podium``), as compact JSON of at most :data:`MAX_BODY` bytes, its ``text`` at most :data:`MAX_TEXT`: a line names
fewer players where their names are long, and an event too large is sent truncated (``data.truncated``), less and
less of it until it fits: a game without its players' vectors, then with :data:`LISTED` of its players, then none;
a moment with :data:`LISTED` of its players, then none; at last only ``version``. A truncated game or moment says
where its game is read in full (``data.href``).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from app import storage
from app.core.ladder import LadderRow
from app.core.schemas import iso
from app.events.shown import GAME_KINDS, shown
from app.games import answers
from app.players import leaderboard as leaderboards
from app.players import moments
from app.players.schemas import MomentOut

#: The event names a webhook may take, and what each is.
EVENTS = {
    "game": "a game was recorded",
    "void": "a game was voided",
    "season": "a season closed, with its podium",
    "challenge": "a challenge was made, accepted, declined or played",
    "moment": "a moment: a first win, an upset, a streak, a new #1",
    "digest": "the ladder's week: games played, the top 3 and the biggest mover (once a week)",
}
#: The largest body sent, and the longest ``text`` in it as sent (bytes of UTF-8).
MAX_BODY, MAX_TEXT = 64 * 1024, 8 * 1024
#: The most players a line names (fewer where their names are long), and a truncated game or moment lists.
NAMED, LISTED = 16, 32


def event_name(kind: str, data: dict) -> str | None:
    """The webhook event an event of the log is (None: none; player changes, refits and settings are not sent)."""
    if kind == "season":
        return "season" if data.get("action") == "closed" else None
    return kind if kind in EVENTS and kind != "digest" else None


def of_event(session: Session, ladder: LadderRow, number: int, version: int, kind: str, data: dict) -> str | None:
    """The body of a delivery of the ladder's event ``number`` (None: nothing to send, as for a game of a ladder
    deleted since)."""
    games = answers.bodies(session, ladder.id, [data["game"]]) if kind in GAME_KINDS else {}
    challenges = {}
    if kind == "challenge":
        challenges = storage.challenges.numbered(session, ladder.id, [data["id"]], datetime.now(UTC))
    carried = shown(kind, version, data, games, challenges)
    if carried is None or (event := event_name(kind, data)) is None:
        return None
    names = _Names(session, ladder.id)
    extra: dict = {}
    if event in ("game", "void"):
        line = _void_text if event == "void" else _game_text
        text = _fitted(lambda most: line(carried["game"], names, most))
        return _body(event, ladder, number, _game_forms(ladder, text, carried))
    if event == "season":
        extra["podium"] = _podium(session, ladder.id, str(data.get("name")))
        text = _season_text(str(data.get("name")), extra["podium"])
    elif event == "challenge":
        text = _challenge_text(carried["action"], carried["challenge"])
    else:
        text = _said(event, data, names)
    return _body(event, ladder, number, [(text, carried)], extra)


def of_moments(session: Session, ladder: LadderRow, number: int, version: int, data: dict) -> list[str]:
    """The bodies of the moments of the game the ladder's event ``number`` recorded, one delivery each: ``event``
    ``moment``, ``data`` ``{version, moment}`` with the moment as ``GET …/moments`` shows it, ``text`` its line.
    A week's biggest rise is told with the first game after the week, once the week has ended."""
    found = moments.moments(session, ladder, data["game"], data["game"])
    shown = [MomentOut(**vars(moment)).model_dump(mode="json") for moment in found]
    return [_body("moment", ladder, number, _moment_forms(session, ladder, version, item)) for item in shown]


def digest(session: Session, ladder: LadderRow, since: datetime, until: datetime) -> str:
    """The body of the ladder's digest of [since, until): games played, the top 3 now, the biggest mover."""
    numbers = storage.webhooks.games_between(session, ladder.id, since, until)
    moved: dict[str, float] = defaultdict(float)
    for game in answers.bodies(session, ladder.id, numbers).values():
        for side in game["sides"]:
            for player in side["players"]:
                moved[player["key"]] += player["elo_change"]
    names = _Names(session, ladder.id)
    top = top_players(session, ladder, 3)
    mover = max(moved.items(), key=lambda item: (abs(item[1]), item[0]), default=None)
    data = {
        "since": iso(since),
        "until": iso(until),
        "games": len(numbers),
        "top": top,
        "mover": None if mover is None else {"key": mover[0], "name": names[mover[0]], "elo_change": mover[1]},
    }
    where = ladder.name or ladder.slug
    played = games(len(numbers)) if numbers else "no games"
    text = f"This week on {where}: {played}"
    if top:
        text += "; top 3: " + ", ".join(f"{p['name'] or p['key']} {round(p['strength'])}" for p in top)
    if mover is not None:
        text += f"; biggest mover: {names[mover[0]]} {_signed(mover[1])}"
    return _body("digest", ladder, None, [(text + ".", data)])


def top_players(session: Session, ladder: LadderRow, n: int) -> list[dict]:
    """The first ``n`` of the standings (the conservative order the ladder page shows): rank, key, name, the
    number they are ordered by (``strength``, Elo points) and games."""
    table = storage.read_model.current_table(session, ladder)
    page = json.loads(leaderboards.leaderboard(table, ladder, "conservative", n, None, False))
    return [{k: item[k] for k in ("rank", "key", "name", "strength", "games")} for item in page["items"]]


def escaped(text: str) -> str:
    """``text`` with ``&``, ``<`` and ``>`` escaped as Slack asks: a player named ``<!channel>`` pings nobody."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unlinked(text: str) -> str:
    """``text`` with a zero-width space between ``]`` and ``(``: Microsoft Teams reads markdown, and a player named
    ``[prize](https://…)`` would show as a link; unseen in Slack and Teams alike."""
    return text.replace("](", "]\u200b(")


def _body(
    event: str, ladder: LadderRow, number: int | None, forms: Iterable[tuple[str, dict]], extra: dict | None = None
) -> str:
    """The body of a delivery: the first of ``forms`` (text and data: the event in full, then ever more truncated)
    that fits :data:`MAX_BODY`, its text cut to :data:`MAX_TEXT` if need be; else the last one's text with only its
    ``version`` and ``href``."""
    message = {"event": event, "ladder": ladder.slug, "ladder_name": ladder.name, "event_id": number}
    text, data = "", dict[str, Any]()
    for text, data in forms:
        body = _json(message | {"text": _sent(_clipped(text)), "data": data} | (extra or {}))
        if len(body.encode()) <= MAX_BODY:
            return body
    least = {"version": data.get("version"), "truncated": True} | ({"href": data["href"]} if "href" in data else {})
    return _json(message | {"text": _sent(_clipped(text)), "data": least} | (extra or {}))


def _json(value: dict) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _sent(text: str) -> str:
    """``text`` as a body carries it."""
    return unlinked(escaped(text))


def _fitted(line: Callable[[int], str]) -> str:
    """``line(most)``, naming at most ``most`` players: :data:`NAMED` where that fits :data:`MAX_TEXT`, else fewer."""
    most = NAMED
    while len(_sent(text := line(most)).encode()) > MAX_TEXT and most > 1:
        most //= 2
    return text


def _clipped(text: str) -> str:
    """``text``, or as much of it as fits :data:`MAX_TEXT` once sent, ending with "…" (names too long to be told
    whole even one at a time)."""
    if len(_sent(text).encode()) <= MAX_TEXT:
        return text
    low, high = 0, len(text)  # the longest head that fits lies in [low, high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if len(_sent(text[:mid] + "…").encode()) <= MAX_TEXT else (low, mid)
    return text[:low] + "…"


def _href(ladder: LadderRow, game: int) -> str:
    return f"/v1/ladders/{ladder.slug}/games/{game}"


def _game_forms(ladder: LadderRow, text: str, data: dict) -> Iterator[tuple[str, dict]]:
    """A game's or a void's body data in full, then without the players' vectors, then listing :data:`LISTED` of
    its players, then none (made as they are asked for)."""
    yield text, data
    game = data["game"]
    truncated = data | {"truncated": True, "href": _href(ladder, game["id"])}
    bare = game | {"sides": [_without_vectors(side) for side in game["sides"]]}
    yield text, truncated | {"game": bare}
    for most in (LISTED, 0):
        yield text, truncated | {"game": _players_up_to(bare, most)}


def _without_vectors(side: dict) -> dict:
    return side | {"players": [{k: v for k, v in p.items() if k not in ("before", "after")} for p in side["players"]]}


def _players_up_to(game: dict, most: int) -> dict:
    """The game listing at most ``most`` of its players, each side's first in turn, the best-ranked sides first (two
    sides of 32: 16 of each; 64 sides: the first player of the best 32), each side with its ``player_count``."""
    sides = game["sides"]
    by_rank = sorted(range(len(sides)), key=lambda i: sides[i]["rank"])
    turns = sorted((n, place, i) for place, i in enumerate(by_rank) for n in range(len(sides[i]["players"])))
    listed = Counter(i for _, _, i in turns[:most])
    counted = [side | {"players": side["players"][: listed[i]], "player_count": len(side["players"])}
               for i, side in enumerate(sides)]  # fmt: skip
    return game | {"sides": counted}


def _moment_forms(session: Session, ladder: LadderRow, version: int, moment: dict) -> Iterator[tuple[str, dict]]:
    """A moment's body data as ``GET …/moments`` shows it, where its line fits :data:`MAX_TEXT`; then truncated: its
    line naming fewer players, listing :data:`LISTED` of them, then none."""
    if len(_sent(moment["text"]).encode()) <= MAX_TEXT:
        yield moment["text"], {"version": version, "moment": moment}
    names = _Names(session, ladder.id)
    text = _fitted(lambda most: _moment_text(session, ladder, moment, names, most))
    truncated = {"version": version, "truncated": True, "href": _href(ladder, moment["game"])}
    short = moment | {"text": text, "player_count": len(moment["players"])}
    for most in (LISTED, 0):
        yield text, truncated | {"moment": short | {"players": moment["players"][:most]}}


def _moment_text(session: Session, ladder: LadderRow, moment: dict, names: _Names, most: int) -> str:
    """A moment's line naming at most ``most`` of its players: "Ada, Bob and 30 others won for the first time"."""
    who = _listed([names[key] for key in moment["players"][:most]], len(moment["players"]))
    if moment["kind"] == "first_win":
        return f"{who} won for the first time"
    if moment["kind"] == "streak":
        return f"{who} won {moment['wins']} in a row"
    if moment["kind"] == "upset":  # a game of two sides: the players not named lost it
        game = answers.bodies(session, ladder.id, [moment["game"]])[moment["game"]]
        won = set(moment["players"])
        lost = [p["key"] for side in game["sides"] for p in side["players"] if p["key"] not in won]
        percent = max(1, int(100 * moment["chance"]))  # as the moment says it: below 30% is never shown as 30%
        return f"{who} beat {_listed([names[key] for key in lost[:most]], len(lost))} with a {percent}% chance"
    return moment["text"]  # about one player


def _listed(names: list[str], count: int) -> str:
    """ "Ada", "Ada and Bob", "Ada, Bob and Cy"; "Ada, Bob and 30 others" where ``count`` is more than named."""
    if count > len(names):
        return ", ".join(names) + f" and {count - len(names):,} others"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class _Names(dict):
    """Player keys to the names they show as (their name, else the key), read as they are asked for."""

    def __init__(self, session: Session, ladder_id: int) -> None:
        super().__init__()
        self.session, self.ladder_id = session, ladder_id

    def __missing__(self, key: str) -> str:
        row = storage.players.get_row(self.session, self.ladder_id, key)
        self[key] = name = (row[1] if row else None) or key
        return name


def games(n: int) -> str:
    """ "1 game", "1,234 games"."""
    return f"{n:,} game" + ("" if n == 1 else "s")


def game_line(session: Session, ladder_id: int, game: dict) -> str:
    """A game (as the API shows it) in one line, its players by name."""
    names = _Names(session, ladder_id)
    return _fitted(lambda most: _game_text(game, names, most))


def _game_text(game: dict, names: _Names, most: int = NAMED) -> str:
    """A game in one line: "Ada beat Bob 21-15 (Ada 1512 → 1526)"; a match "Ada beat Bob 2-1 (21-15, 18-21,
    21-10) (Ada 1512 → 1530)"; "Ada & Cy beat Bob & Dee"; "Ada drew with
    Bob"; "Ada won ahead of Bob, Cy". A game of more than ``most`` players names that many at most, each named
    side its first few: "Ada & 31 others won ahead of Bob & 31 others, … and 48 more"."""
    sides = sorted(game["sides"], key=lambda side: side["rank"])
    named = sides[:most]
    each = most if sum(len(side["players"]) for side in sides) <= most else max(1, most // len(named))
    teams = [_team([names[p["key"]] for p in side["players"][:each]], len(side["players"])) for side in named]
    more = f" and {len(sides) - len(named):,} more" if len(named) < len(sides) else ""
    best = [side for side in sides if side["rank"] == sides[0]["rank"]]
    if len(best) == len(sides):
        line = f"{teams[0]} drew with {teams[1]}" if len(sides) == 2 else f"{', '.join(teams)}{more} tied"
    elif len(sides) == 2:
        line = f"{teams[0]} beat {teams[1]}"
    else:
        line = f"{teams[0]} won ahead of {', '.join(teams[1:])}{more}"
    scores = [side.get("score") for side in sides]
    if not more and all(isinstance(score, int | float) for score in scores):
        line += " " + "-".join(f"{score:g}" for score in scores)
    if game.get("match") and len(sides) == 2:  # a match's games, each the winners' points first: "2-1 (21-15, …)"
        first = 0 if sides[0] is game["sides"][0] else 1
        line += " (" + ", ".join(f"{points[first]}-{points[1 - first]}" for points in game["match"]) + ")"
    moves = [p for side in best[: len(named)] for p in side["players"][:each]] if len(best) < len(sides) else []
    if moves:
        line += " (" + ", ".join(f"{names[p['key']]} {p['elo_before']:.0f} → {p['elo_after']:.0f}" for p in moves) + ")"
    return line


def _void_text(game: dict, names: _Names, most: int) -> str:
    reason = game.get("reason")
    return f"Game {game['id']} was voided: {_game_text(game, names, most)}" + (f" ({reason})" if reason else "")


def _team(names: list[str], count: int) -> str:
    """ "Ada & Cy"; "Ada & Cy & 30 others" where ``count`` is more than named."""
    return " & ".join(names) + (f" & {count - len(names):,} others" if count > len(names) else "")


def _podium(session: Session, ladder_id: int, name: str) -> list[dict]:
    season = storage.seasons.named(session, ladder_id, name)
    rows = [] if season is None else storage.seasons.standings(session, ladder_id, season.id, 0, 3)
    columns = storage.seasons.STANDING
    return [{k: row[columns.index(k)] for k in ("rank", "key", "name", "elo", "games", "wins")} for row in rows]


def _season_text(name: str, podium: list[dict]) -> str:
    if not podium:
        return f"Season {name} closed, with no games."
    places = ["champion", "second", "third"]
    said = [f"{places[p['rank'] - 1]} {p['name'] or p['key']} ({p['elo']:.0f})" for p in podium]
    return f"Season {name} closed: " + ", ".join(said) + "."


#: A challenge's action in words: who did it (the challenger or the challenged) and what.
CHALLENGED = {
    "created": "{a} challenged {b}",
    "accepted": "{b} accepted {a}'s challenge",
    "declined": "{b} declined {a}'s challenge",
    "withdrawn": "{a} withdrew the challenge to {b}",
    "expired": "{a}'s challenge to {b} expired",
}


def _challenge_text(action: str, challenge: dict) -> str:
    """A challenge's event in one line: "Ada challenged Bob: lunch?", "Bob accepted Ada's challenge", …"""
    a, b = (challenge[f"{side}_name"] or challenge[side] for side in ("from", "to"))
    if action == "played":
        return f"{a} and {b} played their challenge: game {challenge['game']}"
    line = CHALLENGED.get(action, "{a} challenged {b}").format(a=a, b=b)
    message = challenge.get("message")
    return f"{line}: {message}" if action == "created" and message else line


def _said(event: str, data: dict, names: _Names) -> str:
    """A challenge or a moment in words: its own ``text`` if it carries one, else what it names."""
    if isinstance(data.get("text"), str):
        return data["text"]
    who = [names[v] for k in ("from", "to", "challenger", "challenged", "key") if isinstance(v := data.get(k), str)]
    action = data.get("action") or data.get("kind") or ""
    return " ".join(part for part in (event.capitalize(), str(action), " vs ".join(who)) if part).strip()


def _signed(points: float) -> str:
    return f"{points:+.0f}"
