"""Scores on the ladder page: the record form asks for the points (a row per game on a best-of-3 ladder) and
offers only the kinds of games the ladder plays; the results show the score and a Rematch that fills the form."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.web.conftest import PEOPLE, make_ladder


def test_a_score_recorded_on_a_phone_shows_in_the_results_and_rematch_fills_the_form(base, open_page):
    ladder = make_ladder(base, "scored")
    page = open_page("phone", saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#feed li.game", state="attached")
    page.click("button[data-tab=record]")
    expect(page.locator("#won-draw")).to_be_visible()  # a ladder that says nothing plays every kind
    expect(page.locator("input[name=mode]")).to_have_count(3)
    page.click("#a-0")
    page.click("#a-0-list [role=option][data-key=ann]")
    page.click("#b-0-list [role=option][data-key=bob]")
    page.fill("#score-a", "12")
    page.fill("#score-b", "21")
    page.click("#won-a")
    expect(page.locator("#form-problem")).to_contain_text("The score says Bob Baker won")
    page.fill("#score-a", "21")
    page.fill("#score-b", "12")
    page.click("#won-a")
    page.wait_for_selector("#changes li")
    game = ladder.get("/games", limit=1)["items"][0]
    assert [(s["rank"], s["score"]) for s in game["sides"]] == [(1, 21), (2, 12)]
    assert page.input_value("#score-a") == "" and page.input_value("#score-b") == ""  # ready for the next game

    page.click("button[data-tab=results]")
    first = page.locator(f"#feed li.game[data-id='{game['id']}']")
    expect(first.locator(".score")).to_have_text("21-12")
    expect(first.locator(".line")).to_contain_text("Ann Archer")
    pair = next(g for g in ladder.get("/games", limit=20)["items"] if len(g["sides"][0]["players"]) == 2)
    doubles = page.locator(f"#feed li.game[data-id='{pair['id']}']")
    expect(doubles.locator(".score")).to_have_count(0)  # no score posted: none shown
    first.locator("button.rematch").click()
    expect(page.locator("#record")).to_be_visible()
    assert page.input_value("#a-0") == "Ann Archer" and page.input_value("#b-0") == "Bob Baker"
    page.click("button[data-tab=results]")
    doubles.locator("button.rematch").click()
    expect(page.locator("input[name=mode][value=doubles]")).to_be_checked()
    names = [PEOPLE[p["key"]] for side in pair["sides"] for p in side["players"]]
    assert [page.input_value(f"#{p}") for p in ("a-0", "a-1", "b-0", "b-1")] == names  # each on their side
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways


def test_a_best_of_three_ladder_without_draws_asks_for_each_games_points(base, open_page):
    play = {"draws": False, "free_for_all": False, "points": 11, "best_of": 3}
    ladder = make_ladder(base, "pong", play=play)
    desktop = open_page("desktop", saved={ladder.slug: ladder.key})
    desktop.goto(ladder.url)
    desktop.wait_for_selector("#feed li.game", state="attached")
    expect(desktop.locator("#won-a")).to_be_visible()
    expect(desktop.locator("#won-draw")).to_have_count(0)  # no Draw
    expect(desktop.locator("input[name=mode]")).to_have_count(2)  # singles and doubles, no free-for-all
    expect(desktop.locator("input[name=mode][value=ffa]")).to_have_count(0)
    expect(desktop.locator("#score legend")).to_have_text("Points of each game to 11 (best of 3)")
    desktop.click("#a-0")
    desktop.click("#a-0-list [role=option][data-key=eve]")
    desktop.click("#b-0-list [role=option][data-key=fay]")
    desktop.click("#won-a")
    expect(desktop.locator("#form-problem")).to_contain_text("Enter the points of each game played.")
    for n, (x, y) in enumerate([(11, 7), (9, 11), (11, 5)], start=1):
        desktop.fill(f"#game-{n}-a", str(x))
        desktop.fill(f"#game-{n}-b", str(y))
    desktop.click("#won-a")
    desktop.wait_for_selector("#changes li")
    game = ladder.get("/games", limit=1)["items"][0]
    assert game["match"] == [[11, 7], [9, 11], [11, 5]]
    expect(desktop.locator(f"#feed li.game[data-id='{game['id']}'] .score")).to_have_text("2-1 (11-7, 9-11, 11-5)")
