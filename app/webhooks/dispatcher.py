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
renewed it, so a dead process's webhooks are taken over; the process renews it
before each attempt and records attempts only while it still holds it (a
webhook deleted meanwhile is sent nothing more).  An event that cannot be
rendered is logged and passed over, never retried for ever.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app import storage
from app.core.config import Settings
from app.core.db import Database
from app.storage.webhooks import Webhook, WebhookDelivery
from app.webhooks import messages, sending

logger = logging.getLogger("melo")

#: How often (seconds) the dispatcher looks for work when nothing pokes it, and how many webhooks it looks at; and
#: the least time between two looks, however often commits poke: a burst of posts is one look, and each webhook's
#: deliveries of it one batch (two short write transactions), which the posts' own writes hardly wait for.
POLL, DUE, GAP = 1.0, 100, 0.25
#: Threads sending at once per process; the most of them one ladder's webhooks hold at once (the others' always
#: find one, however slow its receivers); the most deliveries one webhook gets in a row before the others' turn.
WORKERS, PER_LADDER, BURST = 8, 2, 20
#: Events read from the log at a time while looking for the next one a webhook takes.
PAGE = 200
#: Seconds a claim holds beyond the attempt's own timeout: the process keeps the webhook while it renews its claim,
#: and another takes it over that long after it stops renewing it (its process died).
LEASE = 60.0
#: Rendered event bodies kept, shared by the webhooks of a ladder; the most deliveries one turn takes.
BODIES, BATCH = 256, 20
#: The most attempts' timeouts one webhook's work holds a thread before it gives it back (its next turn waits for
#: the next look, behind the others).
HOLD = 4


class Made(NamedTuple):
    """A webhook's next deliveries, rendered in a read transaction from where its cursor and digest time stood
    (``cursor``, ``digest_at``): written by the turn's write transaction only if neither has moved since."""

    cursor: int
    digest_at: datetime | None
    bodies: list[tuple[str, int | None, str]]  # (event name, event number or None for a digest, body)
    to: int  # the cursor after them
    next_digest: datetime | None  # the next digest's time, if this one made it


class Attempt(NamedTuple):
    """An attempt made, to record: the webhook, the delivery and how it went."""

    hook: Webhook
    delivery: WebhookDelivery
    outcome: sending.Outcome


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
        self.allow_private = settings.webhooks_allow_private
        #: The webhooks this process has claimed (released when it stops), and the bodies of recent events.
        self.held: set[tuple[int, int]] = set()
        self.bodies: dict[tuple[int, int], str | None] = {}
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
        try:  # the others may take them over at once
            with self.db.writing() as session:
                for ladder_id, webhook_id in self.held:
                    storage.webhooks.release(session, ladder_id, webhook_id, self.owner)
        except Exception:  # their claims lapse by themselves
            logger.warning("releasing this process's webhooks failed", exc_info=True)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._dispatch()
            except Exception as exc:  # a database that is down (one line): the next look tries again
                down = isinstance(exc, OperationalError)
                logger.warning("looking for webhook work failed: %s", exc, exc_info=not down)
            pause = min(POLL, max(self.settings.webhooks_retry_seconds, 0.05))  # short retries: on time
            self.stopping.wait(min(GAP, pause))
            self.woken.wait(pause)
            self.woken.clear()

    def _dispatch(self) -> None:
        with self.db.reading() as session:
            due = storage.webhooks.due(session, _now(), DUE, self.owner)
        for hook in due:
            if self.stopping.is_set():
                return
            with self.lock:
                if hook in self.busy or len(self.busy) >= WORKERS:
                    continue
                if sum(ladder == hook[0] for ladder, _ in self.busy) >= PER_LADDER:
                    continue  # its ladder has its share: the others' webhooks go first
                self.busy.add(hook)
            self.pool.submit(self._work, *hook)

    def _work(self, ladder_id: int, webhook_id: int) -> None:
        """Up to BURST turns of the webhook's work.  A turn records the attempts of the one before, renders the
        next deliveries in a read transaction, takes up to BATCH of them in a short write transaction, then sends
        them in order outside any, stopping at the first that fails."""
        done: list[Attempt] = []
        timeout = self.settings.webhooks_timeout
        give_back = time.monotonic() + HOLD * timeout
        try:
            for _ in range(BURST):
                if self.stopping.is_set() or time.monotonic() > give_back:
                    break
                if done:
                    with self.db.writing() as session:
                        go_on = self._record(session, done)
                    done = []
                    if not go_on:
                        break
                made = self._make(ladder_id, webhook_id)
                with self.db.writing() as session:
                    hook, batch, more = self._take(session, ladder_id, webhook_id, made)
                if hook is None or not batch:
                    if more:
                        continue
                    break
                for n, delivery in enumerate(batch):
                    if n and (self.stopping.is_set() or time.monotonic() > give_back):
                        break  # the rest are pending: tried at the next turn
                    if n and not self._renew(ladder_id, webhook_id):
                        done = []  # another process holds it now (this one was too slow), or it was deleted
                        return
                    body = delivery.body.encode()
                    outcome = sending.send(hook.url, body, hook.secret, timeout, self.allow_private)
                    done.append(Attempt(hook, delivery, outcome))
                    if not outcome.delivered:
                        break  # the later ones wait for this one
                if len(batch) < BATCH:  # caught up: the next look comes after GAP, however often posts poke
                    break
            if done:
                with self.db.writing() as session:
                    self._record(session, done)
        except Exception:  # a database that is down: the claim lapses, and the deliveries are attempted again
            logger.warning("webhook %d of ladder %d: a delivery failed", webhook_id, ladder_id, exc_info=True)
        finally:
            with self.lock:
                self.busy.discard((ladder_id, webhook_id))
            self.woken.set()  # its next work, or another webhook's, may be waiting

    def _take(
        self, session: Session, ladder_id: int, webhook_id: int, made: Made | None
    ) -> tuple[Webhook | None, list, bool]:
        """Claim the webhook (or renew this process's claim) and take the deliveries to attempt now, in order: its
        pending ones if their retry is due, else those ``made`` (written with its new cursor) if it has not moved
        since they were made.  Also whether there may be more to do at once.  Nothing is rendered here: this
        transaction holds SQLite's one writer, which the posts wait for."""
        now = _now()
        if not storage.webhooks.claim(session, ladder_id, webhook_id, self.owner, now, self._until(now)):
            return None, [], False
        self.held.add((ladder_id, webhook_id))
        hook = storage.webhooks.get(session, ladder_id, webhook_id)
        if hook is None:
            return None, [], False
        waiting = storage.webhooks.pending(session, ladder_id, webhook_id, BATCH)
        if waiting:
            due = hook.retry_at is None or hook.retry_at <= now
            return hook, waiting if due else [], False
        if made is None:
            return hook, [], False
        if (made.cursor, made.digest_at) != (hook.cursor, hook.digest_at):
            return hook, [], True  # moved meanwhile: made again at the next turn
        deliveries = [storage.webhooks.add_delivery(session, hook, *body, now) for body in made.bodies]
        moved = made.to != hook.cursor  # (before the update, which the ORM makes on ``hook`` too)
        values: dict = {"cursor": made.to} if moved else {}
        if made.next_digest is not None:
            values["digest_at"] = made.next_digest
        if deliveries:  # pending now: a process that dies leaves them due
            values["retry_at"] = now
        if values:
            storage.webhooks.move(session, hook, self.owner, **values)
        return hook, deliveries, moved or bool(deliveries)

    def _until(self, now: datetime) -> datetime:
        return now + timedelta(seconds=LEASE + self.settings.webhooks_timeout)

    def _renew(self, ladder_id: int, webhook_id: int) -> bool:
        """Renew this process's claim of the webhook before an attempt; whether it still holds it (False: it lapsed
        and another took it, or the webhook was deleted)."""
        with self.db.writing() as session:
            return storage.webhooks.renew(session, ladder_id, webhook_id, self.owner, self._until(_now()))

    def _make(self, ladder_id: int, webhook_id: int) -> Made | None:
        """The webhook's next deliveries, up to BATCH, rendered in a read transaction: a digest that is due, then
        the next events of the log it takes (those it does not take are passed over).  None if it or its ladder
        is gone, or deliveries of it are pending."""
        with self.db.reading() as session:
            hook = storage.webhooks.get(session, ladder_id, webhook_id)
            ladder = storage.ladders.by_id(session, ladder_id) if hook is not None else None
            if hook is None or ladder is None or storage.webhooks.pending(session, ladder_id, webhook_id, 1):
                return None  # gone, or its pending deliveries go first
            now = _now()
            bodies: list[tuple[str, int | None, str]] = []
            next_digest = None
            period = timedelta(hours=self.settings.webhooks_digest_hours)
            if "digest" in hook.events and hook.digest_at is not None and hook.digest_at <= now:
                since = max(hook.digest_at - period, hook.created_at)
                next_digest = now + period
                for body in self._passing_over(session, hook, "the digest", self._digest, session, ladder, since, now):
                    bodies.append(("digest", None, body))
            events = storage.webhooks.events_after(session, ladder_id, hook.cursor, PAGE)
            cursor = hook.cursor
            if not events and cursor < storage.webhooks.last_event(session, ladder_id):
                cursor = storage.webhooks.last_event(session, ladder_id)  # pruned before they were sent: gone
            for number, version, kind, data in events:
                if len(bodies) >= BATCH:
                    break
                cursor = number
                made = self._passing_over(
                    session, hook, f"event {number}", self._bodies, session, hook, ladder, number, version, kind, data
                )
                bodies += [(name, number, body) for name, body in made]
            return Made(hook.cursor, hook.digest_at, bodies, cursor, next_digest)

    def _bodies(self, session: Session, hook: Webhook, ladder, number: int, version: int, kind: str, data: dict):
        """(event name, body) of the deliveries the webhook is sent of one event of the log: the event's own if it
        takes it, and a game's moments, each a delivery of its own."""
        bodies = []
        name = messages.event_name(kind, data)
        if name in hook.events and (body := self._rendered(session, ladder, number, version, kind, data)) is not None:
            bodies.append((name, body))
        if kind == "game" and "moment" in hook.events:
            bodies += [("moment", body) for body in self._moments(session, ladder, number, version, data)]
        return bodies

    @staticmethod
    def _digest(session: Session, ladder, since: datetime, until: datetime) -> list[str]:
        return [messages.digest(session, ladder, since, until)]

    @staticmethod
    def _passing_over(session: Session, hook: Webhook, what: str, render, *args) -> list:
        """``render(*args)``, in a savepoint; nothing if it fails (logged): an event that cannot be rendered (a bug,
        or data of a form this version does not know) is passed over, where retrying it would hold the webhook for
        ever."""
        try:
            with session.begin_nested():
                return render(*args)
        except Exception:
            logger.exception("webhook %d of ladder %d: %s could not be rendered: passed over", hook.id, hook.ladder_id,
                             what)  # fmt: skip
            return []

    def _rendered(self, session: Session, ladder, number: int, version: int, kind: str, data: dict) -> str | None:
        """:func:`messages.of_event`, rendered once per event for all the ladder's webhooks in this process."""
        at = (ladder.id, number)
        with self.lock:
            if at in self.bodies:
                return self.bodies[at]
        body = messages.of_event(session, ladder, number, version, kind, data)
        self._keep(at, body)
        return body

    def _moments(self, session: Session, ladder, number: int, version: int, data: dict) -> list[str]:
        """:func:`messages.of_moments`, rendered once per game event for all the ladder's webhooks in this
        process."""
        at = (ladder.id, -number)  # beside the event's own body
        with self.lock:
            kept = self.bodies.get(at)
        if kept is None:
            kept = json.dumps(messages.of_moments(session, ladder, number, version, data))
            self._keep(at, kept)
        return json.loads(kept)

    def _keep(self, at: tuple[int, int], body: str | None) -> None:
        """Keep a rendered body for the other webhooks (the workers share the cache: under the lock)."""
        with self.lock:
            self.bodies[at] = body
            while len(self.bodies) > BODIES:
                del self.bodies[next(iter(self.bodies))]

    def _record(self, session: Session, done: list[Attempt]) -> bool:
        """Write how a turn's attempts went, each delivered, to retry later, or failed (the webhook then shows as
        failing); whether the webhook may go on at once (nothing of it waits for a retry)."""
        now = _now()
        hook = done[0].hook
        if not storage.webhooks.renew(session, hook.ladder_id, hook.id, self.owner, self._until(now)):
            logger.info("webhook %d: another process took it over, or it was deleted: attempts not recorded", hook.id)
            return False  # the holder attempts them again
        hook_values: dict = {"retry_at": None}
        for hook, delivery, outcome in done:
            attempts = delivery.attempts + 1
            values = {"attempts": attempts, "attempted_at": now, "response_code": outcome.code, "error": outcome.error}
            if outcome.delivered:
                values |= {"status": "delivered", "delivered_at": now}
                hook_values["failing"] = False
            elif attempts >= self.settings.webhooks_attempts:
                values |= {"status": "failed"}
                hook_values["failing"] = True  # and its next deliveries go at once
            else:
                wait = self.settings.webhooks_retry_seconds * 2 ** (attempts - 1)
                hook_values["retry_at"] = now + timedelta(seconds=wait)
            if not storage.webhooks.attempted(session, delivery, values):
                return False  # the webhook was deleted meanwhile
            if not outcome.delivered:
                logger.info("webhook %d: attempt %d of delivery %d: %s", hook.id, attempts, delivery.id, outcome.error)
        if hook_values["retry_at"] is None and storage.webhooks.pending(session, hook.ladder_id, hook.id, 1):
            hook_values["retry_at"] = now  # the turn's later deliveries, not tried yet
        storage.webhooks.move(session, hook, self.owner, **hook_values)
        return hook_values["retry_at"] is None or hook_values["retry_at"] <= now
