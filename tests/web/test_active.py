""" "Most active" on the ladder page, at phone and desktop size: the players with the most games as the ladder counts
them (the standings' games), however many games ago they started, and kept up to date live."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.conftest import HTTP, make_ladder


def games_of(ladder) -> dict[str, int]:
    """Each player's games, as the standings count them."""
    return {r["key"]: r["games"] for r in ladder.get("/leaderboard", limit=100)["items"]}


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_most_active_counts_every_game_of_each_player_and_follows_new_ones(base, open_page, size):
    ladder = make_ladder(base, f"active-{size}", games=False)
    assert HTTP.post(f"{ladder.api}/players", json={"key": "zoe", "name": "Zoë"}, headers=ladder.auth).is_success
    # Zoë's 30 games first, then 80 of the others: the latest 100 games hold only 20 of hers.
    games = [(["zoe"], ["dee"]) if n % 2 else (["dee"], ["zoe"]) for n in range(30)]
    games += [(["ann"], ["bob"]), (["bob"], ["cy"]), (["cy"], ["ann"]), (["eve"], ["fay"])] * 20
    body = {"games": [{"sides": [{"players": won, "rank": 1}, {"players": lost, "rank": 2}]} for won, lost in games]}
    assert HTTP.post(f"{ladder.api}/games/batch", json=body, headers=ladder.auth).status_code == 201

    page = open_page(size)
    page.goto(ladder.url)
    page.wait_for_selector(".live[data-state=live]")
    if size == "phone":
        page.click("button[data-tab=results]")
    played = games_of(ladder)
    rows = page.locator("#active li")
    expect(rows).to_have_count(5)
    expect(page.locator("#active li[data-key=zoe]")).to_contain_text("Zoë 30 games")
    shown = [(row.get_attribute("data-key"), row.inner_text()) for row in rows.all()]
    for key, text in shown:
        assert f" {played[key]} games" in text, (key, text, played)  # as the standings count them
    counts = [played[key] for key, _ in shown]
    assert counts == sorted(played.values(), reverse=True)[:5]  # the most games first
    expect(page.locator("#active li[data-key=zoe]")).to_contain_text("Zoë 30 games")

    ladder.post(["zoe"], ["eve"])  # live: another client's game
    expect(page.locator("#active li[data-key=zoe]")).to_contain_text("Zoë 31 games")
    expect(page.locator("#active li[data-key=zoe]")).to_contain_text("last just now")
