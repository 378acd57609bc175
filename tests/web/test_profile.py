"""A player's page: rating in words, form, streaks, last played, rating over time against dates, head-to-head records
with today's chances, recent games with partners and changes; renaming, and old keys that lead to the player."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
from playwright.sync_api import expect

from tests.web.conftest import make_ladder
from tests.web.test_record import shown

LETTER = {"win": "W", "draw": "D", "loss": "L"}


def test_form_streaks_chart_head_to_head_and_recent_games(base, open_page):
    ladder = make_ladder(base, "profile")
    ladder.post(["fay"], ["ann"])
    ladder.post(["ann"], ["eve"], draw=True)
    page = open_page("desktop")
    page.goto(f"{ladder.url}/players/ann")
    page.wait_for_selector("#rating-chart")
    player = ladder.get("/players/ann")
    history = ladder.get("/players/ann/history", limit=500)["items"]
    assert len(history) == player["games"] == 9

    expect(page.locator("h1")).to_have_text("Ann Archer")
    expect(page).to_have_title("Ann Archer · Office profile · melo")
    expect(page.locator("#rating b")).to_have_text(str(round(player["elo"])))
    twice = 2 * player["strength_se"]
    expect(page.locator("#rating small")).to_have_text(
        re.compile(rf"^likely {round(player['elo'] - twice)}–{round(player['elo'] + twice)}: [a-z ,:]+$")
    )
    assert page.locator("#form .r").all_inner_texts() == [LETTER[g["result"]] for g in history[:5]] == list("DLWWW")
    expect(page.locator("#streak")).to_contain_text("1 draw")
    expect(page.locator("#streak small")).to_have_text("best: 7 wins")
    last = page.locator("#last-played time")
    assert last.get_attribute("datetime") == player["last_played_at"] and last.inner_text() == "just now"

    # Rating over time: one point per game, placed by date, with dates on the axis.
    points = page.eval_on_selector_all(
        "#rating-chart circle.dot:not(.last)", "cs => cs.map(c => [c.cx.baseVal.value, c.cy.baseVal.value])"
    )
    assert len(points) == len(history)
    xs = [x for x, _ in points]
    assert xs == sorted(xs) and xs[-1] - xs[0] > 300  # a week of games across the chart
    ticks = page.locator("#rating-chart text.x-tick").all_text_contents()
    assert len(ticks) >= 3 and all(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2}", t) for t in ticks), ticks
    highest = max(range(len(history)), key=lambda n: history[::-1][n]["elo_after"])
    assert points[highest][1] == min(y for _, y in points)  # the highest rating is drawn highest

    # Head to head: the record against each opponent and today's chance to beat them.
    expect(page.locator("#rivals .chance", has_text="…")).to_have_count(0)
    met: dict[str, list[int]] = {}
    for game in history:
        for opponent in game["opponents"]:
            met.setdefault(opponent, [0, 0, 0])[["win", "draw", "loss"].index(game["result"])] += 1
    rows = page.locator("#rivals-table tbody tr")
    expect(rows).to_have_count(len(met))
    for key, (won, drawn, lost) in met.items():
        cells = page.locator(f"#rivals-table tr[data-key={key}] td").all_inner_texts()
        chance = ladder.get("/predict", a="ann", b=key)["probability"]
        assert cells[1:] == [str(won), str(drawn), str(lost), f"{round(100 * chance)}%"], (key, cells)
    expect(page.locator("#rivals-table tr[data-key=bob] td").first).to_have_text("Bob Baker")

    # Recent games: what happened, with whom, against whom, the change.
    doubles = next(g for g in history if g["partners"])
    item = page.locator(f"#history li[data-game='{doubles['game_id']}']")
    expect(item).to_contain_text("Beat Bob Baker & Dee Dunn with Cy Cole")
    expect(item.locator(".chg")).to_have_text(shown(doubles["elo_change"]))
    expect(page.locator(f"#history li[data-game='{history[1]['game_id']}']")).to_contain_text("Lost to Fay Fox")
    expect(page.locator("#next li")).not_to_have_count(0)

    # Playing since the first game (a week ago), not since the player's row was made (today).
    first = datetime.fromisoformat(history[-1]["played_at"].replace("Z", "+00:00"))
    expect(page.locator("#more")).to_contain_text(f"Playing since{first.day} {first:%b}")


def test_rename_a_player_on_their_page(base, open_page):
    ladder = make_ladder(base, "rename", games=False)
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/players/cy")
    page.click("#rename summary")
    page.fill("#new-name", "Cyrus Cole")
    page.click("#rename-submit")
    expect(page.locator("h1")).to_have_text("Cyrus Cole")
    expect(page).to_have_title("Cyrus Cole · Office rename · melo")
    expect(page.locator("#messages")).to_have_text("Renamed to Cyrus Cole.")
    assert ladder.get("/players/cy")["name"] == "Cyrus Cole"


def test_a_player_reached_by_an_old_key_in_another_case_shows_their_aliases(base, open_page):
    ladder = make_ladder(base, "aliases", games=False)
    created = httpx.post(f"{ladder.api}/players", json={"key": "Zoë"}, headers=ladder.auth).json()
    assert (created["key"], created["name"]) == ("zoë", "Zoë")  # stored case-folded, the spelling as the name
    assert httpx.patch(f"{ladder.api}/players/zoë", json={"key": "zoe"}, headers=ladder.auth).is_success
    page = open_page("desktop")
    page.goto(f"{ladder.url}/players/ZOË")
    expect(page.locator("#aliases")).to_have_text("Also posted as zoë (key zoe).")
    expect(page.locator("h1")).to_have_text("Zoë")


def test_a_profile_steps_back_through_time(base, open_page):
    ladder = make_ladder(base, "past")  # games over the last seven days
    page = open_page("phone")
    page.goto(f"{ladder.url}/players/ann")
    expect(page.locator("#past-result")).to_have_text(re.compile(r"^Pick a day"))
    page.click("#month-earlier")  # two months back: before the first game
    expect(page.locator("#past-result")).to_have_text(re.compile(r"^Not on the ladder yet at the end of "))
    day = (datetime.now(UTC) - timedelta(days=4)).date()
    page.fill("#as-of-date", day.isoformat())
    end = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    then = ladder.get("/players/ann", as_of=end.isoformat())
    assert 0 < then["games"] < ladder.get("/players/ann")["games"]
    expect(page.locator("#past-result b")).to_have_text(f"{round(then['elo'])} Elo")
    expect(page.locator("#past-result")).to_contain_text(
        f"{then['games']} games: {then['wins']} won, {then['draws']} drawn, {then['losses']} lost"
    )
    page.click("#month-later")  # no later than today: the profile as it is
    now = ladder.get("/players/ann")
    expect(page.locator("#past-result")).to_contain_text(f"{now['games']} games: {now['wins']} won")
