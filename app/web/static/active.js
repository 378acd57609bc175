// "Most active" on the ladder page: the players with the most games as the ladder counts them (each player's
// `games`, as the standings show them), not a count over the latest games, which misses the games before them. The
// players of a game recorded or undone are read again, a burst of them at once.
import { count, debounce, fill, h, profileHref, timeAgo } from "./dom.js";
import { guarded } from "./ui.js";

const SHOWN = 5;
const REFRESH_MS = 250;

export class MostActive {
  constructor(api, roster) {
    this.api = api;
    this.roster = roster; // the names
    this.players = null; // key -> the player as the API shows them; null until every player is read
    this.changed = new Set();
    this.root = h("div", { id: "active-box" });
    this.readChanged = debounce(() => guarded(() => this.read()), REFRESH_MS);
  }

  // Every player of the ladder, as a leaderboard of them all shows them.
  replace(players) {
    this.players = new Map(players.map((p) => [p.key, p]));
    this.draw();
  }

  // The players of a game that arrived or was undone: their counts moved.
  touched(keys) {
    keys.forEach((key) => this.changed.add(key));
    this.readChanged();
  }

  async read() {
    const keys = [...this.changed];
    this.changed.clear();
    const read = await Promise.all(keys.map((key) => this.api.get(this.api.playerPath(key)).catch(() => null)));
    if (!this.players) return; // the whole list, read meanwhile, has them
    for (const p of read.filter(Boolean)) this.players.set(p.key, p);
    this.draw();
  }

  draw() {
    const top = [...this.players.values()].filter((p) => p.games && !p.inactive_reason)
      .sort((a, b) => b.games - a.games || (b.last_played_at || "").localeCompare(a.last_played_at || ""))
      .slice(0, SHOWN);
    if (!top.length) return fill(this.root);
    return fill(this.root, h("h3", {}, "Most active"), h("p", { class: "muted" }, "Most games on the ladder"),
      h("ol", { id: "active", class: "active" }, top.map((p) => h("li", { "data-key": p.key },
        h("a", { href: profileHref(this.api.slug, p.key) }, this.roster.name(p.key)),
        h("span", { class: "muted" }, ` ${count(p.games, "game")}, last `, timeAgo(p.last_played_at))))));
  }
}
