"""The front-end in a real headless Chromium (Debian's package) against one live server for the whole session.

Each test module makes its own ladders, so modules do not see one another's games. Pages open at desktop
(1366×900) or phone (390×844) size; an uncaught script error on any page fails the test that opened it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from devtools.browser import CHROMIUM, CHROMIUM_ARGS, SIZES
from devtools.server import ADMIN_KEY, live_server

# A small office: the key and the name of each player.
PEOPLE = {
    "ann": "Ann Archer",
    "bob": "Bob Baker",
    "cy": "Cy Cole",
    "dee": "Dee Dunn",
    "eve": "Eve Ellis",
    "fay": "Fay Fox",
}
#: One client for the helpers' requests: each ``httpx.post`` builds a TLS context of its own (~40 ms of CPU).  It
#: lets an idle connection go after a second, well before the server's keep-alive of five would close it under it.
HTTP = httpx.Client(limits=httpx.Limits(keepalive_expiry=1))


@dataclass
class Ladder:
    base: str
    slug: str
    key: str  # its first admin key

    @property
    def url(self) -> str:
        return f"{self.base}/ladders/{self.slug}"

    @property
    def api(self) -> str:
        return f"{self.base}/v1/ladders/{self.slug}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def post(self, winners: list[str], losers: list[str], draw: bool = False, **extra) -> dict:
        body = {"sides": [{"players": winners, "rank": 1}, {"players": losers, "rank": 1 if draw else 2}], **extra}
        answer = HTTP.post(f"{self.api}/games", json=body, headers=self.auth)
        assert answer.status_code == 201, answer.text
        return answer.json()

    def get(self, path: str, **params) -> dict:
        answer = HTTP.get(f"{self.api}{path}", params=params, headers=self.auth)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="session")
def base(tmp_path_factory) -> Iterator[str]:
    with live_server(f"sqlite:///{tmp_path_factory.mktemp('web') / 'melo.db'}") as url:
        yield url


def make_ladder(base: str, slug: str, games: bool = True, **config) -> Ladder:
    """A ladder of the six people; with `games`, fourteen singles and doubles over the last days."""
    created = HTTP.post(
        f"{base}/v1/ladders",
        json={"slug": slug, "name": f"Office {slug}", "seed": 1, **config},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert created.status_code == 201, created.text
    ladder = Ladder(base, slug, created.json()["admin_key"])
    for key, name in PEOPLE.items():
        assert HTTP.post(f"{ladder.api}/players", json={"key": key, "name": name}, headers=ladder.auth).is_success
    if games:
        start = datetime.now(UTC) - timedelta(days=7)
        results = [("ann", "bob"), ("cy", "dee"), ("ann", "cy"), ("bob", "dee"), ("ann", "dee"), ("eve", "fay")] * 2
        results += [("ann cy", "bob dee"), ("bob eve", "cy fay")]
        for n, (winners, losers) in enumerate(results):
            when = (start + timedelta(hours=11 * n)).isoformat().replace("+00:00", "Z")
            ladder.post(winners.split(), losers.split(), played_at=when)
    return ladder


def show_insights(page) -> None:
    """Scroll to the insights until the page has started reading them. It reads them when the section is first seen,
    and the sections above, filling in after a scroll, can push it out of view again before that."""
    for _ in range(40):
        page.locator("#insights").scroll_into_view_if_needed()
        if page.locator("#cycles").count():
            return
        page.wait_for_timeout(250)
    raise AssertionError("the insights were never read: #cycles never appeared")


@pytest.fixture(scope="module")
def browser():
    """Chromium for one test module. Playwright's sync API keeps an asyncio loop running in the main thread while it
    is open, so a browser kept for the session made ``asyncio.run`` fail in every later test of the process: under
    pytest-xdist, any test file a worker runs after a browser test's."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: run scripts/ensure-chromium.sh (make test does).")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser):
    """open_page(size, saved={slug: key}): a page in a fresh browser context, with keys already saved."""
    contexts = []
    errors: list[str] = []

    def open_page(size: str = "desktop", saved: dict[str, str] | None = None):
        context = browser.new_context(**SIZES[size], locale="en-GB", accept_downloads=True)
        contexts.append(context)
        for slug, key in (saved or {}).items():
            context.add_init_script(f"localStorage.setItem('melo-write-key:{slug}', {key!r})")
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert errors == [], errors  # no uncaught script errors on any page


@pytest.fixture
def desktop(open_page):
    return open_page("desktop")
