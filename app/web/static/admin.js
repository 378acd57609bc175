// The ladder's admin page (/ladders/{slug}/admin, and /settings, its old address): players (rename, change key,
// merge, deactivate, erase, each asking to confirm), keys (create with a role, revoke, last used), settings and
// the export. Everything here needs an admin key of the ladder, asked for once and kept in this browser.
import { ApiError, LadderApi, request, savedKey } from "./api.js";
import { debounce, fill, h, profileHref, shortDate, timeAgo } from "./dom.js";
import { follow } from "./live.js";
import { ladderHeader, ladderName, loadLadder, playerName, setTitle, showLive } from "./parts.js";
import { picker, Roster } from "./picker.js";
import { askKey, ask, clearMessages, confirmed, guarded, say, withKey } from "./ui.js";

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

  async loadPlayers() {
    const players = await this.api.all("/leaderboard?by=hodge&limit=500&inactive=true");
    this.roster.add(players);
    players.sort((a, b) => playerName(a).localeCompare(playerName(b)));
    const filter = h("input", { id: "player-filter", type: "search", autocomplete: "off" });
    const list = h("ul", { class: "admin-players", id: "player-list" }, players.map((p) => this.playerItem(p)));
    filter.addEventListener("input", () => {
      const wanted = filter.value.trim().toLocaleLowerCase();
      for (const li of list.children) li.hidden = wanted !== "" && !li.dataset.search.includes(wanted);
    });
    fill(this.players, h("div", { class: "field" }, h("label", { for: "player-filter" }, "Find a player"), filter),
      players.length ? list : h("p", { class: "muted" }, "No players yet."));
  }

  // A player, with their actions unfolded on demand (a ladder may have thousands of players).
  playerItem(p) {
    const details = h("details", {}, h("summary", {}, h("b", {}, playerName(p)),
      h("span", { class: "muted" }, ` ${p.key} · ${p.games} games${p.active ? "" : " · inactive"}`)));
    details.addEventListener("toggle", () => {
      if (details.open && details.children.length === 1) details.append(this.playerActions(p));
    });
    return h("li", { "data-key": p.key, "data-search": `${playerName(p)} ${p.key}`.toLocaleLowerCase() }, details);
  }

  playerActions(p) {
    const id = (what) => `${what}-${p.key}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const name = h("input", { id: id("name"), value: p.name || "", maxlength: "200", autocomplete: "off" });
    const key = h("input", { id: id("key"), value: p.key, maxlength: "128", autocomplete: "off", spellcheck: "false" });
    const into = picker({ id: id("into"), label: "Merge into", roster: this.roster, allowNew: false,
      exclude: () => new Set([p.key]) });
    const button = (label, work, cls = "secondary") => {
      const b = h("button", { type: "button", class: cls }, label);
      b.addEventListener("click", () => guarded(work));
      return b;
    };
    const who = playerName(p);
    return h("div", { class: "player-actions" },
      h("div", { class: "inline-form" }, h("div", { class: "field" }, h("label", { for: name.id }, "Name"), name),
        button("Rename", () => this.change(p, { name: name.value.trim() || null }, `Renamed to ${name.value.trim()}.`))),
      h("div", { class: "inline-form" }, h("div", { class: "field" }, h("label", { for: key.id }, "Key"), key),
        button("Change key", async () => {
          const to = key.value.trim();
          if (!to || to === p.key) return;
          if (await confirmed({ title: `Change ${who}'s key to “${to}”?`, confirm: "Change key",
            body: h("p", {}, `Their games will name “${to}”; “${p.key}” stays an alias that leads to them.`) })) {
            await this.change(p, { key: to }, `${who}'s key is now ${to}.`);
          }
        })),
      h("div", { class: "inline-form" }, into.root, button("Merge…", async () => {
        const target = into.key;
        if (!target) return say("Choose the player to merge into.");
        if (await confirmed({ title: `Merge ${who} into ${this.roster.name(target)}?`, confirm: "Merge", danger: true,
          body: h("p", {}, `Every game of ${who} becomes a game of ${this.roster.name(target)}, and ${who} is gone. ` +
            "This cannot be undone.") })) {
          await this.act("POST", `${this.api.playerPath(p.key)}/merge`, { into: target },
            `${who} is merged into ${this.roster.name(target)}.`);
        }
      })),
      h("div", { class: "row-actions" },
        p.active ? button("Deactivate…", async () => {
          if (await confirmed({ title: `Deactivate ${who}?`, confirm: "Deactivate",
            body: h("p", {}, `${who} leaves the standings; their games and rating are kept, and they can be ` +
              "reactivated.") })) {
            await this.change(p, { active: false }, `${who} is inactive.`);
          }
        }) : button("Reactivate", () => this.change(p, { active: true }, `${who} is active again.`)),
        button("Erase…", () => this.erase(p), "danger")),
      h("p", {}, h("a", { href: profileHref(this.api.slug, p.key) }, `${who}'s page`)));
  }

  change(p, patch, done) {
    return this.act("PATCH", this.api.playerPath(p.key), patch, done);
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
    fill(this.keyList, h("table", { id: "key-table", class: "compact" },
      h("thead", {}, h("tr", {}, ["Name", "Role", "Created", "Last used", "Expires", ""].map((t) =>
        h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Revoke"))))),
      h("tbody", {}, keys.map((k) => h("tr", { "data-id": k.id, class: k.revoked_at ? "revoked" : "" },
        h("td", {}, k.name), h("td", {}, k.role), h("td", {}, shortDate(new Date(k.created_at))),
        h("td", {}, when(k.last_used_at)), h("td", {}, k.expires_at ? shortDate(new Date(k.expires_at)) : "never"),
        h("td", {}, k.revoked_at ? "revoked" : this.revokeButton(k)))))));
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
    const name = h("input", { id: "ladder-name", value: this.ladder.name || "", maxlength: "200", autocomplete: "off" });
    const boxes = SETTINGS.map(([field, label]) => h("label", { class: "check" },
      h("input", { type: "checkbox", id: `setting-${field}`, name: field, checked: Boolean(this.ladder[field]) }),
      ` ${label}`));
    const form = h("form", { id: "settings-form", class: "stack" },
      h("div", { class: "field" }, h("label", { for: "ladder-name" }, "Name"), name), boxes,
      h("button", { type: "submit", id: "save-settings" }, "Save settings"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearMessages();
      const patch = { name: name.value.trim() || null };
      for (const [field] of SETTINGS) patch[field] = form.querySelector(`#setting-${field}`).checked;
      const changed = await guarded(() => this.api.send("PATCH", "", patch));
      if (!changed) return;
      this.ladder = changed;
      ladderHeader(changed);
      setTitle("Admin", ladderName(changed));
      say("Settings saved.", "info");
    });
    return form;
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
    return h("div", {}, h("p", { class: "muted" }, "Every player and game as NDJSON, which ", h("code", {}, "melo import"),
      " restores into a new ladder (keys are not exported)."), button);
  }
}
