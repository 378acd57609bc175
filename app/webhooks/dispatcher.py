"""The background dispatcher: it sends each webhook the ladder events it takes, from the ladder's event log, never
from the request that made them (a post is answered whatever the receivers do).

Every server process runs one (started and stopped with the app).  Its loop
looks for webhooks with work (events after their cursor, a retry or a digest
that is due) when this process commits games (a poke) or every :data:`POLL`
seconds, claims each with a conditional update, and hands it to one of
:data:`WORKERS` threads: a receiver that hangs holds one thread for at most the
attempt's timeout, never the others.  A webhook's events go out one at a time,
in the log's order: the next waits until the one before is delivered, or has
failed every attempt.

At least once: the delivery made of an event is written with the webhook's new
cursor in one transaction, and marked delivered only after the receiver's
2xx, so a crash in between sends it again (receivers tell repeats by
``event_id``).  A claim lapses :data:`LEASE` seconds after its process last
renewed it, so a dead process's webhooks are taken over.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from app import storage
from app.core.config import Settings
from app.core.db import Database
from app.storage.tables import Webhook, WebhookDelivery
from app.webhooks import messages, sending

logger = logging.getLogger("melo")

#: How often (seconds) the dispatcher looks for work when nothing pokes it, and how many webhooks it looks at; and
#: the least time between two looks, however often commits poke (a burst of posts is one look).
POLL, DUE, GAP = 1.0, 100, 0.1
#: Threads sending at once per process, and the most deliveries one webhook gets in a row before the others' turn.
WORKERS, BURST = 4, 20
#: Events read from the log at a time while looking for the next one a webhook takes.
PAGE = 200
#: Seconds a claim holds beyond the attempt's own timeout.
LEASE = 60.0


def _now() -> datetime:
    return datetime.now(UTC)


class Dispatcher:
    """One process's webhook sender: :meth:`start` it, :meth:`poke` it after commits, :meth:`stop` it."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db, self.settings = db, settings
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.woken = threading.Event()
        self.stopping = threading.Event()
        self.busy: set[tuple[int, int]] = set()
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="melo-webhook")
        self.thread = threading.Thread(target=self._run, name="melo-webhooks", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def poke(self) -> None:
        """Look for work now (this process committed something; from any thread)."""
        self.woken.set()

    def stop(self) -> None:
        """Stop looking for work, and wait for the attempts under way (each ends within its timeout) to be
        recorded and their webhooks released."""
        self.stopping.set()
        self.woken.set()
        if self.thread.is_alive():
            self.thread.join()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._dispatch()
            except Exception:  # a database that is down: the next look tries again
                logger.warning("looking for webhook work failed", exc_info=True)
            pause = min(POLL, max(self.settings.webhooks_retry_seconds, 0.05))  # short retries: on time
            self.stopping.wait(min(GAP, pause))
            self.woken.wait(pause)
            self.woken.clear()

    def _dispatch(self) -> None:
        with self.db.reading() as session:
            due = storage.webhooks.due(session, _now(), DUE)
        for hook in due:
            with self.lock:
                if hook in self.busy or len(self.busy) >= WORKERS:
                    continue
                self.busy.add(hook)
            self.pool.submit(self._work, *hook)

    def _work(self, ladder_id: int, webhook_id: int) -> None:
        try:
            for _ in range(BURST):
                if self.stopping.is_set() or not self.step(ladder_id, webhook_id):
                    break
        except Exception:
            logger.warning("webhook %d of ladder %d: a delivery failed", webhook_id, ladder_id, exc_info=True)
        finally:
            try:
                with self.db.writing() as session:
                    storage.webhooks.release(session, ladder_id, webhook_id, self.owner)
            except Exception:  # the claim lapses by itself
                logger.warning("releasing webhook %d failed", webhook_id, exc_info=True)
            with self.lock:
                self.busy.discard((ladder_id, webhook_id))
            self.woken.set()  # its next work, or another webhook's, may be waiting

    def step(self, ladder_id: int, webhook_id: int) -> bool:
        """One step of the webhook's work: the next event taken or skipped, one attempt of its pending delivery.
        Whether there may be more to do at once."""
        now = _now()
        until = now + timedelta(seconds=LEASE + self.settings.webhooks_timeout)
        with self.db.writing() as session:
            if not storage.webhooks.claim(session, ladder_id, webhook_id, self.owner, now, until):
                return False
            hook = storage.webhooks.get(session, ladder_id, webhook_id)
            if hook is None:
                return False
            delivery = storage.webhooks.pending(session, ladder_id, webhook_id)
            if delivery is None:
                delivery, moved = self._next(session, hook, now)
                if delivery is None:
                    return moved
            elif hook.retry_at is not None and hook.retry_at > now:
                return False
            url, secret = hook.url, hook.secret
        outcome = sending.send(
            url, delivery.body.encode(), secret, self.settings.webhooks_timeout, self.settings.webhooks_allow_private
        )
        return self._record(hook, delivery, outcome)

    def _next(self, session: Session, hook: Webhook, now: datetime) -> tuple[WebhookDelivery | None, bool]:
        """The webhook's next delivery, written with its new cursor: a digest that is due, else the next event of
        the log it takes (the events it does not take are passed over); None if there is none now, and whether
        the cursor moved past events it does not take (more of the log may follow)."""
        ladder = storage.ladders.by_id(session, hook.ladder_id)
        if ladder is None:  # deleted (its webhooks go with it)
            return None, False
        period = timedelta(hours=self.settings.webhooks_digest_hours)
        if "digest" in hook.events and hook.digest_at is not None and hook.digest_at <= now:
            body = messages.digest(session, ladder, max(hook.digest_at - period, hook.created_at), now)
            storage.webhooks.move(session, hook, digest_at=now + period)
            return storage.webhooks.add_delivery(session, hook, "digest", None, body, now), True
        events = storage.webhooks.events_after(session, hook.ladder_id, hook.cursor, PAGE)
        for number, version, kind, data in events:
            if (name := messages.event_name(kind, data)) in hook.events:
                body = messages.of_event(session, ladder, number, version, kind, data)
                if body is not None:
                    storage.webhooks.move(session, hook, cursor=number)
                    return storage.webhooks.add_delivery(session, hook, name, number, body, now), True
        if events:
            storage.webhooks.move(session, hook, cursor=events[-1][0])
        return None, bool(events)

    def _record(self, hook: Webhook, delivery: WebhookDelivery, outcome: sending.Outcome) -> bool:
        """Write how the attempt went: delivered, to retry later, or failed (the webhook then shows as failing);
        whether the webhook may go on to its next event at once."""
        now = _now()
        attempts = delivery.attempts + 1
        values = {"attempts": attempts, "attempted_at": now, "response_code": outcome.code, "error": outcome.error}
        if outcome.delivered:
            values |= {"status": "delivered", "delivered_at": now}
            hook_values = {"failing": False, "retry_at": None}
        elif attempts >= self.settings.webhooks_attempts:
            values |= {"status": "failed"}
            hook_values = {"failing": True, "retry_at": None}
        else:
            wait = self.settings.webhooks_retry_seconds * 2 ** (attempts - 1)
            hook_values = {"retry_at": now + timedelta(seconds=wait)}
        with self.db.writing() as session:
            if not storage.webhooks.attempted(session, delivery, values):
                return False  # the webhook was deleted meanwhile
            storage.webhooks.move(session, hook, **hook_values)
        if not outcome.delivered:
            logger.info("webhook %d: attempt %d of delivery %d: %s", hook.id, attempts, delivery.id, outcome.error)
        return values.get("status") in ("delivered", "failed")
