// The ladder's admin page (/ladders/{slug}/admin, and /settings, its old address): players (rename, change key,
// merge, deactivate, erase, each asking to confirm), keys (create with a role, revoke, last used), settings and
// the export. Everything here needs an admin key of the ladder, asked for once and kept in this browser.
import { ApiError, LadderApi, request, savedKey } from "./api.js";
import { count, debounce, fill, h, profileHref, shortDate, timeAgo } from "./dom.js";
import { follow } from "./live.js";
import { keyShown, ladderHeader, ladderName, loadLadder, playerName, setTitle, showLive } from "./parts.js";
import { picker, Roster } from "./picker.js";
import { askKey, ask, clearMessages, confirmed, guarded, say, withKey } from "./ui.js";
import { webhooksPanel } from "./webhooks.js";

const ROLES = [
  ["write", "write: records and undoes games"],
  ["read", "read: reads a private ladder"],
  ["admin", "admin: also manages players, keys and settings"],
];
const SETTINGS = [
  ["private", "Private: reading the ladder needs one of its keys"],
  ["auto_create_players", "Create players when a game names someone new"],
  ["auto_refit", "Refit the ratings in the background as the ladder grows"],
  ["case_insensitive_keys", "Player keys ignore case (“Ann” is “ann”)"],
];
// What the ladder plays (its `play`): the record form offers only these, and the server refuses the rest.
const KINDS = [
  ["singles", "Singles"],
  ["doubles", "Doubles (and other team games of two sides)"],
  ["free_for_all", "Free-for-all (three sides or more)"],
  ["draws", "Draws"],
];
const POINTS = [["", "any score"], ["11", "11"], ["21", "21"]];
const BEST_OF = [["1", "one game"], ["3", "best of 3"], ["5", "best of 5"]];
const SEASONS = [["", "never (closed by hand)"], ["month", "every month"], ["quarter", "every quarter"]];

// A labelled <select> of [value, text] choices with `value` chosen.
function choice(id, label, choices, value) {
  const select = h("select", { id }, choices.map(([v, text]) => h("option", { value: v, selected: v === value },
    text)));
  return [h("div", { class: "field" }, h("label", { for: id }, label), select), select];
}

export async function adminView(view, slug, section) {
  const api = new LadderApi(slug);
  const ladder = await loadLadder(api);
  setTitle("Admin", ladderName(ladder));
  ladderHeader(ladder);
  await new AdminPage(view, api, ladder).start(section);
}

class AdminPage {
  constructor(view, api, ladder) {
    this.view = view;
    this.api = api;
    this.ladder = ladder;
    this.roster = new Roster();
    this.refreshPlayers = debounce(() => guarded(() => this.loadPlayers()), 250);
  }

  async start(section) {
    this.gate = h("div", { id: "gate" });
    this.body = h("div", { id: "admin", hidden: true });
    fill(this.view, h("p", { class: "back" }, h("a", { href: `/ladders/${encodeURIComponent(this.api.slug)}` },
      `← ${ladderName(this.ladder)}`)), h("h1", {}, "Admin"), this.gate, this.body);
    await this.open(savedKey(this.api.slug) ? "" : null);
    performance.mark("melo:content");
    if (section && !this.body.hidden) document.getElementById(section).scrollIntoView();
  }

  // The page opens once the saved key proves to be an admin key (listing the keys needs one); until then it says
  // what is needed. `error`: null when no key is saved yet.
  async open(error) {
    if (error === null) return this.showGate("This page needs an admin key of the ladder.");
    try {
      await this.loadKeys();
    } catch (err) {
      if (!(err instanceof ApiError && err.aboutKey)) throw err;
      return this.showGate(err.message);
    }
    fill(this.gate);
    this.body.hidden = false;
    this.players = h("div", { id: "players" });
    fill(this.body,
      h("section", { class: "panel", "aria-labelledby": "players-title" }, h("h2", { id: "players-title" }, "Players"),
        this.players),
      h("section", { class: "panel", id: "keys", "aria-labelledby": "keys-title" },
        h("h2", { id: "keys-title" }, "Keys"), this.keyList, this.newKeyForm()),
      h("section", { class: "panel", id: "settings", "aria-labelledby": "settings-title" },
        h("h2", { id: "settings-title" }, "Settings"), this.settingsForm()),
      h("section", { class: "panel", id: "season", "aria-labelledby": "season-title" },
        h("h2", { id: "season-title" }, "Season"), this.seasonForm()),
      webhooksPanel(this.api),
      h("section", { class: "panel", id: "export", "aria-labelledby": "export-title" },
        h("h2", { id: "export-title" }, "Export"), this.exportButton()));
    await this.loadPlayers();
    follow(this.api.slug, { player: this.refreshPlayers, game: this.refreshPlayers, reset: this.refreshPlayers },
      showLive);
    return undefined;
  }

  showGate(message) {
    const enter = h("button", { type: "button", id: "enter-admin-key" }, "Enter the admin key");
    enter.addEventListener("click", async () => {
      if (await askKey(this.api.slug, "admin")) await guarded(() => this.open(""));
    });
    fill(this.gate, h("p", { class: "panel" }, message), enter);
  }

  // ---------- players ----------

  // The players by name. A refresh (after a change here, or from the event stream) updates each player's line in
  // place, so that a panel in use stays open with what was typed in it.
  async loadPlayers() {
    const players = await this.api.all("/leaderboard?by=hodge&limit=500&inactive=true");
    this.roster.replace(players);
    players.sort((a, b) => playerName(a).localeCompare(playerName(b)));
    this.known = new Map(players.map((p) => [p.key, p]));
    if (!this.list) this.drawPlayerList();
    const items = new Map([...this.list.children].map((li) => [li.dataset.key, li]));
    const lis = players.map((p) => this.describe(items.get(p.key) || this.playerItem(p.key), p));
    const same = lis.length === this.list.children.length && lis.every((li, n) => this.list.children[n] === li);
    if (!same) this.list.replaceChildren(...lis);
    this.none.hidden = players.length > 0;
    this.filter();
  }

  drawPlayerList() {
    this.finder = h("input", { id: "player-filter", type: "search", autocomplete: "off" });
    this.finder.addEventListener("input", () => this.filter());
    this.list = h("ul", { class: "admin-players", id: "player-list" });
    this.none = h("p", { class: "muted" }, "No players yet.");
    fill(this.players, h("div", { class: "field" }, h("label", { for: "player-filter" }, "Find a player"), this.finder),
      this.list, this.none);
  }

  filter() {
    const wanted = this.finder.value.trim().toLocaleLowerCase();
    for (const li of this.list.children) li.hidden = wanted !== "" && !li.dataset.search.includes(wanted);
  }

  // A player's line, with their actions unfolded on demand (a ladder may have thousands of players).
  playerItem(key) {
    const details = h("details", {}, h("summary", {}));
    details.addEventListener("toggle", () => {
      if (details.open && !details.querySelector(".player-actions")) details.append(this.playerActions(key));
    });
    return h("li", { "data-key": key }, details);
  }

  describe(li, p) {
    li.dataset.search = `${playerName(p)} ${p.key}`.toLocaleLowerCase();
    fill(li.querySelector("summary"), h("b", {}, playerName(p)),
      h("span", { class: "muted" }, ` ${[keyShown(p), count(p.games, "game"), !p.active && "inactive"]
        .filter(Boolean).join(" · ")}`));
    const toggle = li.querySelector(".active-toggle");
    if (toggle) toggle.textContent = p.active ? "Deactivate…" : "Reactivate";
    return li;
  }

  // The actions read the player as last loaded when they are used, so that a refresh never leaves them stale.
  playerActions(key) {
    const id = (what) => `${what}-${key}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const now = () => this.known.get(key);
    const who = () => playerName(now());
    const name = h("input", { id: id("name"), value: now().name || "", maxlength: "200", autocomplete: "off" });
    const newKey = h("input", { id: id("key"), value: key, maxlength: "128", autocomplete: "off",
      spellcheck: "false" });
    const into = picker({ id: id("into"), label: "Merge into", roster: this.roster, allowNew: false,
      exclude: () => new Set([key]) });
    const button = (label, work, cls = "secondary") => {
      const b = h("button", { type: "button", class: cls }, label);
      b.addEventListener("click", () => guarded(work));
      return b;
    };
    const toggle = button(now().active ? "Deactivate…" : "Reactivate", async () => {
      if (!now().active) return this.change(key, { active: true }, `${who()} is active again.`);
      if (await confirmed({ title: `Deactivate ${who()}?`, confirm: "Deactivate",
        body: h("p", {}, `${who()} leaves the standings; their games and rating are kept, and they can be ` +
          "reactivated.") })) {
        await this.change(key, { active: false }, `${who()} is inactive.`);
      }
      return undefined;
    });
    toggle.classList.add("active-toggle");
    return h("div", { class: "player-actions" },
      h("div", { class: "inline-form" }, h("div", { class: "field" }, h("label", { for: name.id }, "Name"), name),
        button("Rename", () => this.change(key, { name: name.value.trim() || null },
          `Renamed to ${name.value.trim() || key}.`))),
      h("div", { class: "inline-form" }, h("div", { class: "field" }, h("label", { for: newKey.id }, "Key"), newKey),
        button("Change key", async () => {
          const to = newKey.value.trim();
          if (!to || to === key) return;
          if (await confirmed({ title: `Change ${who()}'s key to “${to}”?`, confirm: "Change key",
            body: h("p", {}, `Their games will name “${to}”; “${key}” stays an alias that leads to them.`) })) {
            await this.change(key, { key: to }, `${who()}'s key is now ${to}.`);
          }
        })),
      h("div", { class: "inline-form" }, into.root, button("Merge…", async () => {
        const target = into.key;
        if (!target) return say("Choose the player to merge into.");
        const them = this.roster.name(target);
        if (await confirmed({ title: `Merge ${who()} into ${them}?`, confirm: "Merge", danger: true,
          body: h("p", {}, `Every game of ${who()} becomes a game of ${them}, and ${who()} is gone. This cannot be ` +
            "undone.") })) {
          const done = `${who()} is merged into ${them}.`;
          await this.act("POST", `${this.api.playerPath(key)}/merge`, { into: target }, done);
        }
        return undefined;
      })),
      h("div", { class: "row-actions" }, toggle, button("Erase…", () => this.erase(now()), "danger")),
      h("p", {}, h("a", { href: profileHref(this.api.slug, key) }, `${who()}'s page`)));
  }

  change(key, patch, done) {
    return this.act("PATCH", this.api.playerPath(key), patch, done);
  }

  async act(method, path, body, done) {
    clearMessages();
    const answer = await withKey(this.api.slug, "admin", () => this.api.send(method, path, body));
    if (!answer) return;
    say(done, "info");
    await this.loadPlayers();
  }

  // Erasing is for a person who asks to be forgotten: their name goes, their key becomes a pseudonym. The key must
  // be typed to confirm.
  async erase(p) {
    const field = h("div", { class: "field" }, h("label", { for: "erase-confirm" }, `Type ${p.key} to confirm`),
      h("input", { id: "erase-confirm", name: "confirm", required: true, autocomplete: "off", spellcheck: "false",
        pattern: p.key.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&") }));
    const values = await ask({ title: `Erase ${playerName(p)}?`, confirm: "Erase", danger: true, fields: field,
      body: h("p", {}, "Their name is removed and their key replaced by a pseudonym everywhere; the games and " +
        "everyone's ratings stay. This cannot be undone.") });
    if (values) await this.act("DELETE", this.api.playerPath(p.key), undefined, `${playerName(p)} is erased.`);
  }

  // ---------- keys ----------

  async loadKeys() {
    const keys = await this.api.all("/keys?limit=500");
    this.keyList = this.keyList || h("div", { id: "key-list" });
    const when = (moment) => (moment ? timeAgo(moment) : "never");
    // On a phone the dates a key was made and expires are left out: the rest fits the width.
    const wide = { class: "wide" };
    fill(this.keyList, h("div", { class: "scroll" }, h("table", { id: "key-table", class: "compact" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Role"),
        h("th", { scope: "col", ...wide }, "Created"), h("th", { scope: "col" }, "Last used"),
        h("th", { scope: "col", ...wide }, "Expires"), h("th", { scope: "col" }, h("span", { class: "sr-only" },
          "Revoke")))),
      h("tbody", {}, keys.map((k) => h("tr", { "data-id": k.id, class: k.revoked_at ? "revoked" : "" },
        h("td", { class: "key-name" }, k.name), h("td", {}, k.role),
        h("td", wide, shortDate(new Date(k.created_at))), h("td", {}, when(k.last_used_at)),
        h("td", wide, k.expires_at ? shortDate(new Date(k.expires_at)) : "never"),
        h("td", {}, k.revoked_at ? "revoked" : this.revokeButton(k))))))));
  }

  revokeButton(k) {
    const revoke = h("button", { type: "button", class: "secondary", "aria-label": `Revoke ${k.name}` }, "Revoke");
    revoke.addEventListener("click", async () => {
      if (!(await confirmed({ title: `Revoke the key “${k.name}”?`, confirm: "Revoke", danger: true,
        body: h("p", {}, "Its next request will be refused. This cannot be undone.") }))) return;
      clearMessages();
      if (await guarded(() => this.api.send("DELETE", `/keys/${k.id}`))) await guarded(() => this.loadKeys());
    });
    return revoke;
  }

  newKeyForm() {
    const name = h("input", { id: "key-name", required: true, maxlength: "200", autocomplete: "off" });
    const role = h("select", { id: "key-role" }, ROLES.map(([value, label]) => h("option", { value }, label)));
    const expires = h("input", { id: "key-expires", type: "date" });
    const shown = h("div", { id: "new-key-box", "aria-live": "polite" });
    const form = h("form", { id: "new-key", class: "stack" }, h("h3", {}, "New key"),
      h("div", { class: "field" }, h("label", { for: "key-name" }, "Who uses it"), name),
      h("div", { class: "field" }, h("label", { for: "key-role" }, "Role"), role),
      h("div", { class: "field" }, h("label", { for: "key-expires" }, "Expires (optional)"), expires),
      h("button", { type: "submit", id: "create-key" }, "Create key"), shown);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearMessages();
      const body = { name: name.value.trim(), role: role.value };
      if (expires.value) body.expires_at = `${expires.value}T00:00:00Z`;
      const created = await guarded(() => this.api.send("POST", "/keys", body));
      if (!created) return;
      fill(shown, h("p", {}, `Key “${created.name}” (${created.role}), shown only now: `,
        h("code", { id: "created-key" }, created.key)));
      await guarded(() => this.loadKeys());
    });
    return form;
  }

  // ---------- settings and export ----------

  settingsForm() {
    const name = h("input", { id: "ladder-name", value: this.ladder.name || "", maxlength: "200",
      autocomplete: "off" });
    const boxes = SETTINGS.map(([field, label]) => h("label", { class: "check" },
      h("input", { type: "checkbox", id: `setting-${field}`, name: field, checked: Boolean(this.ladder[field]) }),
      ` ${label}`));
    const idle = h("input", { id: "inactive-after-days", type: "number", min: "1", max: "36500", step: "1",
      inputmode: "numeric", value: this.ladder.inactive_after_days ?? "", placeholder: "never" });
    const play = { singles: true, doubles: true, free_for_all: true, draws: true, points: null, best_of: 1,
      ...this.ladder.play };
    const kinds = KINDS.map(([kind, label]) => h("label", { class: "check" },
      h("input", { type: "checkbox", id: `play-${kind}`, checked: play[kind] !== false }), ` ${label}`));
    const [pointsField, points] = choice("play-points", "Games are played to", POINTS, String(play.points ?? ""));
    const [bestOfField, bestOf] = choice("play-best-of", "A result is", BEST_OF, String(play.best_of ?? 1));
    const [seasonField, seasonEvery] = choice("season-every", "Close a season by itself", SEASONS,
      this.ladder.season_every ?? "");
    const form = h("form", { id: "settings-form", class: "stack" },
      h("div", { class: "field" }, h("label", { for: "ladder-name" }, "Name"), name), boxes,
      h("div", { class: "field" }, h("label", { for: "inactive-after-days" },
        "Leave players off the standings after this many days without a game (empty: never)"), idle),
      h("fieldset", { id: "play-settings" }, h("legend", {}, "What this ladder plays"), kinds, pointsField,
        bestOfField),
      seasonField,
      h("button", { type: "submit", id: "save-settings" }, "Save settings"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearMessages();
      const patch = { name: name.value.trim() || null };
      for (const [field] of SETTINGS) patch[field] = form.querySelector(`#setting-${field}`).checked;
      patch.inactive_after_days = idle.value === "" ? null : Number(idle.value);
      patch.play = Object.fromEntries(KINDS.map(([kind]) => [kind, form.querySelector(`#play-${kind}`).checked]));
      patch.play.points = points.value === "" ? null : Number(points.value);
      patch.play.best_of = Number(bestOf.value);
      patch.season_every = seasonEvery.value || null;
      const changed = await guarded(() => this.api.send("PATCH", "", patch));
      if (!changed) return;
      this.ladder = changed;
      ladderHeader(changed);
      setTitle("Admin", ladderName(changed));
      say("Settings saved.", "info");
    });
    return form;
  }

  // Close the season: its standings are archived under a name (the ladder page lists past seasons).
  seasonForm() {
    const name = h("input", { id: "season-name", maxlength: "100", autocomplete: "off", required: true,
      placeholder: "e.g. 2026 spring" });
    const pull = h("select", { id: "season-pull" },
      ...[["0", "carry on as they are"], ["0.25", "pulled back a quarter"], ["0.5", "pulled back half"],
        ["1", "start afresh"]].map(([value, text]) => h("option", { value }, text)));
    const form = h("form", { id: "season-form", class: "inline-form" },
      h("div", { class: "field" }, h("label", { for: "season-name" }, "Name"), name),
      h("div", { class: "field" }, h("label", { for: "season-pull" }, "Next season's ratings"), pull),
      h("button", { type: "submit", id: "close-season" }, "Close the season"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearMessages();
      const part = Number(pull.value);
      const title = `Close the season “${name.value.trim()}”?`;
      const ratings = part === 0 ? "Ratings carry on as they are"
        : part === 1 ? "Then every rating starts afresh"
        : `Then every rating moves ${part * 100}% of the way back to where its player started`;
      const body = ["Today's standings are archived under this name, with each player's wins, draws and losses " +
        `since the last season closed. ${ratings}; the next season starts with the next game.`];
      if (!(await confirmed({ title, body, confirm: "Close the season" }))) return;
      const closed = await guarded(() => this.api.send("POST", "/seasons", { name: name.value.trim(), pull: part }));
      if (!closed) return;
      name.value = "";
      const counted = `${count(closed.games, "game")}, ${count(closed.players, "player")}`;
      say(`Season “${closed.name}” closed: ${counted}.`, "info");
    });
    return h("div", {}, h("p", { class: "muted" }, "Closing a season keeps its final standings; the ladder page " +
      "shows them under Past seasons."), form);
  }

  // The export is read with the key (a private ladder needs it), then handed to the browser as a download.
  exportButton() {
    const button = h("button", { type: "button", id: "download-export" }, "Download the export");
    button.addEventListener("click", () => guarded(async () => {
      const response = await request("GET", `${this.api.base}/export`, { key: this.api.key,
        accept: "application/x-ndjson" });
      const url = URL.createObjectURL(await response.blob());
      const link = h("a", { href: url, download: `${this.api.slug}.ndjson`, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    }));
    return h("div", {}, h("p", { class: "muted" }, "Every player and game as NDJSON, which ",
      h("code", {}, "melo import"), " restores into a new ladder (keys are not exported)."), button);
  }
}
