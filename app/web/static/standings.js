// The standings on the ladder page: the leaderboard in pages of 50 ("Show more players"), "Find a player", the
// order chosen under "How ratings work", and on a phone each row's details a tap away. Drawn again when the page
// crosses the phone's width.
import { challengeButton } from "./challenges.js";
import { changeClass, fill, h, number, profileHref, signed, timeAgo, whole } from "./dom.js";
import { badge, certainty, formChips } from "./parts.js";
import { picker } from "./picker.js";
import { FIELD_MOVES, HOW, ORDERS, orderOf } from "./standings-words.js";
import { guarded } from "./ui.js";

export const PAGE = 50; // leaderboard rows at first, and per "show more"
// A phone shows five of the standings' nine columns: a row across the table spans those it shows, as a cell
// spanning hidden columns would squeeze the names.
const PHONE = window.matchMedia("(max-width: 759.98px)");
const across = () => (PHONE.matches ? "5" : "9");
const FIND_ROWS = 2000; // "Find a player" loads the standings this far down at most

// `version`: the newest ladder version the page has seen (its own games, the live events): never shown older.
export const boardPath = (order, inactive, limit, cursor, version) =>
  `/leaderboard?by=${order}&limit=${limit}&form=true${inactive ? "&inactive=true" : ""}` +
  (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "") + (version ? `&min_version=${version}` : "");

// `rankedBy`, `finder`, `box` (the table) and `options`, for the page to place. `ladder()`: the ladder as last read;
// `me()`: this device's player; `version()`: the ladder version the page has seen, `saw(version)` told each read's.
export class Standings {
  constructor({ api, ladder, roster, me, version, saw, onChallenge }) {
    this.api = api;
    this.ladder = ladder;
    this.roster = roster;
    this.me = me;
    this.version = version;
    this.saw = saw;
    this.onChallenge = onChallenge;
    this.order = "conservative";
    this.showInactive = false;
    this.rows = PAGE;
    this.expanded = new Set(); // players whose details are open (on a phone)
    this.elos = new Map(); // each shown player's Elo, to mark those a change moved
    this.drawn = null; // the standings shown
    this.rankedBy = h("p", { id: "ranked-by", class: "muted" });
    this.finder = h("div", { class: "finder", hidden: ladder().players <= PAGE },
      picker({ id: "find-player", label: "Find a player", roster, allowNew: false,
        onPick: (key) => guarded(() => this.find(key)) }).root);
    this.box = h("div", { id: "board-box" });
    this.options = this.rankingOptions();
    PHONE.addEventListener("change", () => this.redraw());
  }

  rankingOptions() {
    const select = h("select", { id: "order" }, ORDERS.map(([value, label]) => h("option", { value }, label)));
    select.addEventListener("change", () => {
      this.order = select.value;
      guarded(() => this.load());
    });
    const inactive = h("input", { type: "checkbox", id: "show-inactive" });
    inactive.addEventListener("change", () => {
      this.showInactive = inactive.checked;
      guarded(() => this.load());
    });
    return h("details", { class: "options", id: "ranking-options" }, h("summary", {}, "How ratings work"),
      HOW.map((text) => h("p", { class: "muted" }, text)),
      h("p", { class: "muted", id: "field-moves" }, FIELD_MOVES),
      h("p", { class: "muted" }, "Behind it, each player has a few numbers rather than one, so that rock-paper-" +
        "scissors cycles (Ann beats Bob, Bob beats Cy, Cy beats Ann) can show: the Insights section draws them."),
      h("div", { class: "field" }, h("label", { for: "order" }, "Order by"), select),
      h("label", { class: "check" }, inactive, " Show inactive players"));
  }

  // The rows shown so far, in pages of up to 500 (the API's largest).
  async load() {
    const items = [];
    let cursor = null;
    let version = 0;
    do {
      const limit = Math.min(500, this.rows - items.length);
      const page = await this.api.get(boardPath(this.order, this.showInactive, limit, cursor, this.version()));
      items.push(...page.items);
      cursor = page.next_cursor;
      version = page.ladder_version;
    } while (cursor !== null && items.length < this.rows);
    this.saw(version);
    this.roster.add(items);
    this.draw(items, cursor !== null);
  }

  // A player picked in "Find a player": their row, loaded if it is further down, shown and focused; a player not on
  // the standings (inactive, or beyond the first FIND_ROWS) is shown on their own page.
  async find(key) {
    const rowOf = () => this.box.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
    while (!rowOf() && this.drawn?.[1] && this.rows < FIND_ROWS) {
      this.rows = Math.min(FIND_ROWS, this.rows + 500);
      await this.load();
    }
    const row = rowOf();
    if (!row) {
      location.href = profileHref(this.api.slug, key);
      return;
    }
    for (const found of this.box.querySelectorAll("tr.found")) found.classList.remove("found");
    row.classList.add("found");
    row.scrollIntoView({ block: "center" });
    row.querySelector("td.player a").focus({ preventScroll: true });
  }

  // The standings shown, drawn again ("me" changed, the page crossed the phone's width).
  redraw() {
    if (this.drawn) this.draw(...this.drawn);
  }

  draw(items, more) {
    this.drawn = [items, more];
    const [, , column, meaning, shown] = orderOf(this.order);
    fill(this.rankedBy, meaning);
    const established = items.filter((p) => !p.provisional);
    const provisional = items.filter((p) => p.provisional);
    const rows = established.flatMap((p, n) => this.playerRows(p, n + 1, shown));
    if (provisional.length) {
      rows.push(h("tr", { class: "group" }, h("td", { colspan: across() },
        "Not ranked yet: a player is ranked after 3 games against others, whatever the results")));
      rows.push(...provisional.flatMap((p) => this.playerRows(p, "–", shown)));
    }
    this.elos = new Map(items.map((p) => [p.key, p.elo]));
    const showMore = h("button", { type: "button", class: "secondary", id: "show-more" }, "Show more players");
    showMore.addEventListener("click", () => {
      this.rows += PAGE;
      guarded(() => this.load());
    });
    fill(this.box,
      h("table", { id: "board", class: "board" },
        h("thead", {}, h("tr", {},
          h("th", { class: "num rank-col", scope: "col" }, h("abbr", { title: "Rank" }, "#")),
          h("th", { scope: "col" }, "Player"),
          h("th", { class: "num score-col", scope: "col" }, column),
          h("th", { scope: "col", class: "form-col", title: "The last five results, newest first" }, "Form",
            h("small", { class: "pm" }, " newest first")),
          h("th", { class: "num wide", scope: "col" }, "Games"),
          h("th", { class: "num wide wdl", scope: "col", title: this.draws ? "Won, drawn, lost" : "Won, lost" },
            this.draws ? "W–D–L" : "W–L"),
          h("th", { class: "num wide", scope: "col", title: "What their own last game did to their rating" },
            "Last game"),
          h("th", { class: "wide", scope: "col" }, "Last played"),
          h("th", { class: "narrow", scope: "col" }, h("span", { class: "sr-only" }, "Details")))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: across(), class: "muted" },
          "No players yet: record the first game.")))),
      more ? showMore : null);
  }

  // Whether the ladder plays draws: W–D–L, else W–L (a ladder without the `play` setting may have draws).
  get draws() {
    return this.ladder().play?.draws !== false;
  }

  record(p) {
    return this.draws ? `${number(p.wins)}–${number(p.draws)}–${number(p.losses)}`
      : `${number(p.wins)}–${number(p.losses)}`;
  }

  // A player's row, and on a phone a row of details under it, made when first opened (most never are).
  playerRows(p, rank, shown) {
    const moved = this.elos.has(p.key) && Math.round(this.elos.get(p.key)) !== Math.round(p.elo);
    const detailsId = `details-${cssId(p.key)}`;
    const since = p.last_game_change; // their own last game's change; others' games move a rating too (apart)
    const sinceText = since === null || since === undefined || Math.round(since) === 0 ? "–" : signed(since);
    const others = p.change_since_last_game;
    const othersMoved = others !== null && others !== undefined && Math.round(others) !== 0;
    const twoSe = 2 * p.strength_se;
    const rating = `${whole(p.elo)}, give or take ${whole(twoSe)} (${certainty(twoSe)})`;
    const won = this.draws ? `${number(p.wins)} won, ${number(p.draws)} drawn, ${number(p.losses)} lost`
      : `${number(p.wins)} won, ${number(p.losses)} lost`;
    const details = () => h("tr", { class: "details", id: detailsId }, h("td", { colspan: "5" }, // phones only
      h("dl", {},
        h("div", {}, h("dt", {}, "Rating"), h("dd", {}, rating)),
        h("div", {}, h("dt", {}, "Games"), h("dd", {}, `${number(p.games)}: ${won}`)),
        h("div", {}, h("dt", {}, "Last game"), h("dd", {}, sinceText === "–" ? "no change" : sinceText)),
        othersMoved ? h("div", {}, h("dt", {}, "Others' games since"), h("dd", {}, signed(others))) : null,
        h("div", {}, h("dt", {}, "Last played"),
          h("dd", {}, p.last_played_at ? timeAgo(p.last_played_at) : "never"))),
      challengeButton({ api: this.api, roster: this.roster, to: p.key, toLabel: p.name || p.key,
        onMade: (c) => this.onChallenge(c) })));
    const open = this.expanded.has(p.key);
    const toggle = h("button", { type: "button", class: "ghost toggle", "aria-expanded": String(open),
      "aria-controls": detailsId, "aria-label": `Details of ${p.name || p.key}` }, "▾");
    const mine = p.key === this.me();
    const row = h("tr", { "data-key": p.key, class: [p.inactive_reason && "inactive", moved && "changed",
      mine && "me"] },
      h("td", { class: "num rank" }, rank),
      h("td", { class: "player" }, h("a", { href: profileHref(this.api.slug, p.key) }, p.name || p.key),
        mine ? h("span", { class: "me-mark" }, " (me)") : null,
        p.provisional ? [" ", badge(p)] : null,
        p.inactive_reason ? h("span", { class: "muted", title: p.inactive_reason }, " (inactive)") : null),
      h("td", { class: "num score", title: rating }, shown(p)),
      h("td", { class: "form-col" }, formChips(p.form)),
      h("td", { class: "num wide" }, number(p.games)),
      h("td", { class: "num wide wdl" }, this.record(p)),
      h("td", { class: ["num wide", sinceText !== "–" && changeClass(since)] }, sinceText),
      h("td", { class: "wide" }, p.last_played_at ? timeAgo(p.last_played_at) : "never"),
      h("td", { class: "narrow" }, toggle));
    toggle.addEventListener("click", () => {
      const now = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(now));
      if (!document.getElementById(detailsId)) row.after(details());
      document.getElementById(detailsId).hidden = !now;
      if (now) this.expanded.add(p.key);
      else this.expanded.delete(p.key);
    });
    return open ? [row, details()] : [row];
  }
}

const cssId = (key) => Array.from(key, (c) => (/[A-Za-z0-9_-]/.test(c) ? c : `_${c.codePointAt(0)}`)).join("");
