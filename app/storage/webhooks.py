"""Outgoing webhooks (``webhooks``), their deliveries (``webhook_deliveries``), and a ladder's Slack slash command
(``slack_commands``, ``slack_requests``).

A webhook is worked on by one server process at a time: :func:`claim` is a
conditional update that succeeds for one claimant only (a row lock on
PostgreSQL, SQLite's one writer), and the claim lapses by itself if its process
dies.  The cursor moves in the same transaction that writes the delivery made of
an event, so a restart neither skips nor repeats one.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.storage.events import parse
from app.storage.sql import rowcount
from app.storage.tables import Game, Ladder, LadderEvent, SlackCommand, SlackRequest, Webhook, WebhookDelivery


def insert(
    session: Session, ladder_id: int, url: str, events: list[str], secret: str, digest_at: datetime | None
) -> Webhook:
    """A new webhook, taking the ladder's events from the next one on."""
    cursor = session.scalar(select(Ladder.last_event).where(Ladder.id == ladder_id)) or 0
    hook = Webhook(ladder_id=ladder_id, url=url, events=events, secret=secret, cursor=cursor, digest_at=digest_at)
    session.add(hook)
    session.flush()
    return hook


def get(session: Session, ladder_id: int, webhook_id: int) -> Webhook | None:
    return session.scalar(select(Webhook).where(Webhook.ladder_id == ladder_id, Webhook.id == webhook_id))


def page_of_webhooks(session: Session, ladder_id: int, limit: int | None, after: int | None) -> list[Webhook]:
    """Up to ``limit`` of the ladder's webhooks in the order they were made, after the id ``after``."""
    query = select(Webhook).where(Webhook.ladder_id == ladder_id)
    if after is not None:
        query = query.where(Webhook.id > after)
    return list(session.scalars(query.order_by(Webhook.id).limit(limit)))


def remove(session: Session, ladder_id: int, webhook_id: int) -> None:
    """Delete the webhook and its deliveries: nothing more is sent to it (an attempt under way finds it gone)."""
    session.execute(
        delete(WebhookDelivery).where(WebhookDelivery.ladder_id == ladder_id, WebhookDelivery.webhook_id == webhook_id)
    )
    session.execute(delete(Webhook).where(Webhook.ladder_id == ladder_id, Webhook.id == webhook_id))


def page_of_deliveries(
    session: Session, ladder_id: int, webhook_id: int, limit: int | None, before: int | None
) -> list[WebhookDelivery]:
    """Up to ``limit`` deliveries of the webhook, newest first, before the id ``before``."""
    query = select(WebhookDelivery).where(
        WebhookDelivery.ladder_id == ladder_id, WebhookDelivery.webhook_id == webhook_id
    )
    if before is not None:
        query = query.where(WebhookDelivery.id < before)
    return list(session.scalars(query.order_by(WebhookDelivery.id.desc()).limit(limit)))


def due(session: Session, now: datetime, limit: int, owner: str) -> list[tuple[int, int]]:
    """(ladder id, id) of up to ``limit`` webhooks with work now that no other process holds (``owner``: this
    one's claims): a retry that is due, events after their cursor, or a digest that is due.  The ladders in turn:
    each ladder's first, then each one's second, and so on, so that many webhooks of one ladder never keep another
    ladder's out of the list."""
    turn = func.row_number().over(partition_by=Webhook.ladder_id, order_by=Webhook.id).label("turn")
    ranked = (
        select(Webhook.ladder_id, Webhook.id, turn)
        .join(Ladder, Ladder.id == Webhook.ladder_id)
        .where(
            or_(Webhook.lease_until.is_(None), Webhook.lease_until < now, Webhook.lease_owner == owner),
            or_(
                Webhook.retry_at <= now,
                and_(Webhook.retry_at.is_(None), or_(Webhook.cursor < Ladder.last_event, Webhook.digest_at <= now)),
            ),
        )
        .subquery()
    )
    query = select(ranked.c.ladder_id, ranked.c.id).order_by(ranked.c.turn, ranked.c.id).limit(limit)
    return [(int(ladder_id), int(webhook_id)) for ladder_id, webhook_id in session.execute(query)]


def claim(session: Session, ladder_id: int, webhook_id: int, owner: str, now: datetime, until: datetime) -> bool:
    """Whether ``owner`` now holds the webhook until ``until``: it did already, or nobody did (or their claim
    lapsed).  One claimant of several at once wins."""
    query = (
        update(Webhook)
        .where(
            Webhook.ladder_id == ladder_id,
            Webhook.id == webhook_id,
            or_(Webhook.lease_until.is_(None), Webhook.lease_until < now, Webhook.lease_owner == owner),
        )
        .values(lease_owner=owner, lease_until=until)
    )
    return rowcount(session, query) == 1


def renew(session: Session, ladder_id: int, webhook_id: int, owner: str, until: datetime) -> bool:
    """Whether ``owner`` still holds the webhook, its claim now renewed until ``until`` (False: the claim lapsed and
    another took it, or the webhook was deleted)."""
    query = update(Webhook).where(
        Webhook.ladder_id == ladder_id, Webhook.id == webhook_id, Webhook.lease_owner == owner
    )
    return rowcount(session, query.values(lease_until=until)) == 1


def release(session: Session, ladder_id: int, webhook_id: int, owner: str) -> None:
    query = update(Webhook).where(
        Webhook.ladder_id == ladder_id, Webhook.id == webhook_id, Webhook.lease_owner == owner
    )
    session.execute(query.values(lease_owner=None, lease_until=None))


def pending(session: Session, ladder_id: int, webhook_id: int, limit: int) -> list[WebhookDelivery]:
    """Up to ``limit`` of the webhook's deliveries still to make, oldest first (each waits for the one before)."""
    query = select(WebhookDelivery).where(
        WebhookDelivery.ladder_id == ladder_id,
        WebhookDelivery.webhook_id == webhook_id,
        WebhookDelivery.status == "pending",
    )
    return list(session.scalars(query.order_by(WebhookDelivery.id).limit(limit)))


def events_after(session: Session, ladder_id: int, after: int, limit: int) -> list[tuple[int, int, str, dict]]:
    """(number, version, kind, data) of up to ``limit`` of the ladder's events after number ``after``, in order."""
    query = (
        select(LadderEvent.number, LadderEvent.version, LadderEvent.kind, LadderEvent.data)
        .where(LadderEvent.ladder_id == ladder_id, LadderEvent.number > after)
        .order_by(LadderEvent.number)
        .limit(limit)
    )
    return [(int(n), int(v), kind, parse(data)) for n, v, kind, data in session.execute(query)]


def add_delivery(
    session: Session, hook: Webhook, event: str, number: int | None, body: str, now: datetime
) -> WebhookDelivery:
    """A delivery to make (the webhook's next ones wait for it)."""
    delivery = WebhookDelivery(
        ladder_id=hook.ladder_id, webhook_id=hook.id, event=event, event_number=number, status="pending",
        attempts=0, body=body, created_at=now,
    )  # fmt: skip
    session.add(delivery)
    session.flush()
    return delivery


def move(session: Session, hook: Webhook, owner: str, **values) -> None:
    """Set the webhook's ``values`` (its cursor, retry_at, digest_at, failing), if ``owner`` holds it."""
    query = update(Webhook).where(
        Webhook.ladder_id == hook.ladder_id, Webhook.id == hook.id, Webhook.lease_owner == owner
    )
    session.execute(query.values(**values))


def last_event(session: Session, ladder_id: int) -> int:
    """The number of the ladder's latest event (0: none yet)."""
    return session.scalar(select(Ladder.last_event).where(Ladder.id == ladder_id)) or 0


def attempted(session: Session, delivery: WebhookDelivery, values: dict) -> bool:
    """Record an attempt of the delivery (``values``: its status, attempts, response code, error, times); False
    if it is gone (its webhook was deleted meanwhile)."""
    query = update(WebhookDelivery).where(
        WebhookDelivery.ladder_id == delivery.ladder_id, WebhookDelivery.id == delivery.id
    )
    return rowcount(session, query.values(**values)) == 1


def prune_deliveries(session: Session, before: datetime, limit: int = 10_000) -> int:
    """Delete up to ``limit`` deliveries made before ``before`` that are done (delivered or failed), oldest first:
    the delivery logs keep what the event log keeps.  How many went."""
    done = WebhookDelivery.status.in_(("delivered", "failed"))
    oldest = (
        select(WebhookDelivery.id)
        .where(WebhookDelivery.created_at < before, done)
        .order_by(WebhookDelivery.id)
        .limit(limit)
    )
    return rowcount(session, delete(WebhookDelivery).where(WebhookDelivery.id.in_(oldest), done))


def games_between(session: Session, ladder_id: int, since: datetime, until: datetime) -> list[int]:
    """The numbers of the ladder's games recorded in [since, until) that count (not voided), at most 1,000 (the
    newest)."""
    query = (
        select(Game.seq)
        .where(Game.ladder_id == ladder_id, Game.created_at >= since, Game.created_at < until, Game.voided_at.is_(None))
        .order_by(Game.id.desc())
        .limit(1000)
    )
    return [int(seq) for seq in session.scalars(query) if seq is not None]  # (none is NULL: migration 0009)


def signing_secret(session: Session, ladder_id: int) -> str | None:
    """The ladder's Slack signing secret, if it has one."""
    return session.scalar(select(SlackCommand.signing_secret).where(SlackCommand.ladder_id == ladder_id))


def slack_updated_at(session: Session, ladder_id: int) -> datetime | None:
    """When the ladder's Slack signing secret was set (None: it has none)."""
    return session.scalar(select(SlackCommand.updated_at).where(SlackCommand.ladder_id == ladder_id))


def set_signing_secret(session: Session, ladder_id: int, secret: str | None, now: datetime) -> None:
    """Set (or with None, remove) the ladder's Slack signing secret."""
    session.execute(delete(SlackCommand).where(SlackCommand.ladder_id == ladder_id))
    if secret is not None:
        session.add(SlackCommand(ladder_id=ladder_id, signing_secret=secret, updated_at=now))
        session.flush()


def first_sight(session: Session, ladder_id: int, signature: str, now: datetime, forget_before: datetime) -> bool:
    """Whether this is the first request with this signature since ``forget_before`` (False: a replay); the
    signatures seen before that are forgotten.  Of two workers given the same request at once, the second's
    insert waits for the first's and fails on the key: a replay too."""
    session.execute(
        delete(SlackRequest).where(SlackRequest.ladder_id == ladder_id, SlackRequest.seen_at < forget_before)
    )
    seen = select(func.count()).where(SlackRequest.ladder_id == ladder_id, SlackRequest.signature == signature)
    if session.scalar(seen):
        return False
    try:
        with session.begin_nested():
            session.add(SlackRequest(ladder_id=ladder_id, signature=signature, seen_at=now))
    except IntegrityError:
        return False
    return True
