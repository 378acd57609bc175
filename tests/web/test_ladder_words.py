"""The ladder page in plain words, at phone and laptop size: the standings show the number they are sorted by and say
what it is, a player not ranked yet says how many games they need (as text, not a tooltip), counts read "1 game" and
"7,999 games", the header says whether the page is live, a typed name nobody has is confirmed before it makes a
player, the create-ladder address is checked in the browser and named by the server's error, form errors show next
to the buttons, and "me" is picked once per device."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from devtools.server import ADMIN_KEY
from tests.web.conftest import make_ladder


@pytest.fixture(scope="module")
def office(base):
    ladder = make_ladder(base, "words")
    ladder.post(["newbie"], ["dee"])  # 2-0 after two games: not ranked yet, one game to go
    ladder.post(["newbie"], ["eve"])
    return ladder


def in_view(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector, "e => { const b = e.getBoundingClientRect(); return b.top >= 0 && b.bottom <= window.innerHeight; }"
    )


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_standings_show_the_number_they_are_sorted_by_and_why_someone_is_not_ranked(base, open_page, office, size):
    page = open_page(size)
    page.goto(office.url)
    expect(page.locator("#ranked-by")).to_be_visible()
    expect(page.locator("#ranked-by")).to_contain_text("Ranked by the rating we are sure of")
    expect(page.locator("#board th.score-col")).to_have_text("Sure rating")
    board = office.get("/leaderboard", by="conservative")["items"]
    ranked = [p for p in board if not p["provisional"]]
    page.wait_for_selector("#board tr[data-key=newbie]")
    shown = page.eval_on_selector_all(
        "#board tbody tr[data-key]", "rows => rows.map(r => [r.dataset.key, r.querySelector('td.score').textContent])"
    )
    assert shown[: len(ranked)] == [[p["key"], str(round(p["conservative"]))] for p in ranked]
    numbers = [int(n) for _, n in shown[: len(ranked)]]
    assert numbers == sorted(numbers, reverse=True)  # the number on each row matches the order
    newbie = page.locator("#board tr[data-key=newbie]")
    expect(newbie.locator("td.rank")).to_have_text("–")
    expect(newbie.locator(".why-unranked")).to_be_visible()  # a phone shows it: no tooltip
    expect(newbie.locator(".why-unranked")).to_have_text("1 more game to be ranked")
    assert next(p for p in board if p["key"] == "newbie")["results_to_rank"] == 1
    expect(page.locator("#board tr.group")).to_contain_text("ranked after 3 games")
    ann = office.get("/players/ann")
    if size == "phone":
        page.locator("#board tr[data-key=ann] button.toggle").click()
        expect(page.locator("#details-ann")).to_contain_text(
            f"{round(ann['elo'])}, give or take {round(2 * ann['strength_se'])}"
        )
    else:  # one number a row, as on a phone: the rating it stands for, give or take, is the number's title
        row = page.locator("#board tr[data-key=ann]")
        expect(row.locator("td")).to_have_count(9)
        expect(row.locator("td.score")).to_have_attribute(
            "title", re.compile(rf"^{round(ann['elo'])}, give or take {round(2 * ann['strength_se'])} \(")
        )
        assert "±" not in page.inner_text("#board")
        expect(page.locator("#board th.form-col")).to_have_text("Form newest first")
    page.click("#ranking-options summary")
    expect(page.locator("#ranking-options")).to_contain_text("ranked after 3 games against others, whatever")
    text = page.inner_text("#view")
    assert "§" not in text and "mathematics" not in text.lower()
    # Another order shows its own number.
    with page.expect_response(lambda r: "by=hodge" in r.url):
        page.select_option("#order", "hodge")
    expect(page.locator("#board th.score-col")).to_have_text("Rating")
    expect(page.locator("#board tr[data-key=ann] td.score")).to_have_text(str(round(ann["elo"])))


def test_counts_read_in_words_and_the_header_says_whether_the_page_is_live(base, open_page, office):
    one = make_ladder(base, "one-game", games=False)
    one.post(["ann"], ["bob"])
    page = open_page("phone")
    page.goto(base + "/")
    expect(page.locator("#ladders li", has_text="Office one-game")).to_contain_text("6 players · 1 game")
    said = page.evaluate("import('/static/dom.js').then((d) => [d.count(7999, 'game'), d.count(1, 'game')])")
    assert said == ["7,999 games", "1 game"]
    page.goto(one.url)
    expect(page.locator("#ladder-summary")).to_contain_text("6 players · 1 game")
    expect(page.locator(".live")).to_have_text("Live")
    page.goto(f"{office.url}/players/ghost")  # an unknown player: the page never follows the ladder
    expect(page.locator("#messages .error")).to_be_visible()
    expect(page.locator(".live")).to_have_text("Not live")
    page.goto(f"{office.url}/admin")  # the admin page before its key
    page.wait_for_selector("#enter-admin-key")
    expect(page.locator(".live")).to_have_text("Not live")
    page.click("#enter-admin-key")
    page.locator("dialog[open]").get_by_label("Key").fill(office.key)
    page.locator("dialog[open]").get_by_role("button", name="Save key").click()
    expect(page.locator(".live")).to_have_text("Live")


def test_a_name_nobody_has_is_confirmed_before_it_makes_a_player(base, open_page):
    # On a phone, where the form's problems used to land in a banner out of view; the dialog is the same on a laptop.
    ladder = make_ladder(base, "typo", games=False)
    page = open_page("phone", saved={ladder.slug: ladder.key})
    page.goto(ladder.url + "#record")
    page.wait_for_selector("#game-form")
    page.fill("#a-0", "bobb")
    page.fill("#b-0", "cy")
    page.click("#won-a")
    dialog = page.locator("dialog[open]")
    expect(dialog.locator("h2")).to_have_text("New player “bobb”?")
    expect(dialog).to_contain_text("Did you mean Bob Baker?")
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.locator("dialog")).to_have_count(0)
    assert ladder.get("/games")["items"] == [] and ladder.get("")["players"] == 6  # nothing posted
    page.click("#won-a")
    page.locator("dialog[open]").get_by_role("button", name="Bob Baker").click()  # did you mean: yes
    page.wait_for_selector("#changes li[data-key=bob]")
    game = ladder.get("/games", limit=1)["items"][0]
    assert [[p["key"] for p in s["players"]] for s in game["sides"]] == [["bob"], ["cy"]]
    # Someone really new, confirmed; and a key typed in another case is the player, not someone new.
    page.fill("#a-0", "Zed")
    page.fill("#b-0", "ANN")
    page.click("#won-b")
    page.locator("dialog[open]").get_by_role("button", name="Yes, add “Zed”").click()
    page.wait_for_selector("#changes li[data-key=zed]")  # keys ignore case on this ladder
    assert ladder.get("/players/zed")["games"] == 1 and ladder.get("")["players"] == 7
    # A form problem shows next to the buttons, in view on a phone.
    page.get_by_label("Doubles", exact=True).check()
    page.fill("#a-0", "ann")
    page.fill("#a-1", "bob")
    page.fill("#b-0", "cy")
    page.click("#won-a")
    expect(page.locator("#form-problem")).to_have_text("Choose both players of team B.")
    assert in_view(page, "#form-problem")
    expect(page.locator("#messages p")).to_have_count(0)


def test_the_address_of_a_new_ladder_is_checked_in_the_browser_and_named_by_the_server(base, open_page):
    page = open_page("phone")
    page.goto(base + "/")
    page.click("#new-ladder summary")
    slug = page.locator("#new-slug")
    valid = "(e, v) => { e.value = v; return e.checkValidity(); }"
    assert slug.evaluate(valid, "office-pong_2") and not slug.evaluate(valid, "Bad Slug")
    assert not slug.evaluate(valid, "-dash-first")
    # The server's answer for a bad address names the page's field, next to it.
    slug.evaluate("e => e.removeAttribute('pattern')")
    slug.fill("Bad Slug")
    page.fill("#admin-key", ADMIN_KEY)
    page.click("#create-submit")
    expect(page.locator("#new-slug-error")).to_have_text(re.compile(r"^The address must be 1-64 lowercase"))
    expect(slug).to_be_focused()
    assert httpx.get(f"{base}/v1/ladders/bad-slug").status_code == 404


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_me_is_picked_once_and_then_marked_suggested_and_filled_in(base, open_page, office, size):
    page = open_page(size, saved={office.slug: office.key})
    page.goto(office.url)
    page.click("#me-pick")
    page.fill("#me-picker", "ann")
    page.keyboard.press("Enter")
    expect(page.locator("#me-link")).to_have_text("Ann Archer")
    assert page.get_attribute("#me-link", "href") == "/ladders/words/players/ann"
    expect(page.locator("#board tr.me")).to_have_attribute("data-key", "ann")
    around = office.get("/leaderboard", by="conservative", limit=5, around="ann")["items"]
    expect(page.locator("#me-around li")).to_have_count(len(around))
    shown = page.eval_on_selector_all("#me-around li", "lis => lis.map(l => l.dataset.key)")
    assert shown == [p["key"] for p in around]
    expect(page.locator("#me-around li.me-mark")).to_have_attribute("data-key", "ann")
    suggested = [o["key"] for o in office.get("/players/ann/opponents", limit=3)["items"]]
    expect(page.locator("#me-next li")).to_have_count(len(suggested))
    assert page.eval_on_selector_all("#me-next li", "lis => lis.map(l => l.dataset.key)") == suggested
    history = office.get("/players/ann/history", limit=500)["items"]
    singles = [g["result"] for g in history if not g["partners"]]
    doubles = [g["result"] for g in history if g["partners"]]
    expect(page.locator("#me-kinds")).to_have_text(
        f"Singles {singles.count('win')}–{singles.count('draw')}–{singles.count('loss')} · doubles "
        f"{doubles.count('win')}–{doubles.count('draw')}–{doubles.count('loss')} (one rating for both)"
    )
    page.reload()  # kept on this device
    expect(page.locator("#me-link")).to_have_text("Ann Archer")
    if size == "phone":
        page.click("button[data-tab=record]")
    expect(page.locator("#a-0")).to_have_value("Ann Archer")
    page.fill("#b-0", "bob")
    page.click("#won-a")
    page.wait_for_selector("#changes li[data-key=ann]")
    expect(page.locator("#a-0")).to_have_value("Ann Archer")  # ready for my next game
    if size == "phone":
        page.click("button[data-tab=standings]")
    page.click("#me-change")
    expect(page.locator("#me-pick")).to_be_visible()
    expect(page.locator("#board tr.me")).to_have_count(0)


def test_the_insights_say_nothing_of_cycles_until_there_are_games_enough(base, open_page, office):
    empty = make_ladder(base, "few-games", games=False)
    page = open_page("phone")
    page.goto(empty.url + "#insights")
    expect(page.locator("#intransitivity")).to_have_text(re.compile(r"Too few games yet .* after 30 more games\."))
    expect(page.locator("#cycles")).not_to_contain_text("Intransitivity")
    page.goto(office.url + "#insights")
    left = 30 - office.get("")["games"]
    expect(page.locator("#intransitivity")).to_contain_text(f"after {left} more games")
    expect(page.locator("#cycles figcaption")).to_contain_text("Styles of play: each dot is a player.")


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_find_a_player_far_down_a_large_ladder(base, open_page, size):
    ladder = make_ladder(base, f"large-{size}", games=False, auto_create_players=True)
    games = [
        {"sides": [{"players": [f"p{n}"], "rank": 1}, {"players": [f"p{(n * 7 + k) % 300}"], "rank": 2}]}
        for n in range(300)
        for k in (1, 2)
    ]
    for start in range(0, len(games), 500):
        batch = {"games": games[start : start + 500]}
        answer = httpx.post(f"{ladder.api}/games/batch", json=batch, headers=ladder.auth)
        assert answer.status_code == 201, answer.text
    board = ladder.get("/leaderboard", by="conservative", limit=500)["items"]
    far = board[260]["key"]
    page = open_page(size)
    page.goto(ladder.url)
    # The page reads every player's name after its first render (the standings hold the first 50); "Most active"
    # is drawn from them once they are in.
    page.wait_for_selector("#active li", state="attached")
    expect(page.locator("#board tbody tr[data-key]")).to_have_count(50)
    page.click("#find-player")
    page.keyboard.type(far)
    page.click(f"#find-player-list [role=option][data-key={far}]")
    row = page.locator(f"#board tr[data-key={far}]")
    expect(row).to_have_class(re.compile(r"\bfound\b"))
    expect(row).to_be_in_viewport()
    expect(row.locator("td.player a")).to_be_focused()
    # A small ladder has no search box: its standings fit.
    page.goto(make_ladder(base, f"small-{size}").url)
    page.wait_for_selector("#board tr[data-key=ann]")
    expect(page.locator("#find-player")).to_be_hidden()


def test_a_name_typed_before_every_player_is_read_is_suggested_once_they_are(base, open_page):
    ladder = make_ladder(base, "large-slow", games=False, auto_create_players=True)
    games = [{"sides": [{"players": [f"q{n}"], "rank": 1}, {"players": [f"q{n + 1}"], "rank": 2}]} for n in range(80)]
    assert httpx.post(f"{ladder.api}/games/batch", json={"games": games}, headers=ladder.auth).status_code == 201
    far = ladder.get("/leaderboard", by="conservative", limit=100)["items"][70]["key"]
    page = open_page("desktop")
    held = []

    def hold(route) -> None:  # every player's name: answered below, not yet
        held.append(route)

    page.route(re.compile(r".*/leaderboard\?by=hodge.*"), hold)
    page.goto(ladder.url)
    expect(page.locator("#board tbody tr[data-key]")).to_have_count(50)
    page.click("#find-player")
    page.keyboard.type(far)
    expect(page.locator("#find-player-list")).to_be_visible()
    expect(page.locator(f"#find-player-list [role=option][data-key={far}]")).to_have_count(0)  # beyond 50 rows
    assert len(held) == 1
    held[0].continue_()
    page.click(f"#find-player-list [role=option][data-key={far}]")  # suggested without typing again
    expect(page.locator(f"#board tr[data-key={far}]")).to_have_class(re.compile(r"\bfound\b"))
