"""A player's page: rating in words, form, streaks, what the last game did and what others' games did since, rating
over time against dates from the starting rating, head-to-head records (singles, doubles and partners apart) with
today's chances, recent games with partners and changes, who to play next with the stakes; renaming, old keys that
lead to the player, stepping back in time, and targets a finger can hit on a phone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import make_ladder, shown

LETTER = {"win": "W", "draw": "D", "loss": "L"}


def assert_stakes_shown(page, ladder, key: str) -> None:
    """Who to play next: each suggestion with what a win and a loss would do, as the API says, and why."""
    suggested = ladder.get(f"/players/{key}/opponents", purpose="next", limit=5)["items"]
    items = page.locator("#next li")
    expect(items).to_have_count(len(suggested))
    for o in suggested:
        item = page.locator(f"#next li[data-key='{o['key']}']")
        expect(item.locator(".stakes")).to_have_text(f"win {shown(o['if_win'])}, lose {shown(o['if_lose'])}")
        expect(item.locator(".reason")).to_contain_text(o["reason"])


def assert_labels_inside(page) -> None:
    """No label of the chart's time axis runs off its edges."""
    width, boxes = page.eval_on_selector(
        "#rating-chart",
        "s => [s.getBoundingClientRect().width, [...s.querySelectorAll('text.x-tick')].map(t => {"
        " const b = t.getBBox(); return [b.x, b.x + b.width]; })]",
    )
    assert boxes and all(left >= 0 and right <= width for left, right in boxes), (width, boxes)


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
    expect(page.locator("#rating small")).to_have_text(re.compile(rf"^give or take {round(twice)}: [a-z ,:]+$"))
    assert page.locator("#form .r").all_inner_texts() == [LETTER[g["result"]] for g in history[:5]] == list("DLWWW")
    expect(page.locator("#streak")).to_contain_text("1 draw")
    expect(page.locator("#streak small")).to_have_text("best: 7 wins")
    last = page.locator("#last-played time")
    assert last.get_attribute("datetime") == player["last_played_at"] and last.inner_text() == "just now"
    # Her own last game (a draw) and nothing since: nobody has played after her.
    assert player["last_game_change"] == history[0]["elo_change"]
    expect(page.locator("#last-change")).to_have_text(f"{shown(player['last_game_change'])} Elo")
    expect(page.locator("#moved-since")).to_have_count(0)

    # Rating over time: from the starting rating, one point per game, placed by date, with dates on the axis.
    points = page.eval_on_selector_all(
        "#rating-chart circle.dot:not(.last)", "cs => cs.map(c => [c.cx.baseVal.value, c.cy.baseVal.value])"
    )
    assert len(points) == len(history)
    xs = [x for x, _ in points]
    assert xs == sorted(xs) and xs[-1] - xs[0] > 300  # a week of games across the chart
    start = page.eval_on_selector("#rating-chart circle.start", "c => [c.cx.baseVal.value, c.cy.baseVal.value]")
    assert start[0] < xs[0]
    line = page.get_attribute("#rating-chart polyline", "points").split()
    assert len(line) == len(history) + 1 and [float(v) for v in line[0].split(",")] == pytest.approx(start, abs=0.1)
    ticks = page.locator("#rating-chart text.x-tick").all_text_contents()
    assert len(ticks) >= 3 and all(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2}", t) for t in ticks), ticks
    highest = max(range(len(history)), key=lambda n: history[::-1][n]["elo_after"])
    assert points[highest][1] == min(y for _, y in points)  # the highest rating is drawn highest
    assert_labels_inside(page)

    # Head to head: singles, doubles against and with each player apart, and today's chance to beat them.
    expect(page.locator("#rivals .chance", has_text="…")).to_have_count(0)
    met = ladder.get("/players/ann/head-to-head")["items"]
    rows = page.locator("#rivals-table tbody tr")
    expect(rows).to_have_count(len(met))

    def record(r: dict) -> str:
        return f"{r['wins']}–{r['draws']}–{r['losses']}" if r["games"] else "–"

    for row in met:
        cells = page.locator(f"#rivals-table tr[data-key={row['key']}] td").all_inner_texts()
        chance = ladder.get("/predict", a="ann", b=row["key"])["probability"]
        expected = [record(row["singles"]), record(row["doubles"]), record(row["partners"])]
        assert cells[1:] == [*expected, f"{round(100 * chance)}%"], (row, cells)
    expect(page.locator("#rivals-table tr[data-key=bob] td").first).to_have_text("Bob Baker")
    # Ann beat Bob twice in singles and once in doubles (with Cy): apart, not five games in one count.
    bob = page.locator("#rivals-table tr[data-key=bob] td").all_inner_texts()
    assert bob[1:4] == ["2–0–0", "1–0–0", "–"], bob

    # Recent games: what happened, with whom, against whom, the change.
    doubles = next(g for g in history if g["partners"])
    item = page.locator(f"#history li[data-game='{doubles['game_id']}']")
    expect(item).to_contain_text("Beat Bob Baker & Dee Dunn with Cy Cole")
    expect(item.locator(".chg")).to_have_text(shown(doubles["elo_change"]))
    expect(page.locator(f"#history li[data-game='{history[1]['game_id']}']")).to_contain_text("Lost to Fay Fox")
    assert_stakes_shown(page, ladder, "ann")

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
    today = datetime.now(UTC).date()
    first = ladder.get("/games/1")["played_at"][:10]
    assert page.input_value("#as-of-date") == today.isoformat()  # from today ...
    expect(page.locator("#as-of-date")).to_have_attribute("min", first)  # ... back to the ladder's first game
    page.click("#month-earlier")  # a month back: no earlier than the first game's day
    assert page.input_value("#as-of-date") == first
    expect(page.locator("#past-result")).to_contain_text(re.compile(r" at the end of "))
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


def test_a_phone_shows_the_last_game_what_others_did_since_the_stakes_and_big_enough_targets(base, open_page):
    ladder = make_ladder(base, "phone-profile")  # Dee's last game is followed by others'
    dee = ladder.get("/players/dee")
    history = ladder.get("/players/dee/history")["items"]
    assert dee["last_game_change"] == history[0]["elo_change"] and round(dee["change_since_last_game"]) != 0
    page = open_page("phone")
    page.goto(f"{ladder.url}/players/dee")
    expect(page.locator("#last-change")).to_have_text(f"{shown(dee['last_game_change'])} Elo")
    expect(page.locator("#moved-since")).to_have_text(
        f"Others' games moved you {shown(dee['change_since_last_game'])} since"
    )
    expect(page.locator("#others-since")).to_contain_text(f"moved the rating {shown(dee['change_since_last_game'])}")
    assert_stakes_shown(page, ladder, "dee")
    expect(page.locator("#rivals .chance", has_text="…")).to_have_count(0)
    ticks = page.locator("#rating-chart text.x-tick").all_text_contents()
    assert re.search(r"\d{1,2} [A-Z][a-z]{2}", ticks[0]), ticks  # the first tick says which day
    assert_labels_inside(page)
    small = page.eval_on_selector_all(
        "#view a, #view button, #view summary, #view input",
        "els => els.filter(e => e.offsetParent !== null).map(e => [e.outerHTML.slice(0, 80),"
        " e.getBoundingClientRect().width, e.getBoundingClientRect().height]).filter(([, w, h]) => w < 24 || h < 24)",
    )
    assert small == [], small
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways
    # The head-to-head table fits its panel: no column cut off.
    assert page.eval_on_selector("#rivals-table", "t => t.scrollWidth <= t.parentElement.clientWidth + 0.5")

    # A player of one game: a line from the starting rating to the rating after it, on a day's time axis.
    ladder.post(["gus"], ["hal"])
    page.goto(f"{ladder.url}/players/gus")
    line = page.get_attribute("#rating-chart polyline", "points").split()
    (x0, y0), (x1, y1) = ([float(v) for v in point.split(",")] for point in line)
    assert len(line) == 2 and x1 - x0 > 50 and y1 < y0  # a win: up from the start
    expect(page.locator("#rating-chart circle.start title")).to_have_text(re.compile(r"^Starting rating: \d+$"))
    ticks = page.locator("#rating-chart text.x-tick").all_text_contents()
    assert re.search(r"\d{1,2} [A-Z][a-z]{2}", ticks[0]), ticks
    assert_labels_inside(page)


@pytest.mark.parametrize("days", [62, 100])
@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_chart_over_months_marks_each_month_with_its_year_in_full(base, open_page, size, days):
    """Over two months and more the time axis marks months: each tick says its month, and the first and each
    January also the year, in full ("Oct" over "2026"), never "Oct 26", which reads as a day; a phone shows at
    least two of them."""
    ladder = make_ladder(base, f"months-{size}-{days}", games=False)
    start = datetime.now(UTC) - timedelta(days=days)
    for n in range(20):
        when = (start + timedelta(days=days * n / 19)).isoformat().replace("+00:00", "Z")
        ladder.post(["ann"], ["bob"] if n % 3 else ["cy"], played_at=when)
    page = open_page(size)
    page.goto(f"{ladder.url}/players/ann")
    page.wait_for_selector("#rating-chart text.x-tick")
    labels = page.eval_on_selector_all(
        "#rating-chart text.x-tick", "ts => ts.map(t => [...t.querySelectorAll('tspan')].map(s => s.textContent))"
    )
    assert len(labels) >= 2, labels
    assert all(re.fullmatch(r"[A-Z][a-z]{2,3}", lines[0]) for lines in labels), labels  # a month alone: not "Oct 26"
    assert re.fullmatch(r"20\d\d", labels[0][1]), labels  # the first says its year in full
    for lines in labels[1:]:
        assert lines[1:] == ([] if lines[0] != "Jan" else [lines[1]]) and all(
            re.fullmatch(r"20\d\d", y) for y in lines[1:]
        )
    assert_labels_inside(page)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_recent_games_show_their_score_from_the_players_side(base, open_page, size):
    ladder = make_ladder(base, f"scored-{size}", games=False, play={"best_of": 3})
    scored = {"sides": [{"players": ["bob"], "score": 21}, {"players": ["ann"], "score": 15}]}
    match = {"sides": [{"players": ["ann"]}, {"players": ["bob"]}], "match": [[11, 7], [9, 11], [11, 5]]}
    games = [httpx.post(f"{ladder.api}/games", json=g, headers=ladder.auth).json() for g in (scored, match)]
    plain = ladder.post(["ann"], ["cy"])
    page = open_page(size)
    page.goto(f"{ladder.url}/players/ann")
    item = page.locator(f"#history li[data-game='{games[0]['id']}']")
    expect(item).to_contain_text("Lost to Bob Baker 15–21")  # Ann's points first, though she was the second side
    expect(page.locator(f"#history li[data-game='{games[1]['id']}'] .score")).to_have_text("2–1: 11–7, 9–11, 11–5")
    expect(page.locator(f"#history li[data-game='{plain['id']}']")).to_contain_text("Beat Cy Cole")
    expect(page.locator(f"#history li[data-game='{plain['id']}'] .score")).to_have_count(0)
    page.goto(f"{ladder.url}/players/bob")
    expect(page.locator(f"#history li[data-game='{games[1]['id']}'] .score")).to_have_text("1–2: 7–11, 11–9, 5–11")


def test_a_games_change_reads_as_its_post_answered_after_the_field_moved(base, desktop):
    """The toast shows a game's change as its post answered; others' games then move the field the page measures
    strengths against, and the same game read again said another number (Ben −25 in the toast, −26 later)."""
    ladder = make_ladder(base, "as-posted", games=False)
    posted = ladder.post(["ann"], ["bob"])
    change = next(p["elo_change"] for side in posted["sides"] for p in side["players"] if p["key"] == "bob")
    rng = __import__("random").Random(5)
    for _ in range(40):  # games among six others, new to the ladder
        a, b = rng.sample([f"x{n}" for n in range(6)], 2)
        ladder.post([a], [b])
    item = next(i for i in ladder.get("/players/bob/history")["items"] if i["game_id"] == posted["id"])
    # Against today's field the game would now read a whole point or more off the toast's number.
    assert round(item["elo_after"] - item["elo_before"]) != round(change)
    desktop.goto(f"{ladder.url}/players/bob")
    expect(desktop.locator(f"#history li[data-game='{posted['id']}'] .chg")).to_have_text(shown(change))
    desktop.goto(ladder.url)
    desktop.wait_for_selector("#board tr[data-key=bob]")
    expect(desktop.locator("#board tr[data-key=bob]")).to_contain_text(shown(change))  # its last game's change
