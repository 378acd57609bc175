"""The admin page: asked for an admin key once; players renamed, re-keyed, merged, deactivated and erased, each
after a confirmation; keys created and revoked; settings; the export downloaded; the old /settings address."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from playwright.sync_api import expect

from tests.web.conftest import make_ladder


def confirm(page, title: str, button: str) -> None:
    dialog = page.locator("dialog[open]")
    expect(dialog.locator("h2")).to_have_text(title)
    dialog.get_by_role("button", name=button, exact=True).click()
    expect(page.locator("dialog")).to_have_count(0)


def player_panel(page, key: str):
    item = page.locator(f"#player-list li[data-key='{key}']")
    if item.locator("details").get_attribute("open") is None:
        item.locator("summary").click()
    return item.locator(".player-actions")


def test_the_admin_page_needs_an_admin_key_and_says_when_a_key_is_not_one(base, open_page):
    ladder = make_ladder(base, "gate", games=False)
    write = httpx.post(f"{ladder.api}/keys", json={"name": "desk", "role": "write"}, headers=ladder.auth).json()["key"]
    page = open_page("desktop")
    page.goto(f"{ladder.url}/admin")
    expect(page.locator("#gate")).to_contain_text("This page needs an admin key of the ladder.")
    expect(page.locator("#admin")).to_be_hidden()
    page.click("#enter-admin-key")
    page.locator("dialog[open]").get_by_label("Key").fill(write)
    page.locator("dialog[open]").get_by_role("button", name="Save key").click()
    expect(page.locator("#gate")).to_contain_text("This needs an admin key; that key is a write key.")
    page.click("#enter-admin-key")
    page.locator("dialog[open]").get_by_label("Key").fill(ladder.key)
    page.locator("dialog[open]").get_by_role("button", name="Save key").click()
    expect(page.locator("#player-list li")).to_have_count(6)
    expect(page.locator("#gate")).to_be_empty()


def test_manage_players_each_change_confirmed(base, open_page):
    ladder = make_ladder(base, "manage")
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/admin")
    expect(page).to_have_title("Admin · Office manage · melo")

    panel = player_panel(page, "ann")
    panel.get_by_label("Name").fill("Annie Archer")
    panel.get_by_role("button", name="Rename").click()
    expect(page.locator("#messages")).to_have_text("Renamed to Annie Archer.")
    assert ladder.get("/players/ann")["name"] == "Annie Archer"

    panel = player_panel(page, "fay")
    panel.get_by_label("Key").fill("faye")
    panel.get_by_role("button", name="Change key").click()
    confirm(page, "Change Fay Fox's key to “faye”?", "Change key")
    expect(page.locator("#player-list li[data-key=faye]")).to_have_count(1)
    moved = ladder.get("/players/fay")
    assert moved["key"] == "faye" and moved["aliases"] == ["fay"]

    panel = player_panel(page, "dee")
    panel.get_by_role("button", name="Deactivate…").click()
    page.locator("dialog[open]").get_by_role("button", name="Cancel").click()
    assert ladder.get("/players/dee")["active"] is True  # cancelled: nothing changed
    panel.get_by_role("button", name="Deactivate…").click()
    confirm(page, "Deactivate Dee Dunn?", "Deactivate")
    # The page's answer first: the change is sent once the dialog has closed.
    expect(page.locator("#player-list li[data-key=dee] summary")).to_contain_text("inactive")
    assert ladder.get("/players/dee")["active"] is False
    player_panel(page, "dee").get_by_role("button", name="Reactivate").click()
    expect(page.locator("#player-list li[data-key=dee] summary")).not_to_contain_text("inactive")

    panel = player_panel(page, "eve")
    panel.get_by_label("Merge into", exact=True).fill("Fay")
    page.keyboard.press("Enter")
    panel.get_by_role("button", name="Merge…").click()
    confirm(page, "Merge Eve Ellis into Fay Fox?", "Merge")
    expect(page.locator("#messages .error")).to_contain_text("game")  # they played each other: the server says no
    games = ladder.get("/players/eve")["games"] + ladder.get("/players/dee")["games"]
    panel.get_by_label("Merge into", exact=True).fill("dee")
    page.keyboard.press("Enter")
    panel.get_by_role("button", name="Merge…").click()
    confirm(page, "Merge Eve Ellis into Dee Dunn?", "Merge")
    expect(page.locator("#player-list li[data-key=eve]")).to_have_count(0)
    assert ladder.get("/players/dee")["games"] == games
    assert ladder.get("/players/eve")["key"] == "dee"  # the old key leads to the player it was merged into

    panel = player_panel(page, "bob")
    panel.get_by_role("button", name="Erase…").click()
    dialog = page.locator("dialog[open]")
    dialog.get_by_role("button", name="Erase").click()  # the key not typed: the form does not submit
    expect(dialog).to_be_visible()
    dialog.get_by_label("Type bob to confirm").fill("bob")
    dialog.get_by_role("button", name="Erase").click()
    expect(page.locator("#player-list li[data-key=bob]")).to_have_count(0)
    expect(page.locator("#player-list li[data-key^=erased-]")).to_have_count(1)
    assert httpx.get(f"{ladder.api}/players/bob").status_code == 404


def test_keys_settings_and_the_export(base, open_page):
    ladder = make_ladder(base, "keys")
    page = open_page("desktop", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/admin")
    page.fill("#key-name", "front desk")
    page.select_option("#key-role", "write")
    page.click("#create-key")
    secret = page.inner_text("#created-key")
    game = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}
    auth = {"Authorization": f"Bearer {secret}"}
    assert httpx.post(f"{ladder.api}/games", json=game, headers=auth).status_code == 201
    page.reload()
    row = page.locator("#key-table tbody tr", has_text="front desk")
    expect(row.locator("td").nth(1)).to_have_text("write")
    expect(row.locator("td").nth(3)).to_have_text("just now")  # last used
    row.get_by_role("button", name="Revoke front desk").click()
    confirm(page, "Revoke the key “front desk”?", "Revoke")
    expect(page.locator("#key-table tr.revoked", has_text="front desk")).to_have_count(1)
    assert httpx.post(f"{ladder.api}/games", json=game, headers=auth).status_code == 403

    page.fill("#ladder-name", "Office pong")
    page.check("#setting-private")
    page.fill("#inactive-after-days", "60")
    page.uncheck("#play-draws")
    page.uncheck("#play-free_for_all")
    page.select_option("#play-points", "11")
    page.select_option("#play-best-of", "3")
    page.select_option("#season-every", "month")
    page.click("#save-settings")
    expect(page.locator("#messages")).to_have_text("Settings saved.")
    expect(page.locator(".ladder-link")).to_have_text("Office pong")
    settings = ladder.get("")
    assert settings["name"] == "Office pong" and settings["private"] is True
    assert settings["inactive_after_days"] == 60 and settings["season_every"] == "month"
    kinds = {"singles": True, "doubles": True, "free_for_all": False, "draws": False, "points": 11, "best_of": 3}
    assert settings["play"] == kinds
    assert httpx.get(ladder.api).status_code == 401  # private now

    with page.expect_download() as download:
        page.click("#download-export")
    assert download.value.suggested_filename == "keys.ndjson"
    lines = [json.loads(line) for line in Path(download.value.path()).read_text(encoding="utf-8").splitlines()]
    assert lines[0]["melo_export"] == 1 and sum("game" in line for line in lines) == ladder.get("")["games"]


def test_the_old_settings_address_opens_the_keys(base, open_page):
    ladder = make_ladder(base, "old-settings", games=False)
    page = open_page("phone", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/settings")
    expect(page.locator("#key-table tbody tr")).to_have_count(1)
    expect(page.locator("#keys")).to_be_in_viewport()
    expect(page).to_have_title("Admin · Office old-settings · melo")


def test_an_admin_closes_a_season_and_the_ladder_page_shows_it(base, open_page):
    ladder = make_ladder(base, "seasons")
    page = open_page("phone", saved={ladder.slug: ladder.key})
    page.goto(f"{ladder.url}/admin")
    page.fill("#season-name", "Autumn")
    page.select_option("#season-pull", "0.25")
    page.click("#close-season")
    confirm(page, "Close the season “Autumn”?", "Close the season")
    expect(page.locator("#messages")).to_have_text("Season “Autumn” closed: 14 games, 6 players.")
    archived = ladder.get("/seasons/Autumn")["items"]
    assert ladder.get("/seasons/Autumn")["season"]["pull"] == 0.25
    page.goto(ladder.url)
    page.click("#past-seasons summary")
    rows = page.locator("#season-standings tbody tr")
    expect(rows).to_have_count(6)
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.key)") == [r["key"] for r in archived]
    first = archived[0]
    expect(rows.first.locator("td.wdl")).to_have_text(f"{first['wins']}–{first['draws']}–{first['losses']}")
