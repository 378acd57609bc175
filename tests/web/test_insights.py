"""The ladder page below the office: how the standings work (provisional players, inactive ones, other orders),
who would win, fair teams, learned seats and the cycles."""

from __future__ import annotations

import math
import random
import re

import httpx
import pytest
from playwright.sync_api import expect

from app.analysis.schemas import INTRANSITIVITY_SCALE
from tests.web.conftest import make_ladder, show_insights


def test_standings_group_provisional_players_and_show_inactive_ones_on_request(base, open_page):
    ladder = make_ladder(base, "standings")
    ladder.post(["newbie"], ["dee"])
    assert httpx.patch(f"{ladder.api}/players/bob", json={"active": False}, headers=ladder.auth).is_success
    page = open_page("desktop")
    page.goto(ladder.url)
    page.wait_for_selector("#board tr.group")
    keys = page.eval_on_selector_all("#board tbody tr:not(.details)", "rows => rows.map(r => r.dataset.key || 'GROUP')")
    group = keys.index("GROUP")
    assert "newbie" in keys[group + 1 :] and "bob" not in keys
    # The default order is the API's by=conservative: the same players in the same order.
    api = ladder.get("/leaderboard", by="conservative")["items"]
    assert [k for k in keys if k != "GROUP"] == [p["key"] for p in api]
    newbie = next(p for p in api if p["key"] == "newbie")
    row = page.locator("#board tr[data-key=newbie]")
    expect(row.locator("td.rank")).to_have_text("–")
    expect(row.locator("td.score")).to_have_attribute(
        "title", re.compile(rf"^{newbie['elo']:.0f}, give or take {2 * newbie['strength_se']:.0f} ")
    )
    expect(row.locator("td.score")).to_have_text(f"{newbie['conservative']:.0f}")
    expect(row.locator(".why-unranked")).to_have_text(f"{newbie['results_to_rank']} more games to be ranked")
    page.click("#ranking-options summary")
    expect(page.locator("#field-moves")).to_contain_text("did not play")
    page.check("#show-inactive")
    expect(page.locator("#board tr[data-key=bob].inactive")).to_contain_text("(inactive)")
    why = ladder.get("/players/bob")["inactive_reason"]
    expect(page.locator("#board tr[data-key=bob] .muted")).to_have_attribute("title", why)
    with page.expect_response(lambda r: "by=hodge" in r.url):
        page.select_option("#order", "hodge")
    # Another order, the provisional players still in their group below.
    hodge = ladder.get("/leaderboard", by="hodge", inactive="true")["items"]
    order = [p["key"] for p in hodge if not p["provisional"]] + [p["key"] for p in hodge if p["provisional"]]
    expect(page.locator("#board tbody tr[data-key]").nth(len(order) - 1)).to_have_attribute("data-key", order[-1])
    assert page.eval_on_selector_all("#board tbody tr[data-key]", "rows => rows.map(r => r.dataset.key)") == order
    # The player's own page says why they are off the standings.
    page.goto(f"{ladder.url}/players/bob")
    expect(page.locator("#why-inactive dd")).to_have_text(why)


def test_who_would_win_fair_teams_seats_and_cycles(base, open_page):
    ladder = make_ladder(base, "insights", seats=["white", "black"])
    for n in range(16):  # 30 games: enough to say whether the ladder has cycles
        ladder.post([["ann", "bob", "cy"][n % 3]], [["dee", "eve", "fay"][n % 3]])
    page = open_page("desktop")
    page.goto(ladder.url)
    show_insights(page)
    page.wait_for_selector("#cycles-maths")
    expect(page.locator("#intransitivity")).to_have_text(re.compile("^(Mostly a straight ladder|Partly|More rock)"))
    page.click("#cycles-maths summary")
    assert INTRANSITIVITY_SCALE in page.inner_text("#cycles-maths")
    expect(page.locator("#learned-seats li").first).to_have_text("white: 0 ± 174 Elo")  # the prior: 0.5 logit

    page.fill("#h2h-a", "ann")
    page.keyboard.press("Enter")
    page.fill("#h2h-b", "dee")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Compare").click()
    chance = ladder.get("/predict", a="ann", b="dee")["probability"]
    expect(page.locator("#h2h-result")).to_have_text(
        f"Ann Archer beats Dee Dunn with probability {round(100 * chance)}%."
    )

    for name in ("ann", "bob", "cy", "dee"):
        page.fill("#teams-players", name)
        page.keyboard.press("Enter")
    expect(page.locator("#teams ul.chips li")).to_have_count(4)
    page.get_by_role("button", name="Remove Bob Baker").click()
    page.fill("#teams-players", "bob")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Make fair teams").click()
    teams = page.locator("#teams-result li")
    expect(teams).to_have_count(2)
    texts = teams.all_inner_texts()
    assert all(" & " in t and "wins" in t for t in texts)
    # The strongest player (ann won all her games) is paired with the weakest (dee lost all of his).
    assert any("Ann Archer" in t and "Dee Dunn" in t for t in texts), texts
    page.fill("#teams-count", "5")  # five teams of four players: the server's words, not a crash
    page.get_by_role("button", name="Make fair teams").click()
    expect(page.locator("#messages .error")).to_contain_text("teams")


def test_the_styles_chart_of_a_large_ladder_names_its_leaders_and_me(base, open_page):
    """Beyond 60 players the chart cannot name every dot: it names the first ten of the standings and "me" on this
    device (a player far down the standings), and says so; the other names are in their dots' tooltips."""
    ladder = make_ladder(base, "styles-large", games=False, auto_create_players=True)
    # q0 beats everyone after them in a round, q1 the same, …: a clear order over 90 players.
    games = [
        {"sides": [{"players": [f"q{a}"], "rank": 1}, {"players": [f"q{b}"], "rank": 2}]}
        for a in range(90)
        for b in range(a + 1, min(a + 6, 90))
    ]
    assert httpx.post(f"{ladder.api}/games/batch", json={"games": games}, headers=ladder.auth).status_code == 201
    order = [p["key"] for p in ladder.get("/leaderboard", by="conservative", limit=200)["items"]]
    me = order[80]
    page = open_page("desktop")
    page.add_init_script(f"localStorage.setItem('melo-me:{ladder.slug}', '{me}')")
    page.goto(ladder.url)
    page.wait_for_selector("#board tbody tr[data-key]")
    show_insights(page)
    page.wait_for_selector("#disc-plot text.label")
    named = set(page.locator("#disc-plot text.label").all_text_contents())
    assert named <= {*order[:10], me} and me in named and len(named) >= 8, (named, order[:10], me)
    expect(page.locator("#disc-plot circle.dot")).to_have_count(len(order))
    expect(page.locator("#disc-plot circle.dot.named")).to_have_count(11)
    expect(page.locator("figure.styles figcaption")).to_contain_text("Named: the first 10 of the standings and you")


#: For each leader line of the styles chart, the other players' labels it runs through (their boxes, less a pixel).
CROSSED = """() => {
  const players = [...document.querySelectorAll('#disc-plot g.player')].map((g) => {
    const text = g.querySelector('text.label');
    const line = g.querySelector('line.leader');
    const end = (name) => line[name].baseVal.value;
    return { name: text && text.textContent, box: text && text.getBBox(),
      line: line && [end('x1'), end('y1'), end('x2'), end('y2')] };
  });
  const crossed = [];
  for (const a of players) {
    if (!a.line) continue;
    const [x1, y1, x2, y2] = a.line;
    for (const b of players) {
      if (b === a || !b.box) continue;
      for (let s = 0; s <= 1; s += 0.01) {
        const x = x1 + (x2 - x1) * s, y = y1 + (y2 - y1) * s;
        if (x > b.box.x + 1 && x < b.box.x + b.box.width - 1 && y > b.box.y + 1 && y < b.box.y + b.box.height - 1) {
          crossed.push([a.name, b.name]);
          break;
        }
      }
    }
  }
  return crossed;
}"""


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_no_leader_line_of_the_styles_chart_runs_through_a_label(base, open_page, size):
    """On a phone the chart's lines from a dot out to its name crossed other names: no line runs through a label."""
    ladder = make_ladder(base, f"styles-lines-{size}", games=False, auto_create_players=True)
    rng = random.Random(8)
    keys = [f"{rng.choice(['Ann', 'Bo', 'Cy', 'Dee', 'Eve'])}{n}" for n in range(40)]
    style = {key: rng.uniform(0, 2 * math.pi) for key in keys}  # who beats whom goes round a circle, as styles do
    games = []
    for _ in range(1500):
        a, b = rng.sample(keys, 2)
        a_wins = rng.random() < 1 / (1 + math.exp(-2.5 * math.sin(style[a] - style[b])))
        winner, loser = (a, b) if a_wins else (b, a)
        games.append({"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]})
    for lo in range(0, len(games), 500):
        r = httpx.post(f"{ladder.api}/games/batch", json={"games": games[lo : lo + 500]}, headers=ladder.auth)
        assert r.status_code == 201, r.text
    page = open_page(size)
    page.goto(ladder.url)
    page.wait_for_selector("#board tbody tr[data-key]")
    if size == "phone":
        page.click("button[data-tab=insights]")
    show_insights(page)
    page.wait_for_selector("#disc-plot text.label")
    assert page.locator("#disc-plot line.leader").count() > 0  # some names sit away from their dots
    assert page.evaluate(CROSSED) == []
