"""The Slack slash command's work: who is asking, and recording a game or answering the standings or the help.

``/pong @ada 21-15`` records a singles game between the Slack user and ada
with those points (the issuer's first) through the ladder's ordinary game
posts: it is checked as any post is, counts once, and shows at once on open
pages and in the webhooks.  The issuer is the player whose key (or alias) is
their Slack member id (``user_id``, e.g. ``U123ABC``): Slack's ``user_name`` is
chosen by the user, deprecated by Slack, and could name another player.  For
the same reason a mention (``<@U123ABC|ada>``) names the player linked to its
member id, never by the name it shows.  What cannot be done is answered to the
issuer alone (``ephemeral``), saying how to fix it, and changes nothing.

A private ladder is read with one of its keys; here its players stand for its
key holders: its standings and recorded games are answered only to a user
linked to one of its players, and to them alone (a channel may hold anyone).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

import anyio.to_thread
from pydantic import ValidationError

from app import storage
from app.core.db import Database
from app.core.errors import Problem
from app.core.ladder import LadderRow
from app.core.schemas import PLAYER_KEY
from app.games.schemas import GameIn
from app.webhooks import messages
from app.webhooks.slack import Asked

logger = logging.getLogger("melo")

HELP = (
    "Record a game: `{command} @ada 21-15` (your points first). The standings: `{command} top`. This help: "
    "`{command} help`. You are the ladder's player with your Slack member id as an alias (a ladder admin adds it)."
)
#: Standings lines `top` answers.
TOP = 10


def answer(text: str, everyone: bool = False) -> dict:
    """Slack's answer to a command: to the channel (``everyone``) or to the user alone, its text escaped."""
    return {"response_type": "in_channel" if everyone else "ephemeral", "text": messages.escaped(text)}


def how_to_link(ladder: LadderRow, whose: str) -> str:
    """How a ladder admin links a Slack member id to ``whose`` player: an alias of the player."""
    return (
        f"Ask a ladder admin to link it to {whose} player: they change the player's key to it and back with "
        f"`PATCH /v1/ladders/{ladder.slug}/players/<key>` (an old key stays an alias), or add a player with it."
    )


def player(db: Database, ladder: LadderRow, name: str) -> str | None:
    """The key of the ladder's player ``name`` is the key or an alias of, or None."""
    if not name or not re.match(PLAYER_KEY, name) or len(name) > 128:
        return None
    key = ladder.player_key(name)
    with db.reading() as session:
        return key if storage.players.get_row(session, ladder.id, key) is not None else None


async def run(
    db: Database, ladder: LadderRow, fields: dict[str, str], asked: Asked, post: Callable[[GameIn], Awaitable[dict]]
) -> dict:
    """The answer to a slash command (``fields``: its form), ``post`` recording a game as ``POST …/games`` does."""
    command = fields.get("command") or "/pong"
    where = ladder.name or ladder.slug
    if asked.what == "help":
        return answer(HELP.format(command=command))
    if asked.what == "unknown":
        said = fields.get("text", "").strip()
        why = f": {asked.why}" if asked.why else "."
        return answer(
            f"I did not understand `{command} {said}`{why} Nothing was recorded. " + HELP.format(command=command)
        )
    if asked.what == "top" and not ladder.private:
        return answer(await anyio.to_thread.run_sync(_standings, db, ladder, where), everyone=True)
    user_id = fields.get("user_id") or ""
    issuer = await anyio.to_thread.run_sync(player, db, ladder, user_id)
    unlinked = f"no player has your Slack member id {user_id!r} as their key or an alias. {how_to_link(ladder, 'your')}"
    if issuer is None and asked.what == "top":
        return answer(f"{where} is private: its standings are shown only to its players, and {unlinked}")
    if issuer is None:
        return answer(
            f"You are not a player of {where} yet: {unlinked} "
            + (f"(Slack calls you {fields['user_name']!r}.) " if fields.get("user_name") else "")
            + "Nothing was recorded."
        )
    if asked.what == "top":  # a private ladder's: to its player alone
        return answer(await anyio.to_thread.run_sync(_standings, db, ladder, where))
    opponent = await anyio.to_thread.run_sync(player, db, ladder, asked.opponent)
    if opponent is None and asked.mentioned:
        return answer(
            f"Slack member {asked.opponent!r} is not linked to a player of {where}: no player has that member id as "
            f"their key or an alias (the name a mention shows is never used: anyone may take any). "
            f"{how_to_link(ladder, 'their')} Nothing was recorded."
        )
    if opponent is None:
        return answer(
            f"{asked.opponent!r} is not a player of {where}: use their key or alias as the ladder page shows it, or "
            "mention them if their Slack member id is linked. Nothing was recorded."
        )
    if opponent == issuer:
        return answer("You cannot record a game against yourself: name your opponent. Nothing was recorded.")
    mine, theirs = asked.scores or (0, 0)
    try:
        game = GameIn.model_validate(
            {"sides": [{"players": [issuer], "score": mine}, {"players": [opponent], "score": theirs}]}
        )
        body = await post(game)
    except ValidationError as error:  # what the game model refuses, in its words
        return answer(f"The game was not recorded: {error.errors()[0]['msg']}.")
    except Problem as problem:
        return answer(f"The game was not recorded: {problem.detail}")
    except Exception:  # Slack shows the user only an answer of its form: never a problem+json
        logger.exception("a Slack command's game post failed")
        return answer("The game was not recorded: the server failed to record it. Try again in a moment.")
    return answer(await anyio.to_thread.run_sync(_recorded, db, ladder, body), everyone=not ladder.private)


def _recorded(db: Database, ladder: LadderRow, body: dict) -> str:
    with db.reading() as session:
        return f"Game {body['id']}: " + messages.game_line(session, ladder.id, body)


def _standings(db: Database, ladder: LadderRow, where: str) -> str:
    with db.reading() as session:
        top = messages.top_players(session, ladder, TOP)
    if not top:
        return f"{where} has no ranked players yet: record a game with `/pong @someone 21-15`."
    lines = [f"{p['rank']}. {p['name'] or p['key']} {round(p['strength'])} ({messages.games(p['games'])})" for p in top]
    return f"Standings of {where}:\n" + "\n".join(lines)
