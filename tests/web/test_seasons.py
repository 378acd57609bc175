"""Seasons on the ladder page, at phone and desktop size: a past season's standings show the number they are ranked
by and the record as the ladder plays (W–L without draws, as the head-to-head of a player's page); a ladder whose
seasons close themselves says when the next one closes and what it will hold."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from tests.web.conftest import HTTP, make_ladder


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_past_season_shows_the_sure_rating_it_is_ranked_by_and_won_lost_without_draws(base, open_page, size):
    ladder = make_ladder(base, f"past-{size}", play={"draws": False})
    for loser in ("dee", "fay", "eve"):  # a newcomer's three wins: a high rating, not yet a sure one
        ladder.post(["zoe"], [loser])
    closed = HTTP.post(f"{ladder.api}/seasons", json={"name": "Spring"}, headers=ladder.auth)
    assert closed.status_code == 201, closed.text
    archived = ladder.get("/seasons/Spring")["items"]
    ranked = [r for r in archived if not r["provisional"]]
    # The sure rating orders the standings, not the rating: the two orders differ here, as they did in the office.
    assert [r["conservative"] for r in ranked] == sorted((r["conservative"] for r in ranked), reverse=True)
    assert [r["elo"] for r in ranked] != sorted((r["elo"] for r in ranked), reverse=True)

    page = open_page(size)
    page.goto(ladder.url)
    page.click("#past-seasons summary")
    rows = page.locator("#season-standings tbody tr")
    expect(rows).to_have_count(len(archived))
    heads = page.locator("#season-standings thead th")
    expect(heads).to_have_text(["#", "Player", "Sure rating", "W–L"])
    for n, row in enumerate(archived):
        cells = rows.nth(n).locator("td")
        expect(cells.nth(2)).to_have_text(str(round(row["conservative"])))
        expect(cells.nth(3)).to_have_text(f"{row['wins']}–{row['losses']}")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")  # nothing scrolls sideways
    picked = page.locator("#season").bounding_box()
    assert picked["x"] >= 0 and picked["x"] + picked["width"] <= page.evaluate("window.innerWidth"), picked

    # A player's head-to-head: won–lost as well.
    page.goto(f"{ladder.url}/players/ann")
    met = ladder.get("/players/ann/head-to-head")["items"]
    bob = next(r for r in met if r["key"] == "bob")
    cells = page.locator("#rivals-table tr[data-key=bob] td")
    expect(cells.nth(1)).to_have_text(f"{bob['singles']['wins']}–{bob['singles']['losses']}")
    expect(cells.nth(2)).to_have_text(f"{bob['doubles']['wins']}–{bob['doubles']['losses']}")
    expect(page.locator("#rivals-table thead abbr").nth(0)).to_have_attribute("title", "Singles against them: won–lost")
    expect(page.locator("#rivals .note")).to_contain_text("Won–lost")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_ladder_whose_seasons_close_themselves_says_when_the_next_closes_and_what_it_holds(base, open_page, size):
    ladder = make_ladder(base, f"monthly-{size}", season_every="month")  # its games dated over the past week
    now = datetime.now(UTC)
    end = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    page = open_page(size)
    page.goto(ladder.url)
    page.click("#past-seasons summary")
    said = page.locator("#seasons-box")
    expect(said).to_contain_text(
        f"Seasons close by themselves at the end of each month (UTC). The next, “{now:%Y-%m}”, closes on "
        f"{end.day} {end:%B %Y} at 00:00 UTC with every game so far (14 games), those played before seasons closed "
        "by themselves included"
    )
    expect(said).not_to_contain_text("an admin closes one")

    closed = HTTP.post(f"{ladder.api}/seasons", json={"name": "Spring"}, headers=ladder.auth)
    assert closed.status_code == 201, closed.text
    page.reload()
    page.click("#past-seasons summary")
    expect(page.locator("#next-season")).to_contain_text(f"The next, “{now:%Y-%m}”, closes on {end.day} {end:%B %Y}")
    expect(page.locator("#next-season")).to_contain_text("with the games after “Spring” (from game #15)")
    expect(page.locator("#season-standings tbody tr")).to_have_count(6)
