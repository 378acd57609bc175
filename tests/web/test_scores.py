"""Scores on the ladder page: the record form asks for the points (a row per game of a match on a best-of-3 ladder,
or one game's) and offers only the kinds of games the ladder plays; the results show the score and a Rematch that
fills the form."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.conftest import HTTP, PEOPLE, make_ladder


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
    # A game's row opens once the games before it are in and the match is not yet won.
    expect(desktop.locator("#game-2-a")).to_be_disabled()
    expect(desktop.locator("#game-3-b")).to_be_disabled()
    for n, (x, y) in enumerate([(11, 7), (9, 11), (11, 5)], start=1):
        expect(desktop.locator(f"#game-{n}-a")).to_be_enabled()
        desktop.fill(f"#game-{n}-a", str(x))
        desktop.fill(f"#game-{n}-b", str(y))
    desktop.click("#won-a")
    desktop.wait_for_selector("#changes li")
    game = ladder.get("/games", limit=1)["items"][0]
    assert game["match"] == [[11, 7], [9, 11], [11, 5]]
    expect(desktop.locator(f"#feed li.game[data-id='{game['id']}'] .score")).to_have_text("2-1 (11-7, 9-11, 11-5)")
    expect(desktop.locator("#game-2-a")).to_be_disabled()  # the form is empty again

    # A 2-0: Game 3 stays shut, so Shift+Tab from the winner's button goes back to Game 2, not past it.
    desktop.click("#a-0")
    desktop.click("#a-0-list [role=option][data-key=eve]")
    desktop.click("#b-0-list [role=option][data-key=fay]")
    for n, (x, y) in enumerate([(11, 4), (11, 6)], start=1):
        desktop.fill(f"#game-{n}-a", str(x))
        desktop.fill(f"#game-{n}-b", str(y))
    expect(desktop.locator("#game-3-a")).to_be_disabled()
    desktop.focus("#won-a")
    desktop.keyboard.press("Shift+Tab")
    expect(desktop.locator("#game-2-b")).to_be_focused()
    desktop.fill("#game-2-a", "9")  # corrected to 9-11: the match is 1-1, Game 3 opens
    desktop.fill("#game-2-b", "11")
    expect(desktop.locator("#game-3-a")).to_be_enabled()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_best_of_three_ladder_also_records_one_game_with_its_score(base, open_page, size):
    play = {"draws": False, "points": 21, "best_of": 3}
    ladder = make_ladder(base, f"one-game-{size}", play=play)
    for key, name in [("zoe", "Zoë"), ("jose", "José Álvarez"), ("mary", "Mary Anne"), ("lukasz", "Łukasz Nowak")]:
        assert HTTP.post(f"{ladder.api}/players", json={"key": key, "name": name}, headers=ladder.auth).is_success
    page = open_page(size, saved={ladder.slug: ladder.key})
    page.goto(ladder.url)
    page.wait_for_selector("#feed li.game", state="attached")
    if size == "phone":
        page.click("button[data-tab=record]")
    # The ladder plays matches: a match is offered first, one game beside it.
    expect(page.locator("input[name=format][value=match]")).to_be_checked()
    expect(page.locator("label", has=page.locator("input[name=format][value=game]"))).to_have_text("One game")
    for picker, key in [("a-0", "zoe"), ("b-0", "jose")]:
        page.fill(f"#{picker}", key)
        page.keyboard.press("Enter")
    expect(page.locator("#won-a")).to_have_text("Zoë won")
    page.fill("#game-1-a", "21")
    page.fill("#game-1-b", "15")
    page.click("#won-a")  # one game entered as a match: the form says what to do, before the server is asked
    expect(page.locator("#form-problem")).to_contain_text("choose “One game”")
    page.click("label:has(input[name=format][value=game])")
    expect(page.locator("#game-1-a")).to_have_count(0)
    expect(page.locator("#score legend")).to_have_text("Score to 21")
    page.fill("#score-a", "21")
    page.fill("#score-b", "15")
    page.click("#won-a")
    page.wait_for_selector("#changes li")
    expect(page.locator("#form-problem")).to_be_hidden()
    game = ladder.get("/games", limit=1)["items"][0]
    assert [(p["key"], s["rank"], s["score"]) for s in game["sides"] for p in s["players"]] == [
        ("zoe", 1, 21),
        ("jose", 2, 15),
    ]
    assert game["match"] is None

    # Doubles the same: one game with its score.
    page.click("label:has(input[name=mode][value=doubles])")
    expect(page.locator("input[name=format][value=game]")).to_be_checked()  # the choice stays for the next game
    for picker, key in [("a-0", "zoe"), ("a-1", "mary"), ("b-0", "jose"), ("b-1", "lukasz")]:
        page.fill(f"#{picker}", key)
        page.keyboard.press("Enter")
    page.fill("#score-a", "19")
    page.fill("#score-b", "21")
    page.click("#won-b")
    expect(page.locator(f"#feed li.game[data-id='{game['id'] + 1}'] .score")).to_have_text("21-19")
    doubles = ladder.get("/games", limit=1)["items"][0]
    assert [[p["key"] for p in s["players"]] for s in doubles["sides"]] == [["zoe", "mary"], ["jose", "lukasz"]]
    assert [(s["rank"], s["score"]) for s in doubles["sides"]] == [(2, 19), (1, 21)] and doubles["match"] is None

    # A match is still one choice away.
    page.click("label:has(input[name=format][value=match])")
    for picker, key in [("a-0", "zoe"), ("a-1", "mary"), ("b-0", "jose"), ("b-1", "lukasz")]:
        page.fill(f"#{picker}", key)
        page.keyboard.press("Enter")
    for n, (x, y) in enumerate([(21, 15), (21, 18)], start=1):
        page.fill(f"#game-{n}-a", str(x))
        page.fill(f"#game-{n}-b", str(y))
    page.click("#won-a")
    expect(page.locator(f"#feed li.game[data-id='{game['id'] + 2}'] .score")).to_have_text("2-0 (21-15, 21-18)")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]

    # A score that does not end a game to 21 is refused in plain words, without the API's field path.
    page.click("label:has(input[name=format][value=game])")
    page.click("label:has(input[name=mode][value=singles])")
    for picker, key in [("a-0", "zoe"), ("b-0", "jose")]:
        page.fill(f"#{picker}", key)
        page.keyboard.press("Enter")
    page.fill("#score-a", "21")
    page.fill("#score-b", "20")
    page.click("#won-a")
    problem = page.locator("#form-problem")
    expect(problem).to_contain_text("21-20 does not end a game to 21")
    expect(problem).not_to_contain_text("sides[")
    # "One game" is remembered on this device from visit to visit.
    page.reload()
    if size == "phone":
        page.click("button[data-tab=record]")
    expect(page.locator("input[name=format][value=game]")).to_be_checked()
