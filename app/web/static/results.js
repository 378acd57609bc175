// The latest results on the ladder page: each game with its players' Elo changes, its score and its moments, newest
// first; a game just arrived flashes once. Each has an Undo (asked first, then sent with the write key) and a
// Rematch.
import { changeClass, fill, h, profileHref, signed, timeAgo } from "./dom.js";
import { confirmed, guarded, say, withKey } from "./ui.js";

export const FEED = 12; // results listed

// The feed, as `root`. `moments` shows each game's moments beside it; `onVoided(game)` follows an undo sent from
// here, `onRematch(game)` a press of Rematch.
export class Results {
  constructor({ api, roster, moments, onVoided, onRematch }) {
    this.api = api;
    this.roster = roster; // the names
    this.moments = moments;
    this.onVoided = onVoided;
    this.onRematch = onRematch;
    this.games = []; // the latest games, newest first
    this.arrived = new Set(); // games added since the feed was last drawn: they flash once
    this.root = h("ul", { id: "feed", class: "feed" });
  }

  // The latest games.
  async load() {
    const page = await this.api.get(`/games?limit=${FEED}`);
    // A game the stream brought while this read was under way is newer than its answer: it stays.
    const newest = Math.max(0, ...page.items.map((g) => g.id));
    const arrived = this.games.filter((g) => g.id > newest);
    this.games = [...arrived, ...page.items].sort((a, b) => b.id - a.id);
    this.roster.remember(this.games.flatMap((g) => g.sides.flatMap((s) => s.players.map((p) => p.key))));
    this.draw();
  }

  // A game recorded here or brought by the stream, unless it is listed already.
  add(game) {
    if (!this.games.some((g) => g.id === game.id)) {
      this.games = [game, ...this.games].sort((a, b) => b.id - a.id).slice(0, FEED);
      this.arrived.add(game.id);
    }
    this.roster.remember(game.sides.flatMap((s) => s.players.map((p) => p.key)));
    this.draw();
  }

  // A game undone, in place of the one listed.
  voided(game) {
    this.games = this.games.map((g) => (g.id === game.id ? game : g));
  }

  draw() {
    const shown = this.games.slice(0, FEED);
    fill(this.root, shown.length ? shown.map((g) => this.item(g)) : h("li", { class: "muted" }, "No games yet."));
    this.arrived.clear();
  }

  item(game) {
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
    again.addEventListener("click", () => this.onRematch(game));
    const classes = ["game", game.voided_at && "voided", this.arrived.has(game.id) && "fresh"];
    return h("li", { class: classes, "data-id": game.id },
      h("p", { class: "line" }, line, score ? [" ", h("span", { class: "score" }, score)] : null),
      game.voided_at ? null : this.moments.beside(game.id),
      h("p", { class: "meta" }, timeAgo(game.played_at), ` · #${game.id}`,
        game.voided_at ? h("span", { class: "undone" }, " · undone") : [" · ", undo], " · ", again));
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
    this.onVoided(voided);
    say(`Game #${game.id} undone.`, "info");
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
