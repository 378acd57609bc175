"""Challenges on the pages: challenge a colleague from their page (or a standings row's details on a phone), see it
under Open challenges, record the result in one tap, and see the game in the results; a challenge made elsewhere
shows up live with a toast."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import check_accessibility, make_ladder


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

    # The points typed beside a challenge go with the winner's tap; one player's alone, or the winner's lower, are
    # refused before anything is sent.
    if size == "phone":
        page.click("button[data-tab=record]")
    expect(second.locator(".challenge-points")).to_have_text(
        re.compile(r"Points \(optional\):\s*Cy Cole\s*–\s*Dee Dunn")
    )
    second.locator("input[data-points=dee]").fill("21")
    second.locator("button[data-winner=dee]").click()
    expect(page.locator("#toast .toast-title")).to_have_text("Enter both players' points, or neither.")
    second.locator("input[data-points=cy]").fill("23")
    second.locator("button[data-winner=dee]").click()
    expect(page.locator("#toast .toast-title")).to_have_text("Dee Dunn won with fewer points: check the score.")
    assert ladder.get("/challenges/2")["status"] == "accepted"
    second.locator("input[data-points=cy]").fill("19")
    second.locator("button[data-winner=dee]").click()
    expect(page.locator("#toast .toast-title")).to_have_text("Game #2 recorded: Dee Dunn won the challenge 21-19.")
    game = ladder.get("/games/2")
    assert [(side["players"][0]["key"], side["score"]) for side in game["sides"]] == [("dee", 21), ("cy", 19)]

    if size == "phone":  # a standings row's details hold a Challenge button too; "me" (Dee, since above) challenges
        page.click("button[data-tab=standings]")
        page.locator("#board tr[data-key=eve] button.toggle").click()
        page.locator("#board tr.details button[data-challenge=eve]").click()
        expect(page.locator("#challenger")).to_have_value("Dee Dunn")
        # "Me" named, the message has the focus: no list of players covers it or the Send button.
        expect(page.locator("#challenge-message")).to_be_focused()
        expect(page.locator("#challenger-list")).to_be_hidden()
        page.fill("#challenge-message", "rematch?")
        page.locator("dialog[open]").get_by_role("button", name="Send challenge").click()
        expect(page.locator("#toast .toast-title")).to_have_text("You challenged Eve Ellis")
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


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_who_challenges_starts_as_me_on_this_device(base, open_page, size):
    ladder = make_ladder(base, f"me-duel-{size}", games=False)
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.add_init_script(f"localStorage.setItem('melo-me:{ladder.slug}', 'cy')")
    page.goto(f"{ladder.url}/players/bob")
    page.locator("button[data-challenge=bob]").click()
    expect(page.locator("#challenger")).to_have_value("Cy Cole")
    page.locator("dialog[open]").get_by_role("button", name="Send challenge").click()
    expect(page.locator("#toast .toast-title")).to_have_text("You challenged Bob Baker")
    assert [(c["from"], c["to"]) for c in ladder.get("/challenges")["items"]] == [("cy", "bob")]
    # Challenging "me" names nobody: who challenges is then asked.
    page.goto(f"{ladder.url}/players/cy")
    page.locator("button[data-challenge=cy]").click()
    expect(page.locator("#challenger")).to_have_value("")
    # Without "me", the last one to challenge from this browser.
    other = open_page(size, saved={ladder.slug: ladder.key})
    other.goto(f"{ladder.url}/players/dee")
    other.locator("button[data-challenge=dee]").click()
    expect(other.locator("#challenger")).to_have_value("")
    other.click("#challenger")
    other.keyboard.type("an")
    other.click("#challenger-list [role=option][data-key=ann]")
    other.locator("dialog[open]").get_by_role("button", name="Send challenge").click()
    expect(other.locator("#toast .toast-title")).to_have_text("Ann Archer challenged Dee Dunn")
    other.goto(f"{ladder.url}/players/eve")
    other.locator("button[data-challenge=eve]").click()
    expect(other.locator("#challenger")).to_have_value("Ann Archer")
