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
    """A ladder of the six people; with `games`, fourteen singles and doubles over the last days.  On the shrinking
    step unless `config` says otherwise: the pages' scenarios (a crowded styles chart, a newcomer's unsure lead, a
    rating that moves while its player waits) were written with its numbers; the pages show either rule alike."""
    created = HTTP.post(
        f"{base}/v1/ladders",
        json={"slug": slug, "name": f"Office {slug}", "seed": 1, "rate_rule": "steps", **config},
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


def shown(change: float) -> str:
    """A rating change as the page writes it: +12, −3, and 0 for whatever rounds to nothing."""
    n = round(change)
    return "0" if n == 0 else f"{'+' if n > 0 else '−'}{abs(n)}"


# Every element with text of its own that is shown: its colour against the backgrounds behind it (composited up
# the tree), as WCAG 2 computes contrast; large text needs 3:1, the rest 4.5:1. Disabled controls are exempt.
CONTRAST = """() => {
  const rgba = (c) => { const v = c.match(/[\\d.]+/g).map(Number); return v.length === 3 ? [...v, 1] : v; };
  const over = (top, under) => top.slice(0, 3).map((v, i) => v * top[3] + under[i] * (1 - top[3]));
  const luminance = (rgb) => {
    const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] === 1) break;
    }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255]);
  };
  const failures = [];
  let checked = 0;
  for (const el of document.querySelectorAll("body *")) {
    const placeholder = el.placeholder && !el.value;  // a placeholder is text too
    if (!placeholder && ![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const style = getComputedStyle(el, placeholder ? "::placeholder" : null);
    if (style.visibility !== "visible" || !el.getClientRects().length || el.closest(".sr-only, [hidden]")) continue;
    if (el.closest("button:disabled, input:disabled, select:disabled")) continue;
    const behind = background(el);
    const fg = over(rgba(el instanceof SVGElement ? style.fill : style.color), behind);
    const [hi, lo] = [luminance(fg), luminance(behind)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (Number(style.fontWeight) >= 700 && size >= 18.66);
    checked += 1;
    const text = (placeholder ? el.placeholder : el.textContent).trim().slice(0, 30);
    if (ratio < (large ? 3 : 4.5)) failures.push(`${el.tagName} "${text}" ${ratio.toFixed(2)}`);
  }
  return { checked, failures };
}"""

# Whether the focused element shows it: an outline or a ring on itself, or on the element drawn for it (a radio
# button hidden under its label's box).
FOCUS_SHOWN = """() => {
  const el = document.activeElement;
  const shows = (e) => {
    if (!e) return false;
    const s = getComputedStyle(e);
    return (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== "none";
  };
  return { tag: el.tagName, id: el.id, text: (el.textContent || el.value || "").trim().slice(0, 30),
    shown: shows(el) || shows(el.nextElementSibling) };
}"""

CONTROLS = {
    "button",
    "textbox",
    "combobox",
    "checkbox",
    "radio",
    "spinbutton",
    "searchbox",
    "link",
    "listbox",
    "option",
}


def accessible_names_missing(page) -> list[str]:
    """The controls to which Chromium's accessibility tree gives no name."""
    tree = page.context.new_cdp_session(page).send("Accessibility.getFullAXTree")
    missing = []
    for node in tree["nodes"]:
        role = node.get("role", {}).get("value")
        if node.get("ignored") or role not in CONTROLS:
            continue
        if not str(node.get("name", {}).get("value", "")).strip():
            missing.append(f"{role} {node.get('backendDOMNodeId')}")
    return missing


def check_accessibility(page, tabs: int) -> None:
    assert accessible_names_missing(page) == []
    contrast = page.evaluate(CONTRAST)
    assert contrast["checked"] > 10 and contrast["failures"] == [], contrast["failures"]
    page.evaluate("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    page.locator("body").focus()
    seen = []
    for _ in range(tabs):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUS_SHOWN)
        if focused["tag"] == "BODY":
            break
        seen.append(focused)
        assert focused["shown"], focused
    assert len(seen) >= min(tabs, 5)


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
    """open_page(size, saved={slug: key}, scheme="light"): a page in a fresh browser context, with keys already
    saved, its system asking for a light or a dark page."""
    contexts = []
    errors: list[str] = []

    def open_page(size: str = "desktop", saved: dict[str, str] | None = None, scheme: str = "light"):
        context = browser.new_context(**SIZES[size], locale="en-GB", accept_downloads=True, color_scheme=scheme)
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
