"""Webhook and Slack routes: a ladder's webhooks and their delivery logs (an admin key), its Slack signing secret (an
admin key), and the Slack slash command (signed by Slack)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from app import storage
from app.core.db import Database
from app.core.errors import LADDER_ACCESS, Conflict, NotFound, Unauthorized, problems
from app.core.ladder import LadderRow
from app.core.schemas import Page
from app.domain.access import Caller, ladder_for, ladder_for_read
from app.games.intake import Post, request_hash
from app.games.schemas import GameIn
from app.http.deps import CallerDep, DatabaseDep, IdCursor, IdPath, Limit, SettingsDep
from app.webhooks import commands, service, slack
from app.webhooks.schemas import (
    DeliveryOut,
    SlackAnswer,
    SlackOut,
    SlackSetup,
    WebhookCreate,
    WebhookCreated,
    WebhookOut,
)

router = APIRouter(prefix="/v1/ladders/{slug}", tags=["webhooks"])


@router.post(
    "/webhooks", status_code=201, response_model=WebhookCreated, responses=LADDER_ACCESS | problems(404, 409, 422)
)
def create_webhook(
    slug: str, data: WebhookCreate, db: DatabaseDep, caller: CallerDep, settings: SettingsDep
) -> WebhookCreated:
    """A new webhook (an admin key of the ladder): the chosen events committed from now on are POSTed to `url`,
    signed with `secret` (shown only in this answer). The URL must be https and its host resolve to public
    addresses only (checked again at each delivery); at most 20 webhooks per ladder."""
    with db.reading() as session:
        ladder_for(session, slug, caller, "admin")
    service.check_url(data.url, settings.webhooks_allow_private)  # resolves the host: not in the transaction
    with db.writing() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        return service.create_webhook(session, ladder, data, settings.webhooks_digest_hours)


@router.get("/webhooks", response_model=Page[WebhookOut], responses=LADDER_ACCESS | problems(404, 422))
def list_webhooks(
    slug: str, db: DatabaseDep, caller: CallerDep, limit: Limit = 100, cursor: IdCursor = None
) -> Page[WebhookOut]:
    """The ladder's webhooks in the order they were made, without their secrets, each saying whether it is
    `failing` (an admin key of the ladder)."""
    with db.reading() as session:
        return service.list_webhooks(session, ladder_for(session, slug, caller, "admin"), limit, cursor)


@router.delete("/webhooks/{webhook_id}", response_model=WebhookOut, responses=LADDER_ACCESS | problems(404, 422))
def delete_webhook(slug: str, webhook_id: IdPath, db: DatabaseDep, caller: CallerDep) -> WebhookOut:
    """Delete a webhook and its delivery log (an admin key of the ladder): nothing more is sent to it."""
    with db.writing() as session:
        return service.delete_webhook(session, ladder_for(session, slug, caller, "admin"), webhook_id)


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    response_model=Page[DeliveryOut],
    responses=LADDER_ACCESS | problems(404, 422),
)
def list_deliveries(
    slug: str, webhook_id: IdPath, db: DatabaseDep, caller: CallerDep, limit: Limit = 50, cursor: IdCursor = None
) -> Page[DeliveryOut]:
    """A webhook's delivery log, newest first (an admin key of the ladder): each event sent or being sent, its
    status, attempts, the receiver's latest answer and what went wrong."""
    with db.reading() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        return service.deliveries(session, ladder, webhook_id, limit, cursor)


@router.get("/slack", response_model=SlackOut, responses=LADDER_ACCESS | problems(404))
def get_slack(slug: str, db: DatabaseDep, caller: CallerDep) -> SlackOut:
    """Whether the ladder takes Slack slash commands (an admin key of the ladder); the secret is never shown."""
    with db.reading() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        return _slack_out(session, ladder.id)


@router.put("/slack", response_model=SlackOut, responses=LADDER_ACCESS | problems(404, 422))
def set_slack(slug: str, data: SlackSetup, db: DatabaseDep, caller: CallerDep) -> SlackOut:
    """Set the Slack app's signing secret (an admin key of the ladder): from now on `POST …/slack` takes the slash
    commands Slack signs with it. It is never shown back."""
    with db.writing() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        storage.webhooks.set_signing_secret(session, ladder.id, data.signing_secret, datetime.now(UTC))
        return _slack_out(session, ladder.id)


@router.delete("/slack", response_model=SlackOut, responses=LADDER_ACCESS | problems(404))
def remove_slack(slug: str, db: DatabaseDep, caller: CallerDep) -> SlackOut:
    """Stop taking slash commands (an admin key of the ladder): the signing secret is forgotten."""
    with db.writing() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        storage.webhooks.set_signing_secret(session, ladder.id, None, datetime.now(UTC))
        return _slack_out(session, ladder.id)


def _slack_out(session: Session, ladder_id: int) -> SlackOut:
    updated_at = storage.webhooks.slack_updated_at(session, ladder_id)
    return SlackOut(configured=updated_at is not None, updated_at=updated_at)


FORM = {
    "required": True,
    "content": {
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command as typed, e.g. `/pong`."},
                    "text": {
                        "type": "string",
                        "description": "What follows it: `@ada 21-15` (your points first), `top` or `help`.",
                    },
                    "user_id": {
                        "type": "string",
                        "description": "The Slack member id of the user who typed it: the ladder's player with it as "
                        "key or alias is the one who plays.",
                    },
                    "user_name": {"type": "string", "description": "Their Slack user name (never trusted)."},
                    "team_id": {"type": "string", "description": "The Slack workspace."},
                    "channel_id": {"type": "string", "description": "The channel it was typed in."},
                    "response_url": {"type": "string", "description": "Where Slack takes later answers (unused)."},
                    "trigger_id": {"type": "string", "description": "Slack's id of the command (unused)."},
                },
            }
        }
    },
}


@router.post(
    "/slack",
    response_model=SlackAnswer,
    responses=problems(401, 409, 422),
    openapi_extra={"requestBody": FORM},
    summary="Slack slash command",
)
async def slack_command(
    slug: str,
    request: Request,
    db: DatabaseDep,
    timestamp: Annotated[
        str | None,
        Header(alias="X-Slack-Request-Timestamp", description="When Slack sent it (Unix seconds)."),
    ] = None,
    signature: Annotated[
        str | None,
        Header(
            alias="X-Slack-Signature",
            description="`v0=` and the hex HMAC-SHA256 of `v0:<timestamp>:<body>` with the signing secret.",
        ),
    ] = None,
) -> JSONResponse:
    """A Slack slash command (e.g. `/pong`), as Slack sends it: signed with the ladder's signing secret (`PUT
    …/slack`), form-encoded.

    `@ada 21-15` records a singles game between the user who typed it and ada, with those points (theirs first,
    ASCII digits), as `POST …/games` would; `top` answers the standings (the first 10; on a private ladder only to
    a user linked to one of its players, and to them alone); `help` says how. The user is the ladder's player
    whose key or alias is their Slack member id (`user_id`, e.g. `U123ABC`); `user_name` is not trusted, and a
    mention (`<@U456DEF|bob>`) names the member by id, never by the name it shows. A request signed with another
    secret (or to a ladder that takes no slash commands, or none at all), with a timestamp more than 5 minutes
    from now, or seen before (a replay) is refused with 401 or 409; what the user must fix (an unknown player, an
    unreadable command) is answered to them alone (`ephemeral`), and changes nothing.
    """
    body = await request.body()
    ladder = await anyio.to_thread.run_sync(_verified, db, slug, timestamp, signature, body)
    fields = slack.form(body)

    async def post(game: GameIn) -> dict:
        admin = Caller(None, server_admin=True)  # the request is the ladder's Slack app's: its signature says so
        return await request.app.state.committer.submit(Post(slug, admin, [game], None, request_hash(game), False))

    return JSONResponse(await commands.run(db, ladder, fields, slack.asked(fields.get("text", "")), post))


def _verified(db: Database, slug: str, timestamp: str | None, signature: str | None, body: bytes) -> LadderRow:
    """The ladder, if the request is signed with its Slack signing secret, recent and not seen before.  A ladder
    that does not exist, or takes no Slack commands, refuses every request with the same 401 as a bad signature:
    an unsigned request learns nothing of which ladders exist or take them."""
    with db.reading() as session:
        try:
            ladder: LadderRow | None = ladder_for_read(session, slug, fresh=True)
        except NotFound:
            ladder = None
        secret = storage.webhooks.signing_secret(session, ladder.id) if ladder is not None else None
    slack.verify(secret or secrets.token_hex(32), timestamp, signature, body)  # a secret nobody signs with: 401
    if ladder is None:  # not reached: nobody signs with the secret drawn
        raise Unauthorized(slack.NOT_SIGNED)
    now = datetime.now(UTC)
    with db.writing() as session:
        window = timedelta(seconds=2 * slack.WINDOW)
        if not storage.webhooks.first_sight(session, ladder.id, signature or "", now, now - window):
            raise Conflict(
                "This signed request was received before: a replay is refused.",
                errors=[{"field": "X-Slack-Signature", "message": "seen before"}],
            )
    return ladder
