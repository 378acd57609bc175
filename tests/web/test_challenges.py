"""Challenges on the pages: challenge a colleague from their page (or a standings row's details on a phone), see it
under Open challenges, record the result in one tap, and see the game in the results; a challenge made elsewhere
shows up live with a toast."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import make_ladder
from tests.web.test_pages import check_accessibility


def big_enough(locator) -> None:
    """WCAG 2.2's target size: at least 24 by 24 CSS pixels."""
    for n in range(locator.count()):
        box = locator.nth(n).bounding_box()
        assert box["width"] >= 24 and box["height"] >= 24, box


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_challenge_from_a_players_page_then_record_the_result_in_one_tap(base, open_page, size):
    ladder = make_ladder(base, f"duel-{size}", games=False)
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/players/bob")
    page.wait_for_selector("#stats")
    button = page.locator("button[data-challenge=bob]")
    big_enough(button)
    button.click()
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text("Challenge Bob Baker")
    page.click("#challenger")
    page.keyboard.type("an")
    page.click("#challenger-list [role=option][data-key=ann]")
    expect(page.locator("#challenger-list [role=option][data-key=bob]")).to_have_count(0)  # not oneself
    page.fill("#challenge-message", "lunch?")
    dialog.get_by_role("button", name="Send challenge").click()
    expect(page.locator("#toast .toast-title")).to_have_text("Ann Archer challenged Bob Baker")
    made = ladder.get("/challenges")["items"]
    assert [(c["from"], c["to"], c["message"], c["status"]) for c in made] == [("ann", "bob", "lunch?", "open")]

    page.goto(ladder.url + "#record")
    item = page.locator("#challenges li[data-id='1']")
    expect(item).to_contain_text("Ann Archer challenged Bob Baker")
    expect(item).to_contain_text("“lunch?”")
    big_enough(item.locator("button"))
    page.wait_for_selector(".live[data-state=live]")
    check_accessibility(page, tabs=0)
    # A challenge made elsewhere appears live, with a toast (to "you" on Dee's device); accepting it here marks it so.
    page.evaluate("slug => localStorage.setItem(`melo-me:${slug}`, 'dee')", ladder.slug)
    made = httpx.post(f"{ladder.api}/challenges", json={"from": "cy", "to": "dee"}, headers=ladder.auth)
    assert made.status_code == 201, made.text
    expect(page.locator("#toast .toast-title")).to_have_text("Cy Cole challenged you", timeout=3000)
    second = page.locator("#challenges li[data-id='2']")
    second.locator("button[data-answer=accept]").click()
    expect(second).to_contain_text("accepted")
    expect(second.locator("button[data-answer=accept]")).to_have_count(0)
    assert ladder.get("/challenges/2")["status"] == "accepted"

    # One tap on who won records the game against the challenge; it leaves the list and shows in the results.
    item.locator("button[data-winner=bob]").click()
    expect(page.locator("#toast .toast-title")).to_have_text("Game #1 recorded: Bob Baker won the challenge.")
    expect(item).to_have_count(0)
    played = ladder.get("/challenges/1")
    assert (played["status"], played["game"]) == ("played", 1)
    game = ladder.get("/games/1")
    assert [[p["key"] for p in side["players"]] for side in game["sides"]] == [["bob"], ["ann"]]
    assert [side["rank"] for side in game["sides"]] == [1, 2]
    if size == "phone":
        page.click("button[data-tab=results]")
    expect(page.locator("#feed li.game[data-id='1'] .line")).to_have_text(re.compile(r"^Bob Baker \S+ beat Ann Archer"))
    assert [g["id"] for g in ladder.get("/games")["items"]] == [1]

    if size == "phone":  # a standings row's details hold a Challenge button too; the last challenger is remembered
        page.click("button[data-tab=standings]")
        page.locator("#board tr[data-key=eve] button.toggle").click()
        page.locator("#board tr.details button[data-challenge=eve]").click()
        expect(page.locator("#challenger")).to_have_value("Ann Archer")
        page.locator("dialog[open]").get_by_role("button", name="Send challenge").click()
        expect(page.locator("#toast .toast-title")).to_have_text("Ann Archer challenged Eve Ellis")
        assert ladder.get("/challenges", status="open")["items"][0]["to"] == "eve"


def test_a_challenge_tapped_before_the_players_are_read_waits_for_them(base, open_page):
    """A player's page reads the ladder's players after its first render: a tap on Challenge before they are in
    (a slow connection, a busy server) opens the dialog once they are, naming the player and offering the others."""
    ladder = make_ladder(base, "duel-slow", games=False)
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    held = []

    def hold(route) -> None:  # answered below, not yet
        held.append(route)

    page.route(re.compile(r".*/leaderboard\?by=hodge.*"), hold)
    page.goto(f"{ladder.url}/players/bob")
    page.wait_for_selector("#stats")
    page.locator("button[data-challenge=bob]").click()
    page.wait_for_timeout(500)
    expect(page.locator("dialog[open]")).to_have_count(0)  # waiting for the players
    assert len(held) == 1
    held[0].continue_()
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text("Challenge Bob Baker")
    page.click("#challenger")
    page.keyboard.type("an")
    expect(page.locator("#challenger-list [role=option][data-key=ann]")).to_have_count(1)
