"""The ladder front-end in a real headless Chromium (Debian's package) against a live server."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from app.analysis.schemas import INTRANSITIVITY_SCALE
from tests.conftest import ADMIN_KEY, live_server

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"
# As root Chromium needs --no-sandbox; the machine has no internet, so nothing may phone home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A live server with an office ladder: four players with a few singles games."""
    url = f"sqlite:///{tmp_path_factory.mktemp('web') / 'melo.db'}"
    with live_server(url) as base:
        created = httpx.post(
            base + "/v1/ladders",
            json={"slug": "office", "name": "Office ping-pong", "seed": 1},
            headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        )
        key = created.json()["write_key"]
        for winner, loser in [("ann", "bob"), ("cy", "dee"), ("ann", "cy"), ("bob", "dee"), ("ann", "dee")] * 2:
            body = {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}
            assert (
                httpx.post(
                    base + "/v1/ladders/office/games", json=body, headers={"Authorization": f"Bearer {key}"}
                ).status_code
                == 201
            )
        yield base, key


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: run scripts/ensure-chromium.sh (make test does).")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors  # no uncaught script errors on any page


def test_record_a_doubles_game_and_see_the_leaderboard_change(site, page):
    base, key = site
    page.goto(base + "/")
    page.get_by_role("link", name="Office ping-pong").click()
    page.wait_for_selector("#board tbody tr[data-key=ann]")
    games_before = int(page.locator("#board tr[data-key=bob] td").nth(5).inner_text())

    page.fill("#write-key", key)
    page.get_by_label("doubles").check()
    page.fill("#a-0", "bob")
    page.fill("#a-1", "dee")
    page.fill("#b-0", "ann")
    page.fill("#b-1", "cy")
    page.select_option("#result", "a")
    expect(page.locator("#preview")).to_have_text(re.compile("^Chances:"))
    assert "bob & dee" in page.inner_text("#preview")
    page.click("#submit-game")
    page.wait_for_selector("#changes li")
    changes = page.inner_text("#changes")
    assert "bob:" in changes and "(+" in changes  # the underdogs won: their Elo went up
    assert int(page.locator("#board tr[data-key=bob] td").nth(5).inner_text()) == games_before + 1
    # The key was kept in the browser for the next visit.
    page.reload()
    page.wait_for_selector("#write-key")
    assert page.input_value("#write-key") == key


def test_record_a_free_for_all_with_a_tie(site, page):
    base, key = site
    page.goto(base + "/ladders/office")
    page.wait_for_selector("#game-form")
    page.fill("#write-key", key)
    page.get_by_label("free-for-all").check()
    page.get_by_role("button", name="Add player").click()
    rows = page.locator(".ffa-row")
    for n, (player, place) in enumerate([("cy", 1), ("ann", 2), ("bob", 2), ("eve", 4)]):
        rows.nth(n).locator(".ffa-player").fill(player)
        rows.nth(n).locator(".ffa-place").fill(str(place))
    page.click("#submit-game")
    page.wait_for_selector("#changes li")
    assert "eve: new" in page.inner_text("#changes")  # created on the fly
    page.wait_for_selector("#board tr[data-key=eve]")
    wdl = page.locator("#board tr[data-key=eve] td").nth(6).inner_text()
    assert wdl == "0/0/1"


def test_player_page_draws_the_history_plot(site, page):
    base, _ = site
    page.goto(base + "/ladders/office/players/ann")
    page.wait_for_selector("#history-plot polyline")
    points = page.get_attribute("#history-plot polyline", "points").split()
    assert len(points) >= 6  # one point per game
    assert page.locator("#next li").count() >= 1
    assert "wins with probability" in page.inner_text("#regulars")


def test_api_errors_are_shown_as_readable_messages(site, page):
    base, _ = site
    page.goto(base + "/ladders/office")
    page.wait_for_selector("#game-form")
    page.fill("#write-key", "mk_not-the-key")
    page.fill("#a-0", "ann")
    page.fill("#b-0", "bob")
    page.click("#submit-game")
    message = page.locator("#messages .error")
    message.wait_for()
    assert "write key is not this ladder's" in message.inner_text()
    page.fill("#write-key", "")
    page.goto(base + "/ladders/nowhere")
    page.locator("#messages .error").wait_for()
    text = page.inner_text("#messages")
    assert "There is no ladder 'nowhere'." in text and "{" not in text  # the problem's detail, not raw JSON


def test_phone_width_screenshot(site, browser):
    base, _ = site
    context = browser.new_context(viewport={"width": 375, "height": 812}, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    page.goto(base + "/ladders/office")
    page.wait_for_selector("#disc-plot circle")
    assert INTRANSITIVITY_SCALE in page.inner_text("#intransitivity")
    # Nothing is wider than the phone: tables scroll inside their own box.
    assert page.locator("html").evaluate("html => html.scrollWidth") <= 375
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ladder-phone.png"), full_page=True)
    assert (ARTIFACTS / "ladder-phone.png").stat().st_size > 10_000
    context.close()


def test_undo_a_game_from_the_recent_games(site, page):
    base, key = site
    body = {"sides": [{"players": ["dee"], "rank": 1}, {"players": ["ann"], "rank": 2}]}
    posted = httpx.post(base + "/v1/ladders/office/games", json=body, headers={"Authorization": f"Bearer {key}"}).json()
    page.goto(base + "/ladders/office")
    page.fill("#write-key", key)  # kept in the browser, as when a game is recorded
    page.wait_for_selector(f"#recent-games li[data-seq='{posted['seq']}'] button.undo")
    dee_games = int(page.locator("#board tr[data-key=dee] td").nth(5).inner_text())
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click(f"#recent-games li[data-seq='{posted['seq']}'] button.undo")
    page.wait_for_selector(f"#recent-games li[data-seq='{posted['seq']}'].voided")
    assert asked and f"#{posted['seq']}" in asked[0] and "dee" in asked[0]
    assert "undone" in page.inner_text("#messages")
    assert int(page.locator("#board tr[data-key=dee] td").nth(5).inner_text()) == dee_games - 1
    game = httpx.get(base + f"/v1/ladders/office/games/{posted['id']}").json()
    assert game["voided_at"] and game["voided_by"]
    assert httpx.get(base + "/v1/ladders/office/audit").json()["consistent"]


def test_rename_a_player_on_their_page(site, page):
    base, key = site
    page.goto(base + "/ladders/office/players/cy")
    page.wait_for_selector("#rename")
    page.fill("#new-name", "Cyrus")
    page.fill("#rename-key", key)
    page.click("#rename-submit")
    expect(page.locator("h1")).to_have_text(re.compile("^Cyrus"))
    assert "Renamed to Cyrus" in page.inner_text("#messages")
    assert httpx.get(base + "/v1/ladders/office/players/cy").json()["name"] == "Cyrus"
    page.fill("#rename-key", "wrong-key")
    page.click("#rename-submit")
    page.wait_for_selector("#messages .error")
    assert "write key is not this ladder's" in page.inner_text("#messages")


def test_a_player_reached_by_an_old_key_in_another_case_shows_their_aliases(site, page):
    base, key = site
    headers = {"Authorization": f"Bearer {key}"}
    created = httpx.post(base + "/v1/ladders/office/players", json={"key": "Zoë"}, headers=headers).json()
    assert (created["key"], created["name"]) == ("zoë", "Zoë")  # stored case-folded, the spelling as the name
    try:
        assert httpx.patch(base + "/v1/ladders/office/players/zoë", json={"key": "zoe"}, headers=headers).is_success
        page.goto(base + "/ladders/office/players/" + "ZOË")
        expect(page.locator("#aliases")).to_have_text("Also posted as zoë (key zoe).")
        expect(page.locator("h1")).to_have_text(re.compile("^Zoë"))
    finally:
        httpx.patch(base + "/v1/ladders/office/players/zoe", json={"active": False}, headers=headers)


def test_leaderboard_groups_provisional_players_and_hides_inactive_ones(site, page):
    base, key = site
    headers = {"Authorization": f"Bearer {key}"}
    body = {"sides": [{"players": ["newbie"], "rank": 1}, {"players": ["dee"], "rank": 2}]}
    assert httpx.post(base + "/v1/ladders/office/games", json=body, headers=headers).status_code == 201
    assert httpx.patch(base + "/v1/ladders/office/players/bob", json={"active": False}, headers=headers).is_success
    try:
        page.goto(base + "/ladders/office")
        page.wait_for_selector("#board tr.group")
        keys = page.eval_on_selector_all("#board tbody tr", "rows => rows.map(r => r.dataset.key || 'GROUP')")
        group = keys.index("GROUP")
        assert "newbie" in keys[group + 1 :]  # one game: provisional, below the established players
        assert page.locator("#board tr[data-key=newbie] td").first.inner_text() == "–"
        assert "bob" not in keys
        # The default order is the API's by=conservative: the same players in the same order.
        api = httpx.get(base + "/v1/ladders/office/leaderboard?by=conservative").json()["items"]
        assert [k for k in keys if k != "GROUP"] == [p["key"] for p in api]
        newbie = next(p for p in api if p["key"] == "newbie")
        cell = page.locator("#board tr[data-key=newbie] td").nth(3).inner_text()
        assert cell == f"{newbie['elo']:.0f} ± {2 * newbie['strength_se']:.0f}"
        assert page.locator("#board tr[data-key=newbie] td").nth(2).inner_text() == f"{newbie['conservative']:.0f}"
        assert page.locator("#board tr[data-key=newbie] td").nth(4).inner_text() == "0"  # just played: no ±0
        assert newbie["provisional_reason"] in page.get_attribute("#board tr[data-key=newbie] .badge", "title")
        assert "did not play" in page.inner_text("#field-moves")
        page.check("#show-inactive")
        page.wait_for_selector("#board tr[data-key=bob].inactive")
        assert "(inactive)" in page.inner_text("#board tr[data-key=bob]")
    finally:
        httpx.patch(base + "/v1/ladders/office/players/bob", json={"active": True}, headers=headers)


def test_create_a_ladder_on_the_home_page(site, page):
    base, _ = site
    page.goto(base + "/")
    page.wait_for_selector("#create-ladder")
    page.fill("#new-slug", "darts")
    page.fill("#new-ladder-name", "Office darts")
    page.fill("#admin-key", "wrong")
    page.click("#create-submit")
    page.wait_for_selector("#messages .error")
    assert "server admin key" in page.inner_text("#messages")
    page.fill("#admin-key", ADMIN_KEY)
    page.click("#create-submit")
    page.wait_for_selector("#new-key")
    shown = page.inner_text("#new-key")
    assert shown.startswith("mk_")
    keys = httpx.get(base + "/v1/ladders/darts/keys", headers={"Authorization": f"Bearer {shown}"})
    assert keys.status_code == 200 and keys.json()["items"][0]["role"] == "admin"
    page.click("text=Office darts")
    page.wait_for_selector("#write-key")
    assert page.input_value("#write-key") == shown  # kept in the browser for the new ladder


def test_an_admin_creates_and_revokes_keys_on_the_settings_page(site, page):
    base, key = site
    page.goto(base + "/ladders/office/settings")
    page.fill("#settings-key", key)
    page.click("#load-keys")
    page.wait_for_selector("#key-table tbody tr")
    page.fill("#key-name", "front desk")
    page.select_option("#key-role", "write")
    page.click("#create-key")
    page.wait_for_selector("#created-key")
    secret = page.inner_text("#created-key")
    game = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}
    post = httpx.post(base + "/v1/ladders/office/games", json=game, headers={"Authorization": f"Bearer {secret}"})
    assert post.status_code == 201
    httpx.delete(base + f"/v1/ladders/office/games/{post.json()['id']}", headers={"Authorization": f"Bearer {secret}"})
    row = page.locator("#key-table tbody tr", has_text="front desk")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke front desk").click()
    page.wait_for_selector("#key-table tr.revoked")
    post = httpx.post(base + "/v1/ladders/office/games", json=game, headers={"Authorization": f"Bearer {secret}"})
    assert post.status_code == 403


def test_make_fair_teams_for_doubles(site, page):
    base, _ = site
    page.goto(base + "/ladders/office")
    page.fill("#teams-players", "ann, bob, cy, dee")
    page.get_by_role("button", name="Make fair teams").click()
    page.wait_for_selector("#teams-result li")
    teams = page.locator("#teams-result li").all_inner_texts()
    assert len(teams) == 2 and all(" & " in t and "wins" in t for t in teams)
    # The strongest player (ann won all her games) is paired with the weakest (dee lost all of his).
    assert any("ann" in t and "dee" in t for t in teams), teams
    assert "Match quality" in page.inner_text("#teams-result")
    page.fill("#teams-count", "5")  # five teams of four players: the server's words, not a crash
    page.get_by_role("button", name="Make fair teams").click()
    assert "teams" in page.locator("#messages .error").inner_text()


def test_the_api_docs_render_from_local_assets(site, page):
    base, _ = site
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(base + "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "melo" in page.inner_text(".swagger-ui .info .title")
    # The operations are listed: the OpenAPI 3.1 schema rendered.
    page.wait_for_selector('.opblock-summary-path[data-path="/v1/ladders/{slug}/teams"]')
    assert requested and all(url.startswith(base) for url in requested), requested


def test_record_a_game_with_learned_seats(site, page):
    base, _ = site
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    created = httpx.post(base + "/v1/ladders", json={"slug": "tt", "seats": ["server", "receiver"]}, headers=admin)
    key = created.json()["write_key"]
    page.goto(base + "/ladders/tt")
    page.wait_for_selector("#learned-seats")
    assert "server 0 ± 347 Elo" in page.inner_text("#learned-seats")  # the prior: ± 2 × 1 logit (174 points)
    page.fill("#write-key", key)
    page.fill("#a-0", "ann")
    page.fill("#b-0", "bob")
    assert page.input_value("#seat-a") == "server" and page.input_value("#seat-b") == "receiver"
    page.select_option("#result", "a")
    page.click("#submit-game")
    page.wait_for_selector("#changes li")
    game = httpx.get(base + "/v1/ladders/tt/games").json()["items"][0]
    assert [side["seat"] for side in game["sides"]] == ["server", "receiver"]
    page.reload()
    page.wait_for_selector("#learned-seats")
    assert "server +" in page.inner_text("#learned-seats") and "server 0 " not in page.inner_text("#learned-seats")
