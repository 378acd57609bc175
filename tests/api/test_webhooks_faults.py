"""Outgoing webhooks against hostile receivers and awkward data: a receiver that trickles its answer is cut off at
the timeout, a NUL byte in an answer is recorded safely, an event that cannot be rendered is passed over, a claim
taken over by another process is never recorded over, and the delivery log is pruned with the event log."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from app import storage
from app.core.config import Settings
from app.webhooks import sending
from devtools.receiver import Receiver, receiver
from tests.api.helpers import add_webhook, deliveries, post_game, settings_for, settled, until
from tests.conftest import admin, make_ladder


@pytest.fixture
def settings(database_url) -> Settings:
    return settings_for(database_url)


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as r:
        yield r


@contextmanager
def scripted(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A receiver on loopback that reads each request's head and then lets ``answer`` write to the connection as
    it likes (raw bytes, slowly); yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            got = b""
            while b"\r\n\r\n" not in got and (chunk := conn.recv(65536)):
                got += chunk
            with contextlib.suppress(OSError):  # the sender hung up: what this receiver is for
                answer(conn)

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    finally:
        stop.set()
        thread.join()
        listener.close()


def drip(conn: socket.socket) -> None:
    """A status line one byte every 0.3 s: each read is quick, the answer never ends."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" * 4:
        conn.sendall(bytes([byte]))
        time.sleep(0.3)


def test_a_receiver_that_trickles_its_answer_is_cut_off_at_the_timeout():
    with scripted(drip) as url:
        started = time.monotonic()
        outcome = sending.send(url, b"{}", "secret", 1.0, True)
        took = time.monotonic() - started
    assert not outcome.delivered and outcome.error == "no answer within 1 s"
    assert took < 1.5, took  # without a watchdog: until the receiver stops (12 s and more)


def test_a_url_the_sender_could_not_write_is_refused_never_raised():
    outcome = sending.send("http://127.0.0.1:9/caf\u00e9", b"{}", "secret", 0.3, True)
    assert not outcome.delivered and "ASCII" in outcome.error


def test_settings_that_would_overflow_a_wait_are_refused():
    for bad in ({"webhooks_digest_hours": 1e12}, {"webhooks_retry_seconds": 1e12}):
        with pytest.raises(ValidationError):
            Settings(**bad)


def test_a_nul_byte_or_escape_in_an_answer_is_recorded_as_a_space(client):
    def refuse(conn: socket.socket) -> None:
        said = b"bad\x00\x1b[31mred\r\nline"
        conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n%s" % (len(said), said))

    make_ladder(client, auto_create_players=True)
    with scripted(refuse) as url:
        made = add_webhook(client, url, ["game"])
        post_game(client, "ada", "bob")
        [delivery] = until(lambda: [d for d in deliveries(client, made["id"]) if d["status"] == "failed"])
    assert delivery["attempts"] == 3 and delivery["response_code"] == 500
    assert delivery["error"] == "answered 500: bad  [31mred  line"


def ladder_id(client) -> int:
    with client.app.state.db.reading() as session:
        return session.execute(text("SELECT id FROM ladders WHERE slug = 'test'")).scalar_one()


def test_an_event_that_cannot_be_rendered_is_passed_over_and_the_next_arrive(client, hook):
    make_ladder(client, auto_create_players=True)
    made = add_webhook(client, hook.url, ["game"])
    with client.app.state.db.writing() as session:  # a game event of a form this version does not know
        storage.events.add(session, ladder_id(client), "game", {"unknown": 1})
        storage.ladders.log_events(session, ladder_id(client))
    named = {"key": "ada", "name": "[prize](https://e.com)"}
    assert client.post("/v1/ladders/test/players", json=named, headers=admin()).status_code == 201
    post_game(client, "ada", "bob")
    body = json.loads(hook.wait_for(1)[0].body)
    assert body["event"] == "game" and len(settled(client, made["id"], 1)) == 1
    # a name that is a markdown link is no link in Microsoft Teams: an unseen space breaks it
    assert body["text"].startswith("[prize]\u200b(https://e.com) beat bob")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_attempts_are_recorded_only_while_the_claim_is_held_and_the_holder_sends_again(client, hook):
    make_ladder(client, auto_create_players=True)
    made = add_webhook(client, hook.url, ["game"])
    hook.answers = [("hang", 0.4)]
    post_game(client, "ada", "bob")
    hook.wait_for(1)  # the receiver holds the first attempt: meanwhile another process takes the webhook over
    taken = "UPDATE webhooks SET lease_owner = 'another', lease_until = :until WHERE id = :id"
    with client.app.state.db.writing() as session:
        session.execute(text(taken), {"until": datetime.now(UTC) + timedelta(hours=1), "id": made["id"]})
    time.sleep(0.6)  # the attempt ended (0.3 s timeout): its result is the other process's to record
    [delivery] = deliveries(client, made["id"])
    assert delivery["status"] == "pending" and delivery["attempts"] == 0
    with client.app.state.db.writing() as session:  # the other process died: its claim lapses
        session.execute(text(taken), {"until": datetime.now(UTC) - timedelta(seconds=1), "id": made["id"]})
    [delivery] = settled(client, made["id"], 1)
    assert delivery["status"] == "delivered" and len(hook.wait_for(2)) == 2


def test_deleted_webhook_ids_are_not_reused_and_done_deliveries_are_pruned_with_the_events(client, hook):
    make_ladder(client, auto_create_players=True)
    gone = add_webhook(client, hook.url, ["game"])
    assert client.delete(f"/v1/ladders/test/webhooks/{gone['id']}", headers=admin()).status_code == 200
    made = add_webhook(client, hook.url, ["game"])
    assert made["id"] > gone["id"]  # a stale attempt of the deleted one never touches the new one
    post_game(client, "ada", "bob")
    settled(client, made["id"], 1)
    committer = client.app.state.committer
    committer.keep_events = timedelta(0)
    committer.expire_events()
    assert deliveries(client, made["id"]) == []
    # a webhook whose next events were pruned before it sent them goes on from the ladder's latest
    with client.app.state.db.writing() as session:
        session.execute(text("UPDATE webhooks SET cursor = 0 WHERE id = :id"), {"id": made["id"]})

    def caught_up() -> bool:
        with client.app.state.db.reading() as session:
            hook_row = storage.webhooks.get(session, ladder_id(client), made["id"])
            return hook_row.cursor == storage.webhooks.last_event(session, ladder_id(client))

    until(caught_up)
    post_game(client, "bob", "ada")
    assert json.loads(hook.wait_for(2)[1].body)["event"] == "game"
