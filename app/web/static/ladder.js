// The ladder page: "me", standings, recording a game, the latest results and the most active players first; the
// mathematics (predictions, fair teams, cycles) lower down. It follows the ladder's event stream, so that a game
// recorded anywhere shows up here within moments, without a reload.
import { MostActive } from "./active.js";
import { LadderApi } from "./api.js";
import { OpenChallenges, challengeButton } from "./challenges.js";
import { changeClass, count, debounce, fill, h, number, profileHref, signed, timeAgo, whole } from "./dom.js";
import { follow } from "./live.js";
import { meBar } from "./me.js";
import { badge, certainty, formChips, ladderHeader, ladderName, loadLadder, setTitle, showLive } from "./parts.js";
import { Roster, picker } from "./picker.js";
import { Moments } from "./moments.js";
import { recordForm } from "./record.js";
import { lastSeason, pastSeasons } from "./seasons.js";
import { FIELD_MOVES, HOW, ORDERS, orderOf } from "./standings-words.js";
import { confirmed, guarded, say, withKey } from "./ui.js";

const PAGE = 50; // leaderboard rows at first, and per "show more"
// A phone shows five of the standings' nine columns: a row across the table spans those it shows, as a cell
// spanning hidden columns would squeeze the names.
const PHONE = window.matchMedia("(max-width: 759.98px)");
const across = () => (PHONE.matches ? "5" : "9");
const FEED = 12; // results listed
const FIND_ROWS = 2000; // "Find a player" loads the standings this far down at most
const REFRESH_MS = 250; // a burst of changes causes one reload

// `version`: the newest ladder version the page has seen (its own games, the live events): never shown older.
const boardPath = (order, inactive, limit, cursor, version) =>
  `/leaderboard?by=${order}&limit=${limit}&form=true${inactive ? "&inactive=true" : ""}` +
  (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "") + (version ? `&min_version=${version}` : "");

export async function ladderView(view, slug) {
  const api = new LadderApi(slug);
  // The standings and the latest games are read while the ladder is, not after it.
  api.readAhead(boardPath("conservative", false, PAGE, null));
  api.readAhead(`/games?limit=${FEED}`);
  const ladder = await loadLadder(api);
  setTitle(ladderName(ladder));
  ladderHeader(ladder);
  await new LadderPage(view, api, ladder).start();
}

class LadderPage {
  constructor(view, api, ladder) {
    this.view = view;
    this.api = api;
    this.ladder = ladder;
    this.roster = new Roster();
    this.me = meBar({ api, ladder, roster: this.roster, onChange: () => this.meChanged(),
      version: () => this.version });
    this.order = "conservative";
    this.showInactive = false;
    this.rows = PAGE;
    this.expanded = new Set(); // players whose details are open (on a phone)
    this.elos = new Map(); // each shown player's Elo, to mark those a change moved
    this.games = []; // the latest games, newest first
    this.arrived = new Set(); // games added since the feed was last drawn: they flash once
    this.version = 0; // the ladder version the page shows
    this.refreshBoard = debounce(() => guarded(() => this.loadBoard()), REFRESH_MS);
    this.refreshAll = debounce(() => guarded(() => this.reload()), REFRESH_MS);
    this.refreshRoster = debounce(() => guarded(() => this.loadRoster()), REFRESH_MS);
    this.refreshSummary = debounce(() => guarded(() => this.loadSummary()), REFRESH_MS);
    this.drawn = null; // the standings shown: drawn again when the page crosses the phone's width
    this.moments = new Moments(api, () => this.drawGames());
    this.lastSeason = lastSeason(api);
    this.active = new MostActive(api, this.roster);
    PHONE.addEventListener("change", () => this.drawn && this.drawBoard(...this.drawn));
  }

  async start() {
    this.layout();
    await Promise.all([guarded(() => this.loadBoard()), guarded(() => this.loadGames(FEED))]);
    guarded(() => this.moments.load());
    performance.mark("melo:content"); // the first render, as bench/bench_pages.py measures it
    this.drawSummary();
    follow(this.api.slug, this.eventHandlers(), showLive);
    guarded(() => this.loadRoster());
    guarded(() => this.openChallenges.load());
    // The insights' reports are heavy on a large ladder: read when the section is first seen, after the rest.
    whenShown(this.insights, async () => {
      const { insights } = await import("./insights.js");
      insights(this.insights, { api: this.api, ladder: this.ladder, roster: this.roster });
    });
  }

  // ---------- layout ----------

  layout() {
    this.summary = h("p", { id: "ladder-summary", class: "muted" });
    this.boardBox = h("div", { id: "board-box" });
    this.feed = h("ul", { id: "feed", class: "feed" });
    this.openChallenges = new OpenChallenges({ api: this.api,
      onPlayed: (game) => guarded(() => this.addGame(game)) });
    const sections = [
      h("section", { id: "standings", class: "panel", "aria-labelledby": "standings-title" },
        h("h2", { id: "standings-title" }, "Standings"), this.lastSeason.element,
        this.rankedBy = h("p", { id: "ranked-by", class: "muted" }),
        this.finder = h("div", { class: "finder", hidden: this.ladder.players <= PAGE },
          picker({ id: "find-player", label: "Find a player", roster: this.roster, allowNew: false,
            onPick: (key) => guarded(() => this.findPlayer(key)) }).root),
        this.boardBox, this.rankingOptions(), pastSeasons(this.api, this.ladder)),
      h("section", { id: "record", class: "panel", "aria-labelledby": "record-title" },
        h("h2", { id: "record-title" }, "Record a game"), this.openChallenges.root,
        this.form = recordForm({ api: this.api, ladder: this.ladder, roster: this.roster, me: () => this.me.key,
          onRecorded: (game) => guarded(() => this.addGame(game)), onUndone: (game) => this.voidGame(game) })),
      h("section", { id: "results", class: "panel", "aria-labelledby": "results-title" },
        h("h2", { id: "results-title" }, "Latest results"), this.feed, this.moments.feed, this.active.root),
      h("section", { id: "insights", class: "panel", "aria-labelledby": "insights-title" },
        h("h2", { id: "insights-title" }, "Insights"),
        h("p", { class: "muted" }, "Predictions, fair teams and the shape of the ladder.")),
    ];
    this.insights = sections[3];
    const grid = h("div", { class: "ladder-grid" }, sections);
    fill(this.view, h("div", { class: "page-head" }, h("h1", {}, ladderName(this.ladder)), this.summary,
      this.me.root),
      sectionTabs(grid, [["standings", "Standings"], ["record", "Record"], ["results", "Results"],
        ["insights", "Insights"]]), grid);
    // A keyboard reaches the record form's first player in one Tab and Enter, not 25 (its tab shown on a phone).
    const skip = h("a", { class: "skip", href: "#record" }, "Skip to recording a game");
    skip.addEventListener("click", (event) => {
      event.preventDefault();
      this.view.querySelector("nav.tabs button[data-tab=record]").click();
      this.form.focusFirst();
    });
    document.querySelector("a.skip").after(skip);
  }

  rankingOptions() {
    const select = h("select", { id: "order" }, ORDERS.map(([value, label]) => h("option", { value }, label)));
    select.addEventListener("change", () => {
      this.order = select.value;
      guarded(() => this.loadBoard());
    });
    const inactive = h("input", { type: "checkbox", id: "show-inactive" });
    inactive.addEventListener("change", () => {
      this.showInactive = inactive.checked;
      guarded(() => this.loadBoard());
    });
    return h("details", { class: "options", id: "ranking-options" }, h("summary", {}, "How ratings work"),
      HOW.map((text) => h("p", { class: "muted" }, text)),
      h("p", { class: "muted", id: "field-moves" }, FIELD_MOVES),
      h("p", { class: "muted" }, "Behind it, each player has a few numbers rather than one, so that rock-paper-" +
        "scissors cycles (Ann beats Bob, Bob beats Cy, Cy beats Ann) can show: the Insights section draws them."),
      h("div", { class: "field" }, h("label", { for: "order" }, "Order by"), select),
      h("label", { class: "check" }, inactive, " Show inactive players"));
  }

  async loadSummary() {
    this.ladder = await this.api.get();
    this.drawSummary();
  }

  drawSummary() {
    const latest = this.games.find((g) => !g.voided_at);
    fill(this.summary, `${count(this.ladder.players, "player")} · ${count(this.ladder.games, "game")}`,
      latest ? [" · last game ", timeAgo(latest.played_at)] : null);
  }

  // ---------- standings ----------

  // The rows shown so far, in pages of up to 500 (the API's largest).
  async loadBoard() {
    const items = [];
    let cursor = null;
    let version = 0;
    do {
      const limit = Math.min(500, this.rows - items.length);
      const page = await this.api.get(boardPath(this.order, this.showInactive, limit, cursor, this.version));
      items.push(...page.items);
      cursor = page.next_cursor;
      version = page.ladder_version;
    } while (cursor !== null && items.length < this.rows);
    this.version = Math.max(this.version, version);
    this.roster.add(items);
    this.drawBoard(items, cursor !== null);
  }

  // A player picked in "Find a player": their row, loaded if it is further down, shown and focused; a player not on
  // the standings (inactive, or beyond the first FIND_ROWS) is shown on their own page.
  async findPlayer(key) {
    const rowOf = () => this.boardBox.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
    while (!rowOf() && this.drawn?.[1] && this.rows < FIND_ROWS) {
      this.rows = Math.min(FIND_ROWS, this.rows + 500);
      await this.loadBoard();
    }
    const row = rowOf();
    if (!row) {
      location.href = profileHref(this.api.slug, key);
      return;
    }
    for (const found of this.boardBox.querySelectorAll("tr.found")) found.classList.remove("found");
    row.classList.add("found");
    row.scrollIntoView({ block: "center" });
    row.querySelector("td.player a").focus({ preventScroll: true });
  }

  drawBoard(items, more) {
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
      guarded(() => this.loadBoard());
    });
    fill(this.boardBox,
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
    return this.ladder.play?.draws !== false;
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
        onMade: (c) => this.openChallenges.upsert(c) })));
    const open = this.expanded.has(p.key);
    const toggle = h("button", { type: "button", class: "ghost toggle", "aria-expanded": String(open),
      "aria-controls": detailsId, "aria-label": `Details of ${p.name || p.key}` }, "▾");
    const mine = p.key === this.me.key;
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

  // "Me" was picked, changed or forgotten: the standings mark the row, the record form fills the player in.
  meChanged() {
    if (this.drawn) this.drawBoard(...this.drawn);
    this.form.prefillMe();
  }

  // ---------- latest results ----------

  // The latest games.
  async loadGames(limit) {
    const page = await this.api.get(`/games?limit=${limit}`);
    // A game the stream brought while this read was under way is newer than its answer: it stays.
    const newest = Math.max(0, ...page.items.map((g) => g.id));
    const arrived = this.games.filter((g) => g.id > newest);
    this.games = [...arrived, ...page.items].sort((a, b) => b.id - a.id);
    this.roster.remember(this.games.flatMap((g) => g.sides.flatMap((s) => s.players.map((p) => p.key))));
    this.drawGames();
  }

  drawGames() {
    const shown = this.games.slice(0, FEED);
    fill(this.feed, shown.length ? shown.map((g) => this.gameItem(g)) : h("li", { class: "muted" }, "No games yet."));
    this.arrived.clear();
  }

  gameItem(game) {
    const order = [...game.sides].sort((x, y) => x.rank - y.rank);
    const side = (s) => h("span", { class: "side" }, s.players.map((p, n) => [n ? " & " : "",
      h("a", { href: profileHref(this.api.slug, p.key) }, this.roster.name(p.key)),
      game.voided_at ? null : [" ", h("span", { class: ["chg", changeClass(p.elo_change)],
        title: "Elo points won or lost in this game" }, signed(p.elo_change))]]));
    let line;
    if (order.length === 2) {
      const tie = order[0].rank === order[1].rank;
      line = [side(order[0]), h("span", { class: "verb" }, tie ? " drew with " : " beat "), side(order[1])];
    } else {
      line = order.map((s, n) => [n ? " · " : "", h("span", { class: "place" }, `${s.rank}. `), side(s),
        s.score === null || s.score === undefined ? null : h("span", { class: "muted" }, ` (${s.score})`)]);
    }
    const score = scoreOf(game, order);
    const undo = h("button", { type: "button", class: "link undo", "aria-label": `Undo game ${game.id}` }, "Undo");
    undo.addEventListener("click", () => this.undo(game));
    const again = h("button", { type: "button", class: "link rematch", "aria-label": `Rematch of game ${game.id}` },
      "Rematch");
    again.addEventListener("click", () => this.rematch(game));
    const classes = ["game", game.voided_at && "voided", this.arrived.has(game.id) && "fresh"];
    return h("li", { class: classes, "data-id": game.id },
      h("p", { class: "line" }, line, score ? [" ", h("span", { class: "score" }, score)] : null),
      game.voided_at ? null : this.moments.beside(game.id),
      h("p", { class: "meta" }, timeAgo(game.played_at), ` · #${game.id}`,
        game.voided_at ? h("span", { class: "undone" }, " · undone") : [" · ", undo], " · ", again));
  }

  // The record form, filled with the game's players on their sides, in view.
  rematch(game) {
    this.form.rematch(game);
    const tab = this.view.querySelector("button[data-tab=record]");
    if (tab && tab.offsetParent !== null) tab.click(); // a phone shows one section at a time
    const record = this.view.querySelector("#record");
    record.scrollIntoView({ block: "start" });
    const next = record.querySelector(".points, .who-won button");
    if (next) next.focus({ preventScroll: true });
  }

  async undo(game) {
    const words = describe(game, this.roster);
    const sure = await confirmed({
      title: `Undo game #${game.id}?`,
      body: h("p", {}, `${words}. It will no longer count: the ratings are worked out again without it.`),
      confirm: "Undo game",
      danger: true,
    });
    if (!sure) return;
    const voided = await guarded(() => withKey(this.api.slug, "write", () =>
      this.api.send("DELETE", `/games/${game.id}`)));
    if (!voided) return;
    this.voidGame(voided);
    say(`Game #${game.id} undone.`, "info");
  }

  // ---------- changes, from this page or the event stream ----------

  // A game shows in the feed at once, from its own answer or event (with the names of the players it made, not
  // their keys); the standings and counts are read again.
  async addGame(game) {
    const keys = game.sides.flatMap((s) => s.players.map((p) => p.key));
    await this.roster.learn(keys, this.api);
    this.active.touched(keys);
    if (!this.games.some((g) => g.id === game.id)) {
      this.games = [game, ...this.games].sort((a, b) => b.id - a.id).slice(0, FEED);
      this.arrived.add(game.id);
    }
    this.roster.remember(game.sides.flatMap((s) => s.players.map((p) => p.key)));
    this.drawGames();
    this.refreshBoard();
    this.refreshSummary();
    this.me.refresh();
    guarded(() => this.moments.arrived(game));
  }

  voidGame(game) {
    this.games = this.games.map((g) => (g.id === game.id ? game : g));
    this.active.touched(game.sides.flatMap((s) => s.players.map((p) => p.key)));
    guarded(() => this.moments.load());
    this.drawGames();
    this.refreshBoard();
    this.refreshSummary();
    this.me.refresh();
  }

  async reload() {
    await Promise.all([this.loadSummary(), this.loadBoard(), this.loadGames(FEED), this.loadRoster(),
      this.openChallenges.load()]);
  }

  async loadRoster() {
    const players = await this.api.all("/leaderboard?by=hodge&limit=500&inactive=true");
    this.roster.replace(players);
    this.active.replace(players);
    this.drawGames(); // the names of players beyond the first page
    this.me.redraw();
    this.form.prefillMe();
  }

  eventHandlers() {
    const newer = (data) => {
      const fresh = data.version > this.version;
      this.version = Math.max(this.version, data.version || 0);
      return fresh;
    };
    return {
      hello: (data) => newer(data) && this.refreshAll(), // changes between the page's reads and the stream
      game: (data) => {
        newer(data);
        guarded(() => this.addGame(data.game));
      },
      void: (data) => {
        newer(data);
        this.voidGame(data.game);
      },
      player: (data) => {
        newer(data);
        if (data.action === "merged" || data.action === "erased") return this.refreshAll();
        this.refreshBoard();
        return this.refreshRoster();
      },
      challenge: (data) => {
        newer(data);
        this.openChallenges.changed(data);
      },
      refit: () => this.refreshAll(),
      season: () => guarded(() => this.lastSeason.load()),
      ladder: () => this.refreshAll(),
      reset: () => this.refreshAll(),
    };
  }
}

// A two-sided game's score, the winner's first: "21-12", or a match's games won and each game's points,
// "2-1 (11-7, 9-11, 11-5)"; null without one.
function scoreOf(game, order) {
  if (order.length !== 2 || order.some((s) => s.score === null || s.score === undefined)) return null;
  const total = `${order[0].score}-${order[1].score}`;
  if (!game.match) return total;
  const first = game.sides.indexOf(order[0]);
  return `${total} (${game.match.map((points) => `${points[first]}-${points[1 - first]}`).join(", ")})`;
}

// A game in words, for a question about it: "Ann & Cy beat Bob & Dee".
function describe(game, roster) {
  const order = [...game.sides].sort((x, y) => x.rank - y.rank);
  const team = (s) => s.players.map((p) => roster.name(p.key)).join(" & ");
  if (order.length === 2) return `${team(order[0])} ${order[0].rank === order[1].rank ? "drew with" : "beat"} ` +
    team(order[1]);
  return order.map((s) => `${s.rank}. ${team(s)}`).join(", ");
}

const cssId = (key) => Array.from(key, (c) => (/[A-Za-z0-9_-]/.test(c) ? c : `_${c.codePointAt(0)}`)).join("");

// On a phone one section shows at a time, chosen by these buttons (a larger screen shows them all and hides the
// buttons). The section shown is kept in the address (#record), so a bookmark opens it.
function sectionTabs(grid, sections) {
  const buttons = sections.map(([id, label]) => h("button", { type: "button", "aria-controls": id,
    "data-tab": id }, label));
  const show = (id) => {
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.tab === id));
    for (const s of grid.children) s.classList.toggle("shown", s.id === id);
  };
  for (const b of buttons) {
    b.addEventListener("click", () => {
      show(b.dataset.tab);
      history.replaceState(null, "", `#${b.dataset.tab}`);
    });
  }
  const wanted = location.hash.slice(1);
  show(sections.some(([id]) => id === wanted) ? wanted : sections[0][0]);
  return h("nav", { class: "tabs", "aria-label": "Sections of the ladder" }, buttons);
}

// Run `work` once, the first time `el` is on screen (scrolled to, or its section chosen on a phone).
function whenShown(el, work) {
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) {
      observer.disconnect();
      work();
    }
  });
  observer.observe(el);
}
