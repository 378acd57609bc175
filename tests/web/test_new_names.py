"""A new player's name as typed, capitals and accents kept, wherever the ladder page names them: the toast of the
game that made them, the latest results on the page that recorded it and on every page that receives it live."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.web.conftest import HTTP, make_ladder


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_new_players_name_shows_as_typed_in_the_toast_and_the_results_live_too(base, open_page, size):
    ladder = make_ladder(base, f"new-names-{size}")
    for key, name in [("ingrid", "Ingrid Sørensen"), ("jose", "José Álvarez")]:
        assert HTTP.post(f"{ladder.api}/players", json={"key": key, "name": name}, headers=ladder.auth).is_success
    watcher = open_page(size)
    watcher.goto(ladder.url)
    watcher.wait_for_selector(".live[data-state=live]")
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#feed li.game", state="attached")
    for tab in (page, watcher) if size == "phone" else ():
        tab.click("button[data-tab=record]" if tab is page else "button[data-tab=results]")
    for tab in (page, watcher):  # any moment a folded key ("åsa berg") is on screen, it is noted
        tab.evaluate("""() => new MutationObserver(() => {
            if (/åsa berg|łukasz nowak/.test(document.body.innerText)) window.sawKey = true;
        }).observe(document.body, { childList: true, subtree: true, characterData: true })""")
    page.click("label:has(input[name=mode][value=doubles])")
    for picker, typed in [("a-0", "Åsa Berg"), ("a-1", "jose"), ("b-0", "ingrid"), ("b-1", "Łukasz Nowak")]:
        page.fill(f"#{picker}", typed)
        page.keyboard.press("Enter")
    page.click("#won-a")
    for typed in ("Åsa Berg", "Łukasz Nowak"):
        page.locator("dialog[open]").get_by_role("button", name=f"Yes, add “{typed}”").click()
    page.wait_for_selector("#changes li")
    game = ladder.get("/games", limit=1)["items"][0]
    assert [[p["key"] for p in s["players"]] for s in game["sides"]] == [
        ["åsa berg", "jose"],
        ["ingrid", "łukasz nowak"],
    ]
    changes = page.locator("#changes li .who")
    expect(changes).to_have_text(["Åsa Berg", "José Álvarez", "Ingrid Sørensen", "Łukasz Nowak"])
    line = "Åsa Berg \\+\\d+ & José Álvarez \\+\\d+ beat Ingrid Sørensen −\\d+ & Łukasz Nowak −\\d+"
    for tab in (page, watcher):
        if size == "phone" and tab is page:
            tab.click("button[data-tab=results]")
        item = tab.locator(f"#feed li.game[data-id='{game['id']}'] .line")
        expect(item).to_have_text(re.compile(f"^{line}"))
        expect(tab.locator(f"#feed li.game[data-id='{game['id']}'] .moment-chip.first_win").first).to_contain_text(
            "Åsa Berg"
        )
        assert tab.evaluate("window.sawKey === undefined")


def test_a_name_typed_without_its_accents_finds_the_player(base, open_page):
    """The office types names as their keyboards allow: "alvarez", "sorensen", "lukasz nowak" and "oneil" find José
    Álvarez, Ingrid Sørensen, Łukasz Nowak and Tom O'Neil, and a whole name typed so is the player, not a new one;
    a name picked already on the other side says so."""
    ladder = make_ladder(base, "folded-names", games=False)
    people = [
        ("jose", "José Álvarez"),
        ("ingrid", "Ingrid Sørensen"),
        ("lukasz", "Łukasz Nowak"),
        ("tom", "Tom O'Neil"),
    ]
    for key, name in people:
        assert HTTP.post(f"{ladder.api}/players", json={"key": key, "name": name}, headers=ladder.auth).is_success
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=tom]")
    for typed, key in [("alvarez", "jose"), ("Jose Alvarez", "jose"), ("sorensen", "ingrid"),
                       ("lukasz nowak", "lukasz"), ("oneil", "tom"), ("Tom ONeil", "tom")]:  # fmt: skip
        page.fill("#a-0", typed)
        options = page.locator("#a-0-list [role=option]")
        expect(options.first).to_have_attribute("data-key", key)
        if " " in typed:  # a whole name: the player, not a new one (a part of a name may start a new player)
            expect(page.locator("#a-0-list li.new")).to_have_count(0)
    page.keyboard.press("Enter")  # Tom O'Neil
    page.fill("#b-0", "Tom ONeil")
    expect(page.locator("#b-0-list li.none")).to_have_text("Tom O'Neil is already picked")
    page.fill("#b-0", "Jose Alvarez")
    page.keyboard.press("Enter")
    page.click("#won-b")
    page.wait_for_selector("#changes li")  # recorded at once: no "New player?" question
    game = ladder.get("/games", limit=1)["items"][0]
    assert [([p["key"] for p in s["players"]], s["rank"]) for s in game["sides"]] == [(["tom"], 2), (["jose"], 1)]


def test_a_pickers_list_on_a_phone_is_whole_on_the_screen_and_offers_everyone(base, open_page):
    """On a phone the lowest picker's list would pass under the tab bar: the page scrolls up so that every
    suggestion shows. With nothing typed, the recent players come first and the others follow by name."""
    ladder = make_ladder(base, "phone-list")
    page = open_page("phone", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#feed li.game", state="attached")
    page.click("button[data-tab=record]")
    page.click("label:has(input[name=mode][value=doubles])")
    page.click("#b-1")
    options = page.locator("#b-1-list [role=option]")
    expect(options).to_have_count(6)  # the six colleagues, none picked yet
    page.wait_for_timeout(300)  # the scroll

    bar = page.locator("nav.tabs").bounding_box()
    shown = page.locator("#b-1-list").bounding_box()
    assert shown["y"] + shown["height"] <= bar["y"] + 1, (shown, bar)
