// Pieces that several pages draw: the ladder as loaded, titles, badges, form, the live indicator.
import { ApiError } from "./api.js";
import { fill, h } from "./dom.js";
import { askKey } from "./ui.js";

const PROVISIONAL_WHY =
  "Not yet comparable: this player's results do not pin their rating down yet " +
  "(too few results against enough different opponents, mathematics §10).";

// The reason is the tooltip for the mouse and the accessible name for keyboard and screen-reader users.
export function badge(player) {
  const why = player.provisional_reason ? `${PROVISIONAL_WHY} Here: ${player.provisional_reason}.` : PROVISIONAL_WHY;
  return h("span", { class: "badge", title: why, "aria-label": `provisional: ${why}`, tabindex: "0" }, "provisional");
}

const RESULT_WORDS = { W: "won", D: "drew", L: "lost" };

// The last results as chips, newest first: a letter and a colour, and the words for screen readers.
export function formChips(form) {
  if (!form || !form.length) return h("span", { class: "form none" }, "–");
  const words = `Last ${form.length} results, newest first: ${form.map((r) => RESULT_WORDS[r]).join(", ")}`;
  return h("span", { class: "form", role: "img", "aria-label": words, title: words },
    form.map((r) => h("span", { class: `r r-${r.toLowerCase()}`, "aria-hidden": "true" }, r)));
}

export const ladderName = (ladder) => ladder.name || ladder.slug;
export const playerName = (player) => player.name || player.key;

export function setTitle(...parts) {
  document.title = [...parts, "melo"].join(" · ");
}

// The ladder, asking for a key first when it is private (401) or the saved one is refused (403).
export async function loadLadder(api) {
  for (;;) {
    try {
      return await api.get();
    } catch (err) {
      if (!(err instanceof ApiError && err.aboutKey)) throw err;
      if (!(await askKey(api.slug, "read", err.status === 401 ? "This ladder is private." : err.message))) throw err;
    }
  }
}

// The header names the ladder and links to its admin page; the dot says whether changes arrive live.
export function ladderHeader(ladder) {
  const slug = encodeURIComponent(ladder.slug);
  fill(document.getElementById("context"),
    h("a", { href: `/ladders/${slug}`, class: "ladder-link" }, ladderName(ladder)),
    h("span", { id: "live", class: "live", "data-state": "connecting", title: "Connecting to live updates" },
      "Connecting"),
    h("a", { href: `/ladders/${slug}/admin`, class: "admin-link" }, "Admin"));
}

const LIVE_WORDS = {
  live: ["Live", "Games, results and changes appear here as they are recorded"],
  connecting: ["Connecting", "Connecting to live updates"],
  off: ["Offline", "Live updates are not available: reload the page to see new games"],
};

export function showLive(state) {
  const el = document.getElementById("live");
  if (!el) return;
  el.dataset.state = state;
  el.textContent = LIVE_WORDS[state][0];
  el.title = LIVE_WORDS[state][1];
}

// Two standard errors of a rating (Elo points) in words.
export function certainty(twoSe) {
  if (twoSe <= 60) return "well established";
  if (twoSe <= 120) return "fairly certain";
  if (twoSe <= 250) return "still settling";
  return "uncertain: too few games yet";
}
