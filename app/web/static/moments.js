// Moments on the ladder page: what the latest games are remembered for (a first win, an upset, a streak, a new #1,
// the week's biggest rise), shown beside their game in the results, as a short feed, and as a note when a new one
// arrives while the page is open. Read from GET …/moments; a game that arrives asks for the moments since the
// newest game the page has seen.
import { fill, h, timeAgo } from "./dom.js";

const READ = 50; // moments read at first: those of the games the results list shows, and the feed's
const FEED = 5; // moments in the feed
const NOTE_MS = 8000;
const ICONS = { first_win: "🎉", upset: "⚡", streak: "🔥", new_leader: "👑", movers: "📈" };

export class Moments {
  // `changed()` is called when the moments of shown games change (the results list draws them again).
  constructor(api, changed) {
    this.api = api;
    this.changed = changed;
    this.byGame = new Map(); // game number -> its moments
    this.latest = []; // newest first
    this.seen = 0; // the newest game whose moments are known
    this.list = h("ul", { id: "moments", class: "moments" });
    this.feed = h("div", { id: "moments-box" }, h("h3", {}, "Moments"), this.list);
    this.note = h("div", { id: "moment-note", class: "moment-note", role: "status", "aria-live": "polite" });
    document.getElementById("moment-note")?.remove(); // the previous ladder page's
    document.querySelector(".notices").prepend(this.note); // above the toast
  }

  async load() {
    const page = await this.api.get(`/moments?limit=${READ}`);
    this.byGame.clear();
    this.latest = [];
    this.add(page.items);
  }

  // A game arrived: the moments since the newest game already seen, and the game before it (the week's rise it
  // closed belongs to that one).
  async arrived(game) {
    if (game.id <= this.seen) return;
    const since = Math.max(0, Math.min(this.seen, game.id - 1) - 1);
    this.seen = game.id;
    const page = await this.api.get(`/moments?since=${since}&limit=20`);
    const fresh = this.add(page.items);
    if (fresh.length) this.tell(fresh);
  }

  // Moments newest first; those not known yet.
  add(items) {
    const fresh = [];
    for (const m of [...items].reverse()) {
      const known = this.byGame.get(m.game) || [];
      if (known.some((k) => k.kind === m.kind)) continue;
      this.byGame.set(m.game, [...known, m]);
      this.latest.unshift(m);
      fresh.unshift(m);
      this.seen = Math.max(this.seen, m.game);
    }
    this.latest.sort((a, b) => b.game - a.game);
    this.draw();
    if (fresh.length) this.changed();
    return fresh;
  }

  draw() {
    const shown = this.latest.slice(0, FEED);
    fill(this.list, shown.length ? shown.map((m) => h("li", { class: ["moment", m.kind], "data-game": m.game },
      chip(m), h("span", { class: "muted" }, " · ", timeAgo(m.played_at), ` · #${m.game}`)))
      : h("li", { class: "muted" }, "Nothing to tell yet: first wins, upsets, streaks and new leaders show here."));
  }

  // The moments of a game, for its line in the results.
  beside(gameId) {
    const found = this.byGame.get(gameId);
    return found ? h("p", { class: "moments-line" }, found.map((m) => chip(m))) : null;
  }

  tell(fresh) {
    fill(this.note, h("p", {}, fresh.map((m, n) => [n ? " · " : "", `${ICONS[m.kind] || ""} ${m.text}`])));
    this.note.classList.add("shown");
    clearTimeout(this.hide);
    this.hide = setTimeout(() => this.note.classList.remove("shown"), NOTE_MS);
  }
}

function chip(m) {
  return h("span", { class: ["moment-chip", m.kind], "data-kind": m.kind }, `${ICONS[m.kind] || ""} ${m.text}`);
}
