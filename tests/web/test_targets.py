"""Tap targets: every visible control of the main pages is at least 24×24 CSS px on a phone and a laptop (WCAG 2.2,
2.5.8 target size minimum). Only a link inside a sentence is exempt, as WCAG exempts it."""

from __future__ import annotations

import pytest

from tests.web.conftest import make_ladder, show_insights

# Each visible button, link, summary, input, select and option with its box; a checkbox or radio button inside its
# label is measured as the label, which takes the tap too. A link is in a sentence when it is inline in a paragraph
# (or the footer) that says at least three words besides its links.
SMALL_TARGETS = """() => {
  const inSentence = (el) => {
    if (el.tagName !== "A" || getComputedStyle(el).display !== "inline") return false;
    let block = el.parentElement;
    while (block && getComputedStyle(block).display.startsWith("inline")) block = block.parentElement;
    if (!block || !block.matches("p, footer, figcaption, dd")) return false;
    const prose = block.cloneNode(true);
    prose.querySelectorAll("a, button, input, select, summary").forEach((t) => t.remove());
    return (prose.textContent.match(/\\p{L}{2,}/gu) || []).length >= 3;
  };
  const small = [];
  let measured = 0;
  const all = "a[href], button, summary, input:not([type=hidden]), select, [role=option], [tabindex='0']";
  for (const el of document.querySelectorAll(all)) {
    if (el.closest("[hidden], .sr-only, .skip") || getComputedStyle(el).visibility !== "visible") continue;
    if (!el.getClientRects().length) continue;
    const label = (el.type === "checkbox" || el.type === "radio") && el.closest("label");
    const box = (label || el).getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    measured += 1;
    if ((box.width >= 23.99 && box.height >= 23.99) || inSentence(el)) continue;
    const text = (el.textContent || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 30);
    small.push(`${el.tagName.toLowerCase()}#${el.id} "${text}" ${box.width.toFixed(1)}×${box.height.toFixed(1)}`);
  }
  return { measured, small };
}"""


def check_targets(page, where: str, at_least: int = 3) -> int:
    found = page.evaluate(SMALL_TARGETS)
    assert found["small"] == [], (where, found["small"])
    assert found["measured"] >= at_least, (where, found)
    return found["measured"]


@pytest.fixture(scope="module")
def office(base):
    ladder = make_ladder(base, "targets")
    ladder.post(["newbie"], ["ann"])  # a player not ranked yet: the reason under the name
    return ladder


def open_ladder(page, ladder) -> None:
    page.goto(ladder.url)
    page.wait_for_selector("#board tr[data-key=newbie] .why-unranked")
    page.wait_for_selector("#feed li.game .undo", state="attached")
    page.click("#ranking-options summary")


def test_every_control_on_a_phone_is_at_least_24_px_square(base, open_page, office):
    page = open_page("phone", saved={office.slug: office.key})
    open_ladder(page, office)
    page.locator("#board button.toggle").first.click()
    check_targets(page, "standings", 10)
    for tab in ("record", "results", "insights"):
        page.click(f"button[data-tab={tab}]")
        if tab == "insights":
            page.wait_for_selector("#intransitivity")
        check_targets(page, tab)
    page.click("button[data-tab=standings]")
    page.click("#me-pick")
    page.click("#me-picker")
    page.wait_for_selector("#me-picker-list [role=option]")
    check_targets(page, "me picker")
    for path, ready in [("/players/ann", "#stats"), ("/admin", "#player-list")]:
        page.goto(office.url + path)
        page.wait_for_selector(ready)
        check_targets(page, path)
    page.goto(base + "/")
    page.click("#new-ladder summary")
    check_targets(page, "home")


def test_every_control_of_the_ladder_page_on_a_laptop_is_at_least_24_px_square(base, open_page, office):
    page = open_page("desktop", saved={office.slug: office.key})
    open_ladder(page, office)
    show_insights(page)
    page.wait_for_selector("#intransitivity")
    check_targets(page, "ladder", 30)
