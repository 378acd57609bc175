"""Moments and last season on the ladder page, at phone and desktop size: a game's moments beside it in the
results, the latest in a short feed, a note when a new one arrives live; last season's podium above the standings."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import make_ladder


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_moments_show_beside_their_game_in_the_feed_and_live_with_last_seasons_podium(base, open_page, size):
    ladder = make_ladder(base, f"moments-{size}")
    closed = httpx.post(f"{ladder.api}/seasons", json={"name": "Autumn"}, headers=ladder.auth)
    assert closed.status_code == 201, closed.text
    podium = closed.json()["podium"]
    told = ladder.get("/moments", limit=5)["items"]
    assert told  # the six colleagues' first wins at least

    page = open_page(size)
    page.goto(ladder.url)
    page.wait_for_selector(".live[data-state=live]")
    shown = page.locator("#last-season")
    expect(shown).to_contain_text("Last season (Autumn):")
    for place, medal in zip(podium, ["🥇", "🥈", "🥉"], strict=False):
        expect(shown.locator(f".medal[data-rank='{place['rank']}']")).to_have_text(f"{medal} {place['name']}")

    if size == "phone":  # one section at a time: the results have a tab of their own
        page.get_by_role("button", name="Results", exact=True).click()
    feed = page.locator("#moments li.moment")
    expect(feed).to_have_count(len(told))
    expect(feed.first).to_contain_text(told[0]["text"])
    newest = told[0]
    if page.locator(f"#feed li.game[data-id='{newest['game']}']").count():
        expect(page.locator(f"#feed li.game[data-id='{newest['game']}'] .moment-chip").first).to_be_visible()

    # Fay has never won: her first win arrives live, beside its game, in the feed and as a note.
    posted = ladder.post(["fay"], ["ann"])
    item = page.locator(f"#feed li.game[data-id='{posted['id']}']")
    expect(item.locator(".moment-chip.first_win")).to_have_text("🎉 Fay Fox won for the first time")
    expect(page.locator("#moment-note")).to_contain_text("Fay Fox won for the first time")
    note = page.locator("#moment-note").bounding_box()
    for covered in (".page-head h1", ".live"):  # the note leaves the ladder's name and "Live" readable
        box = page.locator(covered).first.bounding_box()
        apart = box["y"] >= note["y"] + note["height"] or note["y"] >= box["y"] + box["height"]
        apart = apart or box["x"] >= note["x"] + note["width"] or note["x"] >= box["x"] + box["width"]
        assert apart, (covered, box, note)
    expect(page.locator("#moments")).to_contain_text("Fay Fox won for the first time")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")  # nothing scrolls sideways
