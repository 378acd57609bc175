"""The README's screenshots of the front-end, made afresh from a realistic office ladder.

    .venv/bin/python scripts/screenshots.py [--out docs/img] [--keep]

Starts a server over a fresh SQLite database, fills an office table-tennis ladder (14 players with names, 160
singles and doubles games to 11 over the last five weeks, at lunch and after work, with their scores, and one open
challenge; the browser is Grace's, "me"), and writes, with Debian's Chromium through Playwright:

* ladder-desktop.png and profile-desktop.png at 1366×900,
* ladder-phone.png and profile-phone.png at 390×844 (twice the pixels, as a phone shows them),
* ladder-desktop-dark.png: the ladder page as a system set to dark mode shows it.

`--keep` leaves the server running afterwards and prints its address, to look at the ladder by hand.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devtools.browser import CHROMIUM, CHROMIUM_ARGS, SIZES  # noqa: E402
from devtools.server import ADMIN_KEY, LIVE, live_server  # noqa: E402

SLUG = "office"

# Name, and a strength in Elo points that the games are drawn from.
PLAYERS = [
    ("Ana Ruiz", 1680),
    ("Ben Okafor", 1540),
    ("Chloé Martin", 1610),
    ("Dev Patel", 1450),
    ("Emma Larsen", 1590),
    ("Farid Haddad", 1500),
    ("Grace Kim", 1720),
    ("Hugo Silva", 1420),
    ("Inês Costa", 1560),
    ("Jonas Weber", 1480),
    ("Keiko Tanaka", 1640),
    ("Liam Byrne", 1380),
    ("Maya Cohen", 1530),
    ("Noah Fischer", 1460),
]
GAMES = 160
#: What the office plays: singles and doubles to 11, no draws, no free-for-all.
PLAY = {"singles": True, "doubles": True, "free_for_all": False, "draws": False, "points": 11}
#: Who uses the browser that takes the screenshots ("me"), and the challenge open on the ladder page.
ME = "grace"
CHALLENGE = {"from": "ben", "to": "grace", "message": "Rematch at lunch?"}
DOUBLES_SHARE = 0.3
WEEKS = 5


def key_of(name: str) -> str:
    return name.split()[0].lower().replace("é", "e").replace("ê", "e")


def play_times(rng: random.Random, now: datetime) -> list[datetime]:
    """When the games were played: weekdays over the last weeks, at lunch or after work, the latest one recent."""
    start = now - timedelta(weeks=WEEKS)
    times = []
    while len(times) < GAMES - 1:
        day = start + timedelta(days=rng.randrange(WEEKS * 7))
        if day.weekday() >= 5:
            continue
        hour = rng.choice([12, 12, 13, 13, 17, 18])
        moment = day.replace(hour=hour, minute=rng.randrange(60), second=rng.randrange(60), microsecond=0)
        if moment < now - timedelta(hours=1):
            times.append(moment)
    times.append(now - timedelta(minutes=42))
    return sorted(times)


def game(rng: random.Random, strengths: dict[str, float], when: datetime) -> dict:
    """A singles or doubles game between random players, its winner drawn from their strengths (Elo's curve)."""
    per_side = 2 if rng.random() < DOUBLES_SHARE else 1
    players = rng.sample(list(strengths), 2 * per_side)
    a, b = players[:per_side], players[per_side:]
    diff = sum(strengths[p] for p in a) / per_side - sum(strengths[p] for p in b) / per_side
    a_wins = rng.random() < 1 / (1 + math.pow(10, -diff / 400))
    loser = rng.choice([rng.randrange(3, 10), 9, 10 + rng.randrange(3)])  # a game to 11, won by two past 10-10
    won, lost = (11, loser) if loser < 10 else (loser + 2, loser)
    return {
        "sides": [
            {"players": a, "score": won if a_wins else lost},
            {"players": b, "score": lost if a_wins else won},
        ],
        "played_at": when.isoformat().replace("+00:00", "Z"),
    }


def fill_office(base: str) -> str:
    """Create and fill the office ladder; return its admin key."""
    rng = random.Random(22)
    created = httpx.post(
        base + "/v1/ladders",
        json={"slug": SLUG, "name": "Office table tennis", "seed": 22, "play": PLAY},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    created.raise_for_status()
    key = created.json()["admin_key"]
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=auth) as client:
        for name, _ in PLAYERS:
            client.post(f"/v1/ladders/{SLUG}/players", json={"key": key_of(name), "name": name}).raise_for_status()
        strengths = {key_of(name): elo for name, elo in PLAYERS}
        for when in play_times(rng, datetime.now(UTC)):
            client.post(f"/v1/ladders/{SLUG}/games", json=game(rng, strengths, when)).raise_for_status()
        client.post(f"/v1/ladders/{SLUG}/challenges", json=CHALLENGE).raise_for_status()
    return key


def shoot(base: str, key: str, out: Path) -> list[Path]:
    from playwright.sync_api import expect, sync_playwright

    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        shots = [(size, options, "light") for size, options in SIZES.items()] + [("desktop", SIZES["desktop"], "dark")]
        for size, options, scheme in shots:
            context = browser.new_context(**options, locale="en-GB", timezone_id="Europe/London", color_scheme=scheme)
            # The key is saved, as in the browser of someone who records games.
            context.add_init_script(f"localStorage.setItem('melo-write-key:{SLUG}', '{key}')")
            context.add_init_script(f"localStorage.setItem('melo-me:{SLUG}', '{ME}')")
            page = context.new_page()
            page.goto(f"{base}/ladders/{SLUG}")
            page.wait_for_selector("#board tbody tr[data-key]")
            page.wait_for_selector("#feed li.game", state="attached")
            page.wait_for_selector(".live[data-state=live]")
            written.append(out / f"ladder-{size}{'-dark' if scheme == 'dark' else ''}.png")
            page.screenshot(path=str(written[-1]))
            if scheme == "dark":  # the ladder page shows what dark mode looks like
                context.close()
                continue
            page.goto(f"{base}/ladders/{SLUG}/players/grace")
            page.wait_for_selector("#rating-chart")
            expect(page.locator("#rivals-table td.chance", has_text="…")).to_have_count(0)
            written.append(out / f"profile-{size}.png")
            page.screenshot(path=str(written[-1]))
            context.close()
        browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--keep", action="store_true", help="leave the server running")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, live_server(f"sqlite:///{tmp}/melo.db") as base:
        key = fill_office(base)
        for path in shoot(base, key, args.out):
            print(f"{path}: {path.stat().st_size / 1000:.0f} kB")
        if args.keep:
            print(f"\n{base}/ladders/{SLUG}  (admin key {key}); Ctrl-C stops it")
            LIVE[base].wait()


if __name__ == "__main__":
    main()
