"""Recording games on the ladder page: the pickers, who won, the toast with each change and its Undo, the key asked
for once, free-for-all and seats."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import HTTP, make_ladder, shown


class Actions:
    """A visitor's clicks and key presses, counted."""

    def __init__(self, page):
        self.page = page
        self.count = 0

    def click(self, selector: str) -> None:
        self.count += 1
        self.page.click(selector)

    def press(self, key: str) -> None:
        self.count += 1
        self.page.keyboard.press(key)


def players_of(game: dict) -> list[list[str]]:
    return [[p["key"] for p in side["players"]] for side in game["sides"]]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_singles_game_takes_at_most_six_actions_and_the_toast_shows_each_change(base, open_page, size):
    ladder = make_ladder(base, f"quick-{size}")
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    page.wait_for_selector("#feed li.game", state="attached")
    act = Actions(page)
    if size == "phone":
        act.click("button[data-tab=record]")  # one section at a time on a phone
    act.click("#a-0")
    # Without typing, the players of the latest games are offered, the latest first.
    latest = ladder.get("/games", limit=1)["items"][0]
    assert page.locator("#a-0-list [role=option]").first.get_attribute("data-key") in [
        key for side in players_of(latest) for key in side
    ]
    act.click("#a-0-list [role=option][data-key=dee]")
    expect(page.locator("#b-0")).to_be_focused()  # on to the next player at once
    expect(page.locator("#b-0-list [role=option][data-key=dee]")).to_have_count(0)  # not offered twice
    act.click("#b-0-list [role=option][data-key=ann]")
    expect(page.locator("#won-a")).to_have_text("Dee Dunn won")
    expect(page.locator("#won-b")).to_have_text("Ann Archer won")
    act.click("#won-a")
    page.wait_for_selector("#changes li")

    assert act.count <= 6, act.count
    assert act.count == (5 if size == "phone" else 4)
    game = ladder.get("/games", limit=1)["items"][0]
    assert players_of(game) == [["dee"], ["ann"]] and [s["rank"] for s in game["sides"]] == [1, 2]
    assert page.inner_text("#toast .toast-title") == f"Game #{game['id']} recorded."
    for side in game["sides"]:
        for p in side["players"]:
            line = page.inner_text(f"#changes li[data-key={p['key']}]")
            assert line.startswith(("Dee Dunn " if p["key"] == "dee" else "Ann Archer ") + shown(p["elo_change"]))
            assert line.endswith(f"→ {round(p['elo_after'])}")
    assert game["sides"][0]["players"][0]["elo_change"] > 0 > game["sides"][1]["players"][0]["elo_change"]
    # Dee's gain and Ann's loss differ: one line says why.
    assert len({round(abs(p["elo_change"])) for side in game["sides"] for p in side["players"]}) == 2
    expect(page.locator("#changes-why")).to_have_text(re.compile(r"^Gains and losses differ: a rating still settling"))
    # The form is ready for the next game.
    assert page.input_value("#a-0") == "" and page.input_value("#b-0") == ""
    # The why is told once on a device: the next game's toast is the changes alone.
    for picker, key in [("a-0", "fay"), ("b-0", "ann")]:
        page.fill(f"#{picker}", key)
        page.keyboard.press("Enter")
    page.click("#won-a")
    expect(page.locator("#toast .toast-title")).to_have_text(f"Game #{game['id'] + 1} recorded.")
    second = ladder.get("/games", limit=1)["items"][0]
    assert len({round(abs(p["elo_change"])) for side in second["sides"] for p in side["players"]}) == 2  # they differ
    expect(page.locator("#changes-why")).to_have_count(0)


def test_undo_in_the_toast_voids_the_game(base, open_page):
    ladder = make_ladder(base, "undo-toast")
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    page.fill("#a-0", "eve")
    page.fill("#b-0", "Bob Baker")  # a name typed in full is the player, as a key is
    page.click("#won-b")
    page.wait_for_selector("#toast-undo")
    game = ladder.get("/games", limit=1)["items"][0]
    assert players_of(game) == [["eve"], ["bob"]] and [s["rank"] for s in game["sides"]] == [2, 1]
    page.wait_for_selector(f"#feed li.game[data-id='{game['id']}']:not(.voided)")
    page.click("#toast-undo")
    expect(page.locator("#toast")).to_have_text(re.compile(f"Game #{game['id']} undone"))
    page.wait_for_selector(f"#feed li.game.voided[data-id='{game['id']}']")
    assert ladder.get(f"/games/{game['id']}")["voided_at"]
    assert ladder.get("/audit")["consistent"]


def test_undo_an_older_game_from_the_results_asks_first(base, open_page):
    ladder = make_ladder(base, "undo-feed")
    posted = ladder.post(["fay"], ["eve"])
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    item = page.locator(f"#feed li.game[data-id='{posted['id']}']")
    item.get_by_role("button", name=f"Undo game {posted['id']}").click()
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text(f"Undo game #{posted['id']}?")
    expect(dialog).to_contain_text("Fay Fox beat Eve Ellis")
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.locator("dialog")).to_have_count(0)
    assert not ladder.get(f"/games/{posted['id']}")["voided_at"]
    item.get_by_role("button", name=f"Undo game {posted['id']}").click()
    page.locator("dialog[open]").get_by_role("button", name="Undo game").click()
    page.wait_for_selector(f"#feed li.game.voided[data-id='{posted['id']}']")
    assert "undone" in page.inner_text(f"#feed li.game[data-id='{posted['id']}'] .meta")
    assert ladder.get(f"/games/{posted['id']}")["voided_at"]


def test_a_doubles_game_by_keyboard_alone(base, open_page):
    ladder = make_ladder(base, "keyboard")
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    page.focus("input[name=mode][value=singles]")
    page.keyboard.press("ArrowRight")  # the kind of game is a radio group: arrows move through it
    expect(page.locator("input[name=mode][value=doubles]")).to_be_checked()
    page.keyboard.press("Tab")
    expect(page.locator("#a-0")).to_be_focused()
    for picker, typed in [("a-0", "ann"), ("a-1", "cy"), ("b-0", "bo"), ("b-1", "dee")]:
        expect(page.locator(f"#{picker}")).to_be_focused()
        page.keyboard.type(typed)
        expect(page.locator(f"#{picker}")).to_have_attribute("aria-activedescendant", f"{picker}-opt-0")
        page.keyboard.press("Enter")  # takes the best match and moves on
    expect(page.locator("#score-a")).to_be_focused()  # the score next (optional here), then who won
    page.keyboard.press("Tab")
    expect(page.locator("#score-b")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#won-a")).to_be_focused()
    expect(page.locator("#won-a")).to_have_text("Ann Archer & Cy Cole won")
    expect(page.locator("#preview")).to_have_text(re.compile(r"^Chances: Ann Archer & Cy Cole \d+% · Bob Baker & "))
    page.keyboard.press("Tab")
    expect(page.locator("#won-b")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_selector("#changes li")
    game = ladder.get("/games", limit=1)["items"][0]
    assert players_of(game) == [["ann", "cy"], ["bob", "dee"]] and [s["rank"] for s in game["sides"]] == [2, 1]
    assert page.locator("#changes li").count() == 4


def test_the_pickers_suggest_as_you_type(base, open_page):
    ladder = make_ladder(base, "pickers")
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    box = page.locator("#a-0")
    box.click()
    expect(box).to_have_attribute("aria-expanded", "true")
    box.type("a")
    options = page.locator("#a-0-list [role=option]")
    # A name starting with the letters first (Ann Archer), then names containing them (Bob Baker, Fay Fox).
    assert options.first.get_attribute("data-key") == "ann"
    known = page.locator("#a-0-list [role=option]:not(.new)")
    assert set(known.evaluate_all("os => os.map(o => o.dataset.key)")) == {"ann", "bob", "fay"}
    expect(options.last).to_have_text("New player a")  # or someone new
    expect(box).to_have_attribute("aria-activedescendant", "a-0-opt-0")
    page.keyboard.press("ArrowDown")
    expect(box).to_have_attribute("aria-activedescendant", "a-0-opt-1")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Escape")
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#a-0-list")).to_be_hidden()
    box.fill("fa")
    page.keyboard.press("Tab")  # Tab takes the highlighted player and moves on
    expect(box).to_have_value("Fay Fox")
    expect(page.locator("#b-0")).to_be_focused()
    page.keyboard.type("zed")
    expect(page.locator("#b-0-list [role=option]").last).to_have_text("New player zed")
    page.keyboard.press("Enter")
    page.click("#won-b")
    page.locator("dialog[open]").get_by_role("button", name="Yes, add “zed”").click()  # confirmed
    page.wait_for_selector("#changes li[data-key=zed]")  # created on the fly
    assert players_of(ladder.get("/games", limit=1)["items"][0]) == [["fay"], ["zed"]]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_pickers_show_a_players_key_only_beside_a_name_another_player_has_too(base, open_page, size):
    # "Bob Baker" alone needs no "bob" beside it; two Ann Archers are told apart by their keys.
    ladder = make_ladder(base, f"twins-{size}")
    twin = {"key": "ann2", "name": "Ann Archer"}
    assert HTTP.post(f"{ladder.api}/players", json=twin, headers=ladder.auth).is_success
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    if size == "phone":
        page.click("button[data-tab=record]")
    box = page.locator("#a-0")
    box.click()
    box.fill("b")
    expect(page.locator("#a-0-list [role=option][data-key=bob]")).to_have_text("Bob Baker")
    box.fill("ann")
    expect(page.locator("#a-0-list [role=option][data-key=ann]")).to_have_text("Ann Archer ann")
    expect(page.locator("#a-0-list [role=option][data-key=ann2]")).to_have_text("Ann Archer ann2")


def test_the_write_key_is_asked_for_once_and_a_wrong_one_is_named(base, open_page):
    ladder = make_ladder(base, "asked")
    page = open_page("desktop")
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    page.fill("#a-0", "ann")
    page.fill("#b-0", "bob")
    page.click("#won-a")
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text("This needs this ladder's write key")
    dialog.get_by_label("Key").fill("mk_not-the-key")
    dialog.get_by_role("button", name="Save key").click()
    expect(page.locator("dialog[open] .error")).to_have_text("That key is not one of this ladder's keys.")
    page.locator("dialog[open]").get_by_label("Key").fill(ladder.key)
    page.locator("dialog[open]").get_by_role("button", name="Save key").click()
    page.wait_for_selector("#changes li")
    assert players_of(ladder.get("/games", limit=1)["items"][0]) == [["ann"], ["bob"]]
    page.reload()
    page.wait_for_selector("#board tr[data-key=ann]")
    expect(page.locator(".key-line")).to_contain_text("saved in this browser")
    page.fill("#a-0", "cy")
    page.fill("#b-0", "dee")
    page.click("#won-draw")
    page.wait_for_selector("#changes li")
    expect(page.locator("dialog")).to_have_count(0)  # not asked again
    assert [s["rank"] for s in ladder.get("/games", limit=1)["items"][0]["sides"]] == [1, 1]
    # A key that cannot write is named as such.
    read = httpx.post(f"{ladder.api}/keys", json={"name": "wall", "role": "read"}, headers=ladder.auth).json()["key"]
    page.evaluate(f"localStorage.setItem('melo-write-key:{ladder.slug}', {read!r})")
    page.fill("#a-0", "cy")
    page.fill("#b-0", "dee")
    page.click("#won-a")
    expect(page.locator("dialog[open] .error")).to_have_text("This needs a write key; that key is a read key.")


def test_a_free_for_all_with_a_tie(base, open_page):
    ladder = make_ladder(base, "ffa")
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    page.get_by_label("Free-for-all", exact=True).check()
    page.click("#add-player")
    for n, (player, place) in enumerate([("cy", 1), ("ann", 2), ("bob", 2), ("eve", 4)], start=1):
        page.fill(f"#ffa-{n}", player)
        page.fill(f"#ffa-place-{n}", str(place))
    page.click("#submit-game")
    page.wait_for_selector("#changes li")
    game = ladder.get("/games", limit=1)["items"][0]
    assert [(players_of({"sides": [s]})[0][0], s["rank"]) for s in game["sides"]] == [
        ("cy", 1),
        ("ann", 2),
        ("bob", 2),
        ("eve", 4),
    ]
    item = page.locator(f"#feed li.game[data-id='{game['id']}']")
    expect(item).to_contain_text("1. Cy Cole")
    expect(item).to_contain_text("4. Eve Ellis")


def test_the_seat_question_only_on_a_ladder_with_seats(base, open_page):
    plain = make_ladder(base, "no-seats", games=False)
    tt = make_ladder(base, "seats", games=False, seats=["server", "receiver"])
    page = open_page("desktop", saved={tt.slug: tt.key, plain.slug: plain.key})
    page.goto(plain.url)
    page.wait_for_selector("#game-form")
    expect(page.locator("#seat-choice")).to_have_count(0)
    assert "served" not in page.inner_text("#record")
    page.goto(tt.url)
    page.wait_for_selector("#seat-choice")
    expect(page.locator("#seat-choice legend")).to_have_text("Who served first?")
    page.fill("#a-0", "ann")
    page.fill("#b-0", "bob")
    choice = page.locator("#seat-choice")
    expect(choice).to_contain_text("Ann Archer")  # in names, once the players are picked
    choice.get_by_label("Bob Baker").check()
    page.click("#won-a")
    page.wait_for_selector("#changes li")
    game = tt.get("/games", limit=1)["items"][0]
    assert [s["seat"] for s in game["sides"]] == ["receiver", "server"]
    page.get_by_label("Not noted").check()
    page.fill("#a-0", "cy")
    page.fill("#b-0", "dee")
    page.click("#won-a")
    expect(page.locator("#toast .toast-title")).to_have_text(f"Game #{game['id'] + 1} recorded.")
    assert [s["seat"] for s in tt.get("/games", limit=1)["items"][0]["sides"]] == [None, None]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_skip_link_leads_the_keyboard_to_the_first_player_and_the_picks_to_the_score(base, open_page, size):
    ladder = make_ladder(base, f"skip-{size}")
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    page.keyboard.press("Tab")  # the page's own skip link first, then the record form's
    page.keyboard.press("Tab")
    expect(page.locator("a.skip").nth(1)).to_be_focused()
    expect(page.locator("a.skip").nth(1)).to_have_text("Skip to recording a game")
    page.keyboard.press("Enter")
    expect(page.locator("#a-0")).to_be_focused()
    expect(page.locator("#a-0")).to_be_in_viewport()
    for picker, typed in [("a-0", "ann"), ("b-0", "bo")]:
        expect(page.locator(f"#{picker}")).to_be_focused()
        page.keyboard.type(typed)
        expect(page.locator(f"#{picker}")).to_have_attribute("aria-activedescendant", f"{picker}-opt-0")
        page.keyboard.press("Enter")
    points = page.locator(".scores input.points").first  # the points come before who won, as on the page
    expect(points).to_be_focused()
