"""An open page shows what another client changes within 2 seconds, without a reload (the ladder's event stream)."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import make_ladder

pytestmark = pytest.mark.serial  # another client's change on the page within 2 s

WITHIN_MS = 2000


def games_cell(page, key: str):
    return page.locator(f"#board tr[data-key={key}] td").nth(4)


def within(deadline: float) -> float:
    """What is left of the 2 seconds, in milliseconds for Playwright's waits."""
    return max(1.0, (deadline - time.monotonic()) * 1000)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_another_clients_game_and_undo_appear_without_a_reload(base, open_page, size):
    ladder = make_ladder(base, f"live-{size}")
    page = open_page(size)
    page.goto(ladder.url)
    page.wait_for_selector(".live[data-state=live]")
    page.wait_for_selector("#board tr[data-key=fay]")
    fay_games = ladder.get("/players/fay")["games"]
    if size == "phone":  # the games count is in the row's details, which stay open as the standings change
        page.get_by_role("button", name="Details of Fay Fox").click()
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    posted = ladder.post(["fay", "bob"], ["ann", "dee"])  # another client, through the API
    deadline = time.monotonic() + WITHIN_MS / 1000
    item = page.locator(f"#feed li.game[data-id='{posted['id']}']")
    expect(item).to_be_attached(timeout=within(deadline))
    if size == "desktop":
        expect(games_cell(page, "fay")).to_have_text(str(fay_games + 1), timeout=within(deadline))
    else:
        expect(page.locator("#details-fay")).to_contain_text(f"{fay_games + 1}:", timeout=within(deadline))
    change = next(p for p in posted["sides"][0]["players"] if p["key"] == "fay")["elo_change"]
    assert f"+{round(change)}" in item.inner_text()
    assert "Fay Fox" in item.inner_text() and "Bob Baker" in item.inner_text()  # names, and partners

    assert httpx.delete(f"{ladder.api}/games/{posted['id']}", headers=ladder.auth).status_code == 200
    deadline = time.monotonic() + WITHIN_MS / 1000
    expect(page.locator(f"#feed li.game.voided[data-id='{posted['id']}']")).to_be_attached(timeout=within(deadline))
    if size == "desktop":
        expect(games_cell(page, "fay")).to_have_text(str(fay_games), timeout=within(deadline))

    httpx.patch(f"{ladder.api}/players/eve", json={"name": "Evelyn Ellis"}, headers=ladder.auth).raise_for_status()
    deadline = time.monotonic() + WITHIN_MS / 1000
    expect(page.locator("#board tr[data-key=eve] td.player a")).to_have_text("Evelyn Ellis", timeout=within(deadline))
    assert navigations == []  # no reload


def test_a_burst_of_games_is_one_refresh_of_the_standings(base, open_page):
    ladder = make_ladder(base, "burst")
    page = open_page("desktop")
    reads = []
    page.on("request", lambda r: "/leaderboard?by=conservative" in r.url and reads.append(r.url))
    page.goto(ladder.url)
    page.wait_for_selector(".live[data-state=live]")
    page.wait_for_timeout(400)  # the first reads settle
    first = len(reads)
    games = [{"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]} for _ in range(10)]
    batch = httpx.post(f"{ladder.api}/games/batch", json={"games": games}, headers=ladder.auth)
    batch.raise_for_status()
    ids = sorted((str(g["id"]) for g in batch.json()["games"]), key=int, reverse=True)
    expect(page.locator("#feed li.game").first).to_have_attribute("data-id", ids[0], timeout=WITHIN_MS)
    page.wait_for_timeout(600)  # the debounce (250 ms) and the read
    assert len(reads) - first == 1
    # The ten new games are shown straight from their events, newest first.
    assert page.locator("#feed li.game").evaluate_all("items => items.map(i => i.dataset.id)")[:10] == ids


def test_a_profile_follows_the_players_games(base, open_page):
    ladder = make_ladder(base, "live-profile")
    page = open_page("desktop")
    page.goto(f"{ladder.url}/players/cy")
    page.wait_for_selector(".live[data-state=live]")
    games = ladder.get("/players/cy")["games"]
    expect(page.locator("#record-card b")).to_have_text(str(games))
    posted = ladder.post(["cy"], ["fay"])
    deadline = time.monotonic() + WITHIN_MS / 1000
    expect(page.locator("#record-card b")).to_have_text(str(games + 1), timeout=within(deadline))
    expect(page.locator(f"#history li[data-game='{posted['id']}']")).to_contain_text("Beat Fay Fox")


def current_event_id(ladder) -> str:
    """Where the ladder's stream starts now: the id of its hello."""
    with httpx.stream("GET", f"{ladder.api}/events") as stream:
        for line in stream.iter_lines():
            if line.startswith("id:"):
                return line.split(":", 1)[1].strip()
    raise AssertionError("no hello")


def test_the_stream_reconnects_after_a_drop_and_resumes_from_the_last_event_seen(base, open_page):
    ladder = make_ladder(base, "resume")
    resume = current_event_id(ladder)
    asked = []

    def drop_the_first(route):
        """The first connection gets a hello and ends, as a dropped one would; the next go to the server."""
        asked.append(route.request.headers.get("last-event-id"))
        if len(asked) == 1:
            body = f'event: hello\nid: {resume}\ndata: {{"version": 0}}\n\n: keep-alive\n\n'
            route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=body)
        else:
            route.continue_()

    page = open_page("desktop")
    page.route("**/v1/ladders/resume/events", drop_the_first)
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=ann]")
    posted = ladder.post(["dee"], ["cy"])  # while the page is between connections
    expect(page.locator(f"#feed li.game[data-id='{posted['id']}']")).to_be_attached(timeout=5000)
    assert asked[:2] == [None, resume]  # the second connection resumed after the event the first one ended on
    expect(page.locator(".live")).to_have_attribute("data-state", "live")
