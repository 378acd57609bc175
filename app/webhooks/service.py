"""A ladder's webhooks: made (the URL checked, a secret drawn), listed, deleted, and their delivery logs."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from app import storage
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.ladder import LadderRow
from app.core.schemas import Page, one_more
from app.storage.webhooks import Webhook, WebhookDelivery
from app.webhooks.addresses import Refused, resolve
from app.webhooks.schemas import DeliveryOut, WebhookCreate, WebhookCreated, WebhookOut

#: The most webhooks a ladder may have.
MAX_WEBHOOKS = 20
#: The longest a webhook's host may take to resolve when it is made (seconds).
LOOKUP = 5.0


def check_url(url: str, allow_private: bool) -> None:
    """422 naming ``url`` if webhooks may not send to it (blocking: it resolves the host, for :data:`LOOKUP` s at
    most)."""
    try:
        resolve(url, allow_private, LOOKUP)
    except Refused as exc:
        raise InvalidInput(f"url: {exc}", errors=[{"field": "url", "message": str(exc)}]) from None


def create_webhook(session: Session, ladder: LadderRow, data: WebhookCreate, digest_hours: float) -> WebhookCreated:
    """A new webhook of the ladder (its URL checked already), sent the events committed from now on."""
    storage.ladders.lock(session, ladder.id)  # two at once cannot both pass the count
    if len(storage.webhooks.page_of_webhooks(session, ladder.id, MAX_WEBHOOKS + 1, None)) >= MAX_WEBHOOKS:
        raise Conflict(
            f"The ladder has {MAX_WEBHOOKS} webhooks, the most it may: delete one first.",
            errors=[{"field": "url", "message": f"at most {MAX_WEBHOOKS} webhooks per ladder"}],
        )
    secret = "whsec_" + secrets.token_urlsafe(32)
    digest_at = datetime.now(UTC) + timedelta(hours=digest_hours) if "digest" in data.events else None
    hook = storage.webhooks.insert(session, ladder.id, data.url, list(data.events), secret, digest_at)
    return WebhookCreated(**webhook_out(hook).model_dump(), secret=secret)


def list_webhooks(session: Session, ladder: LadderRow, limit: int, cursor: int | None) -> Page[WebhookOut]:
    hooks = storage.webhooks.page_of_webhooks(session, ladder.id, one_more(limit), cursor)
    return Page[WebhookOut].of(hooks, limit, webhook_out, lambda hook: str(hook.id))


def delete_webhook(session: Session, ladder: LadderRow, webhook_id: int) -> WebhookOut:
    """Delete the webhook and its delivery log: nothing more is sent to it."""
    hook = _found(session, ladder, webhook_id)
    storage.webhooks.remove(session, ladder.id, webhook_id)
    return webhook_out(hook)


def deliveries(
    session: Session, ladder: LadderRow, webhook_id: int, limit: int, cursor: int | None
) -> Page[DeliveryOut]:
    _found(session, ladder, webhook_id)
    rows = storage.webhooks.page_of_deliveries(session, ladder.id, webhook_id, one_more(limit), cursor)
    return Page[DeliveryOut].of(rows, limit, delivery_out, lambda row: str(row.id))


def _found(session: Session, ladder: LadderRow, webhook_id: int) -> Webhook:
    hook = storage.webhooks.get(session, ladder.id, webhook_id)
    if hook is None:
        raise NotFound(f"Ladder {ladder.slug!r} has no webhook {webhook_id}.")
    return hook


def webhook_out(hook: Webhook) -> WebhookOut:
    return WebhookOut(id=hook.id, url=hook.url, events=hook.events, failing=hook.failing, created_at=hook.created_at)


def delivery_out(row: WebhookDelivery) -> DeliveryOut:
    return DeliveryOut(
        id=row.id,
        event=row.event,
        event_id=row.event_number,
        status=row.status,
        attempts=row.attempts,
        response_code=row.response_code,
        error=row.error,
        created_at=row.created_at,
        attempted_at=row.attempted_at,
        delivered_at=row.delivered_at,
    )
