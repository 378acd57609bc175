// Pieces that several pages draw: the ladder as loaded, titles, badges, form, the live indicator.
import { ApiError } from "./api.js";
import { count, fill, h } from "./dom.js";
import { askKey } from "./ui.js";

// Why a player has no rank yet, in a colleague's words. The rule: ranked after 3 games against others, whatever
// the results (a 2-0 start is not ranked yet, a 1-5 record after six games is); and, once a background refit has
// looked, having both won and lost (or drawn) against the others.
export function unrankedWhy(player) {
  const left = player.results_to_rank;
  if (left > 0) return `${count(left, "more game")} to be ranked`;
  return "ranked once they have both won and lost (or drawn) against the others";
}

// Shown as text, not in a tooltip: a phone cannot hover.
export function badge(player) {
  return h("span", { class: "unranked" }, h("span", { class: "badge" }, "not ranked yet"), " ",
    h("small", { class: "why-unranked" }, unrankedWhy(player)));
}

// A player's key under their name, only where it tells something the name does not ("Ann Archer", key "ann";
// not "Omar", key "omar").
export const keyShown = (player) =>
  player.name && player.name.toLocaleLowerCase() !== player.key.toLocaleLowerCase() ? player.key : null;

const RESULT_WORDS = { W: "won", D: "drew", L: "lost" };

// The last results as chips, newest first: a letter and a colour, and the words for screen readers.
export function formChips(form) {
  if (!form || !form.length) return h("span", { class: "form none" }, "–");
  const words = `Last ${count(form.length, "result")}, newest first: ${form.map((r) => RESULT_WORDS[r]).join(", ")}`;
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

// The header names the ladder and links to its admin page; the dot says whether changes arrive live. Until the page
// follows the ladder's events it shows nothing: a page that never does (an unknown player, the admin page before
// its key) says so once drawn (app.js), rather than "Connecting" for ever.
export function ladderHeader(ladder) {
  const slug = encodeURIComponent(ladder.slug);
  fill(document.getElementById("context"),
    h("a", { href: `/ladders/${slug}`, class: "ladder-link" }, ladderName(ladder)),
    h("span", { id: "live", class: "live", hidden: true }),
    h("a", { href: `/ladders/${slug}/admin`, class: "admin-link" }, "Admin"));
}

const LIVE_WORDS = {
  live: ["Live", "Games, results and changes appear here as they are recorded"],
  connecting: ["Connecting", "Connecting to live updates"],
  off: ["Offline", "Live updates are not available: reload the page to see new games"],
  still: ["Not live", "This page does not follow live updates: reload it to see changes"],
};

export function showLive(state) {
  const el = document.getElementById("live");
  if (!el) return;
  el.hidden = false;
  el.dataset.state = state;
  el.textContent = LIVE_WORDS[state][0];
  el.title = LIVE_WORDS[state][1];
}

// A page drawn without following the ladder (its header shows no state yet) says that it is not live.
export function notLiveUnlessFollowing() {
  const el = document.getElementById("live");
  if (el && !el.dataset.state) showLive("still");
}

// Two standard errors of a rating (Elo points) in words.
export function certainty(twoSe) {
  if (twoSe <= 60) return "well established";
  if (twoSe <= 120) return "fairly certain";
  if (twoSe <= 250) return "still settling";
  return "uncertain: too few games yet";
}
