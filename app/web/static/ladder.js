// The ladder page: "me", standings, recording a game, the latest results and the most active players first; the
// mathematics (predictions, fair teams, cycles) lower down. It follows the ladder's event stream, so that a game
// recorded anywhere shows up here within moments, without a reload. Here: the layout, the tabs on a phone, and
// each change carried to the parts it touches (the standings and results are standings.js and results.js).
import { MostActive } from "./active.js";
import { LadderApi } from "./api.js";
import { OpenChallenges } from "./challenges.js";
import { count, debounce, fill, h, timeAgo } from "./dom.js";
import { follow } from "./live.js";
import { meBar } from "./me.js";
import { ladderHeader, ladderName, loadLadder, setTitle, showLive } from "./parts.js";
import { Roster } from "./picker.js";
import { Moments } from "./moments.js";
import { recordForm } from "./record.js";
import { FEED, Results } from "./results.js";
import { lastSeason, pastSeasons } from "./seasons.js";
import { PAGE, Standings, boardPath } from "./standings.js";
import { guarded } from "./ui.js";

const REFRESH_MS = 250; // a burst of changes causes one reload

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
    this.version = 0; // the ladder version the page shows
    this.standings = new Standings({ api, ladder: () => this.ladder, roster: this.roster, me: () => this.me.key,
      version: () => this.version, saw: (version) => this.saw(version),
      onChallenge: (c) => this.openChallenges.upsert(c) });
    this.refreshBoard = debounce(() => guarded(() => this.standings.load()), REFRESH_MS);
    this.refreshAll = debounce(() => guarded(() => this.reload()), REFRESH_MS);
    this.refreshRoster = debounce(() => guarded(() => this.loadRoster()), REFRESH_MS);
    this.refreshSummary = debounce(() => guarded(() => this.loadSummary()), REFRESH_MS);
    this.moments = new Moments(api, () => this.results.draw());
    this.results = new Results({ api, roster: this.roster, moments: this.moments,
      onVoided: (game) => this.voidGame(game), onRematch: (game) => this.rematch(game) });
    this.lastSeason = lastSeason(api);
    this.active = new MostActive(api, this.roster);
  }

  async start() {
    this.layout();
    await Promise.all([guarded(() => this.standings.load()), guarded(() => this.results.load())]);
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
    this.openChallenges = new OpenChallenges({ api: this.api,
      onPlayed: (game) => guarded(() => this.addGame(game)) });
    const board = this.standings;
    const sections = [
      h("section", { id: "standings", class: "panel", "aria-labelledby": "standings-title" },
        h("h2", { id: "standings-title" }, "Standings"), this.lastSeason.element,
        board.rankedBy, board.finder, board.box, board.options, pastSeasons(this.api, this.ladder)),
      h("section", { id: "record", class: "panel", "aria-labelledby": "record-title" },
        h("h2", { id: "record-title" }, "Record a game"), this.openChallenges.root,
        this.form = recordForm({ api: this.api, ladder: this.ladder, roster: this.roster, me: () => this.me.key,
          onRecorded: (game) => guarded(() => this.addGame(game)), onUndone: (game) => this.voidGame(game) })),
      h("section", { id: "results", class: "panel", "aria-labelledby": "results-title" },
        h("h2", { id: "results-title" }, "Latest results"), this.results.root, this.moments.feed, this.active.root),
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

  async loadSummary() {
    this.ladder = await this.api.get();
    this.drawSummary();
  }

  drawSummary() {
    const latest = this.results.games.find((g) => !g.voided_at);
    fill(this.summary, `${count(this.ladder.players, "player")} · ${count(this.ladder.games, "game")}`,
      latest ? [" · last game ", timeAgo(latest.played_at)] : null);
  }

  // "Me" was picked, changed or forgotten: the standings mark the row, the record form fills the player in.
  meChanged() {
    this.standings.redraw();
    this.form.prefillMe();
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

  // ---------- changes, from this page or the event stream ----------

  // A game shows in the feed at once, from its own answer or event (with the names of the players it made, not
  // their keys); the standings and counts are read again.
  async addGame(game) {
    const keys = game.sides.flatMap((s) => s.players.map((p) => p.key));
    await this.roster.learn(keys, this.api);
    this.active.touched(keys);
    this.results.add(game);
    this.refreshBoard();
    this.refreshSummary();
    this.me.refresh();
    guarded(() => this.moments.arrived(game));
  }

  voidGame(game) {
    this.results.voided(game);
    this.active.touched(game.sides.flatMap((s) => s.players.map((p) => p.key)));
    guarded(() => this.moments.load());
    this.results.draw();
    this.refreshBoard();
    this.refreshSummary();
    this.me.refresh();
  }

  async reload() {
    await Promise.all([this.loadSummary(), this.standings.load(), this.results.load(), this.loadRoster(),
      this.openChallenges.load()]);
  }

  async loadRoster() {
    const players = await this.api.all("/leaderboard?by=hodge&limit=500&inactive=true");
    this.roster.replace(players);
    this.active.replace(players);
    this.results.draw(); // the names of players beyond the first page
    this.me.redraw();
    this.form.prefillMe();
  }

  // A ladder version seen (a read of the standings, an event): whether it is newer than the one the page shows.
  saw(version) {
    const fresh = version > this.version;
    this.version = Math.max(this.version, version || 0);
    return fresh;
  }

  eventHandlers() {
    const newer = (data) => this.saw(data.version);
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
