"""The admin page's Webhooks section at phone and desktop size, against a real local receiver: a webhook added (its
secret shown once), its deliveries seen, a failing one shown as failing, and deleted after a confirmation."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import expect

from devtools.receiver import Receiver, receiver
from devtools.server import live_server
from tests.web.conftest import make_ladder


@pytest.fixture(scope="module")
def hooked(migrated_sqlite, tmp_path_factory) -> Iterator[str]:
    """A server that may send webhooks to loopback, with quick retries (over a copy of the migrated database)."""
    path = tmp_path_factory.mktemp("hooks") / "melo.db"
    shutil.copyfile(migrated_sqlite, path)
    env = {"MELO_WEBHOOKS_ALLOW_PRIVATE": "true", "MELO_WEBHOOKS_ATTEMPTS": "2", "MELO_WEBHOOKS_RETRY_SECONDS": "0.05"}
    with live_server(f"sqlite:///{path}", env=env | {"MELO_MIGRATE_ON_START": "false"}) as url:
        yield url


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as r:
        yield r


def no_sideways_scroll(page) -> None:
    screen = page.viewport_size["width"]
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= screen and width[1] == screen, width


def test_add_a_webhook_see_its_deliveries_and_delete_it_when_failing(hooked, hook, open_page):
    ladder = make_ladder(hooked, "hooks", games=False)
    page = open_page("phone", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/admin#webhooks")
    expect(page.locator("#no-webhooks")).to_have_text("No webhooks yet.")
    page.get_by_label("Address (https)").fill(hook.url)
    page.get_by_label("A weekly digest").check()
    expect(page.get_by_label("Games", exact=True)).to_be_checked()
    page.click("#add-webhook")
    expect(page.locator("#webhook-secret")).to_contain_text("whsec_")
    [made] = ladder.get("/webhooks")["items"]
    assert made["url"] == hook.url and made["events"] == ["game", "season", "digest"] and "secret" not in made
    item = page.locator(f"#webhook-list li[data-id='{made['id']}']")
    expect(item).to_contain_text("games, season results, a weekly digest · working")
    ladder.post(["ann"], ["bob"])
    assert json.loads(hook.wait_for(1)[0].body)["text"].startswith("Ann Archer beat Bob Baker")
    item.get_by_role("button", name="Recent deliveries").click()
    expect(item.locator(".deliveries li")).to_have_text(["games · delivered · 1 attempt · answered 200 · just now"])
    no_sideways_scroll(page)

    hook.otherwise = 500  # the receiver breaks: after its attempts the webhook shows as failing
    ladder.post(["cy"], ["dee"])
    deadline = time.monotonic() + 10
    while not ladder.get("/webhooks")["items"][0]["failing"]:
        assert time.monotonic() < deadline, "the webhook was not marked failing"
        time.sleep(0.05)
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/admin#webhooks")
    item = page.locator(f"#webhook-list li[data-id='{made['id']}']")
    expect(item).to_contain_text("failing: its last message could not be delivered")
    item.get_by_role("button", name="Recent deliveries").click()
    expect(item.locator(".deliveries li").first).to_contain_text("games · failed · 2 attempts · answered 500")
    no_sideways_scroll(page)
    item.get_by_role("button", name=f"Delete the webhook to {hook.url}").click()
    page.locator("dialog[open]").get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("#no-webhooks")).to_have_text("No webhooks yet.")
    assert httpx.get(f"{ladder.api}/webhooks", headers=ladder.auth).json()["items"] == []
