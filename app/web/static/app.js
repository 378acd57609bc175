// The ladder front-end: plain DOM and SVG over the public API (/v1/...). No build step, no dependencies.
"use strict";

const PROVISIONAL_WHY =
  "Not yet comparable: this player's results do not pin their rating down yet " +
  "(too few results against enough different opponents, mathematics §10).";

// ---------- small helpers ----------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  for (const child of children.flat()) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

class ApiError extends Error {}

// Every error the API returns is RFC 9457 problem+json: show its detail and the fields it names, never raw JSON.
async function api(method, path, body, key) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers["Authorization"] = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError("The server cannot be reached. Check your connection and try again.");
  }
  if (response.ok) return response.json();
  let message = `${response.status} ${response.statusText}`;
  try {
    const problem = await response.json();
    message = problem.detail || problem.title || message;
    if (response.status === 401) message = "This needs the ladder's write key: enter it under “Record a game”.";
    if (response.status === 403 && /not a key of this ladder/.test(message)) {
      message = "That write key is not this ladder's. Check it and save it again.";
    }
  } catch (err) { /* not JSON: keep the status line */ }
  const error = new ApiError(message);
  error.status = response.status;
  throw error;
}

// Every item of a paged list (items, next_cursor), page after page.
async function allPages(path, key) {
  const items = [];
  let cursor = null;
  do {
    const join = path.includes("?") ? "&" : "?";
    const page = await api("GET", cursor === null ? path : `${path}${join}cursor=${encodeURIComponent(cursor)}`, undefined, key);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return items;
}

function say(message, kind = "error") {
  const box = document.getElementById("messages");
  box.replaceChildren(h("div", { class: kind }, message));
}

function clearMessages() {
  document.getElementById("messages").replaceChildren();
}

async function guarded(work) {
  try {
    return await work();
  } catch (err) {
    say(err instanceof ApiError ? err.message : `Something went wrong: ${err.message}`);
    return undefined;
  }
}

const fmt = (x, digits = 0) => Number(x).toFixed(digits);
// A signed number as shown: "+12", "−3.5", and "0" for whatever rounds to nothing (no "+0" or "−0").
const signed = (x, digits = 0) => {
  if (x == null) return "–";
  const shown = Number(Number(x).toFixed(digits));
  return shown === 0 ? "0" : `${shown > 0 ? "+" : "−"}${fmt(Math.abs(shown), digits)}`;
};
// The reason is the tooltip for the mouse and the accessible name for keyboard and screen-reader users.
const badge = (player) => {
  const why = player.provisional_reason ? `${PROVISIONAL_WHY} Here: ${player.provisional_reason}.` : PROVISIONAL_WHY;
  return h("span", { class: "badge", title: why, "aria-label": `provisional: ${why}`, tabindex: "0" }, "provisional");
};
// Elo ± two standard errors, the interval the results support (about 95%).
const interval = (p) => h("span", { class: "interval", title: `between ${fmt(p.elo - 2 * p.strength_se)} and ` +
  `${fmt(p.elo + 2 * p.strength_se)} with about 95% confidence` }, fmt(p.elo), h("small", {}, ` ± ${fmt(2 * p.strength_se)}`));
const FIELD_MOVES = "Ratings are measured against the whole field, so a rating can move when its player did not " +
  "play: the players it is compared with did.";
const pct = (p) => `${Math.round(100 * p)}%`;
const names = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);
const keyStore = (slug) => `melo-write-key:${slug}`;

// ---------- views ----------

async function home(view) {
  const ladders = await allPages("/v1/ladders?limit=500");
  view.replaceChildren(
    h("h1", {}, "Ladders"),
    ladders.length
      ? h("ul", {}, ladders.map((l) => h("li", {}, h("a", { href: `/ladders/${l.slug}` }, l.name || l.slug),
          ` · ${l.players} players, ${l.games} games`)))
      : h("p", { class: "muted" }, "No ladders yet."),
    createForm(),
  );
}

// Create a ladder with the server's admin key; its first admin key is shown once, and kept in this browser.
function createForm() {
  const slug = h("input", { id: "new-slug", required: "", pattern: "[a-z0-9][a-z0-9_-]{0,63}", autocomplete: "off",
    placeholder: "office-pingpong" });
  const name = h("input", { id: "new-ladder-name", maxlength: "200", autocomplete: "off", placeholder: "Office ping-pong" });
  const admin = h("input", { id: "admin-key", type: "password", autocomplete: "off" });
  const result = h("div", { id: "created" });
  const form = h("form", { id: "create-ladder", class: "panel" },
    h("h2", {}, "New ladder"),
    h("div", { class: "row" }, h("label", { for: "new-slug" }, "Address"), slug),
    h("div", { class: "row" }, h("label", { for: "new-ladder-name" }, "Name"), name),
    h("div", { class: "row" }, h("label", { for: "admin-key" }, "Server admin key"), admin),
    h("button", { type: "submit", id: "create-submit" }, "Create"),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    const body = { slug: slug.value.trim(), name: name.value.trim() || null };
    const created = await guarded(() => api("POST", "/v1/ladders", body, admin.value.trim()));
    if (!created) return;
    localStorage.setItem(keyStore(created.slug), created.write_key);
    result.replaceChildren(
      h("p", {}, "Created ", h("a", { href: `/ladders/${created.slug}` }, created.name || created.slug), "."),
      h("p", {}, "Its admin key, shown only now (this browser keeps it): ", h("code", { id: "new-key" }, created.write_key)));
  });
  return form;
}

async function ladderView(view, slug) {
  const ladder = await api("GET", `/v1/ladders/${slug}`);
  const state = { slug, ladder, board: new Map(), order: "conservative" };
  view.replaceChildren(
    h("h1", {}, ladder.name || ladder.slug),
    h("p", { class: "muted" }, `${ladder.players} players · ${ladder.games} games · k = ${ladder.k} · `,
      h("a", { href: `/ladders/${slug}/settings` }, "keys")),
    ladder.seats ? h("p", { class: "muted", id: "learned-seats" }, "Learned seat advantages: " + ladder.seats.map((x) =>
      `${x.name} ${signed(x.advantage_elo)} ± ${fmt(2 * x.advantage_elo_se)} Elo`)
      .join(" · ")) : null,
    h("section", { id: "leaderboard" }),
    h("div", { class: "grid" }, h("section", { id: "record", class: "panel" }), h("section", { id: "h2h", class: "panel" }),
      h("section", { id: "teams", class: "panel" })),
    h("section", { id: "recent" }),
    h("section", { id: "discs" }),
  );
  await renderBoard(state);
  renderRecord(state);
  await guarded(() => renderRecent(state));
  renderHeadToHead(state);
  renderTeams(state);
  await guarded(() => renderDiscs(state));
}

async function renderBoard(state) {
  const box = document.getElementById("leaderboard");
  const select = h("select", { id: "order", "aria-label": "Order by" },
    h("option", { value: "conservative" }, "Shown strength (Elo − 2 SE)"),
    h("option", { value: "hodge" }, "Strength (Hodge)"),
    h("option", { value: "field" }, "Expected score vs the field"),
    h("option", { value: "disc" }, "Disc strength"));
  select.value = state.order;
  select.addEventListener("change", async () => { state.order = select.value; await guarded(() => renderBoard(state)); });
  const inactive = h("input", { type: "checkbox", id: "show-inactive" });
  inactive.checked = Boolean(state.showInactive);
  inactive.addEventListener("change", async () => {
    state.showInactive = inactive.checked;
    await guarded(() => renderBoard(state));
  });
  const controls = h("div", { class: "row" }, h("label", { for: "order" }, "Order by"), select,
    h("label", { for: "show-inactive" }, inactive, " show inactive players"));
  let page;
  try {
    const query = `by=${state.order}&limit=200${state.showInactive ? "&inactive=true" : ""}`;
    page = await api("GET", `/v1/ladders/${state.slug}/leaderboard?${query}`);
  } catch (err) {
    box.replaceChildren(h("h2", {}, "Leaderboard"), controls);
    throw err;
  }
  state.board = new Map(page.items.map((p) => [p.key, p]));
  // Established players first, numbered among themselves; provisional ones below in a group of their own.
  const established = page.items.filter((p) => !p.provisional);
  const provisional = page.items.filter((p) => p.provisional);
  const row = (p, rank) => h("tr", { "data-key": p.key, class: p.active === false ? "inactive" : "" },
    h("td", { class: "num" }, rank),
    h("td", {}, h("a", { href: `/ladders/${state.slug}/players/${encodeURIComponent(p.key)}` }, p.name || p.key), " ",
      p.provisional ? badge(p) : null, p.active === false ? h("span", { class: "muted" }, " (inactive)") : null),
    h("td", { class: "num" }, fmt(p.conservative)),
    h("td", { class: "num" }, interval(p)),
    h("td", { class: "num moved", title: "Elo gained or lost since their own last game, as others played" },
      signed(p.change_since_last_game)),
    h("td", { class: "num" }, p.games),
    h("td", { class: "num" }, `${p.wins}/${p.draws}/${p.losses}`));
  const rows = established.map((p, n) => row(p, n + 1));
  if (provisional.length) {
    rows.push(h("tr", { class: "group" }, h("td", { colspan: "7" },
      "Provisional: not yet comparable with the others (too few results, or results that cannot pin them down)")));
    rows.push(...provisional.map((p) => row(p, "–")));
  }
  box.replaceChildren(
    h("h2", {}, "Leaderboard"),
    controls,
    h("div", { class: "table-wrap" }, h("table", { id: "board" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "#"), h("th", {}, "Player"),
        h("th", { class: "num", title: "Elo − 2 standard errors: the strength the results support at least" }, "Shown"),
        h("th", { class: "num", title: "Elo-equivalent strength ± 2 standard errors" }, "Elo"),
        h("th", { class: "num", title: "Elo gained or lost since their own last game, as others played" },
          "Since last game"),
        h("th", { class: "num" }, "Games"), h("th", { class: "num" }, "W/D/L"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: "7", class: "muted" }, "No players yet."))))),
    h("p", { class: "muted", id: "field-moves" }, FIELD_MOVES),
  );
}

// The latest games, each with an undo button: undoing voids the game (it stays listed, struck through) and the
// ratings are replayed without it.
async function renderRecent(state) {
  const box = document.getElementById("recent");
  const page = await api("GET", `/v1/ladders/${state.slug}/games?limit=10`);
  const names = (side) => side.players.map((p) => p.key).join(" & ");
  const items = page.items.map((game) => {
    const order = [...game.sides].sort((x, y) => x.rank - y.rank);
    const tie = order.length > 1 && order[0].rank === order[1].rank;
    const text = `#${game.seq} ` + (order.length === 2
      ? `${names(order[0])} ${tie ? "drew with" : "beat"} ${names(order[1])}`
      : order.map((side) => `${side.rank}. ${names(side)}`).join(", "));
    if (game.voided_at) {
      return h("li", { "data-seq": game.seq, class: "voided" }, h("s", {}, text), " (undone)");
    }
    const undo = h("button", { type: "button", class: "undo", "aria-label": `Undo game ${game.seq}` }, "Undo");
    undo.addEventListener("click", async () => {
      if (!window.confirm(`Undo game #${game.seq} (${text})? It will no longer count.`)) return;
      clearMessages();
      const typed = document.getElementById("write-key");
      const key = (typed && typed.value.trim()) || localStorage.getItem(keyStore(state.slug)) || "";
      const done = await guarded(() => api("DELETE", `/v1/ladders/${state.slug}/games/${game.id}`, undefined, key));
      if (!done) return;
      await guarded(() => renderBoard(state));
      await guarded(() => renderRecent(state));
      say(`Game #${game.seq} undone.`, "info");
    });
    return h("li", { "data-seq": game.seq }, text, " ", undo);
  });
  box.replaceChildren(h("h2", {}, "Recent games"),
    items.length ? h("ul", { id: "recent-games" }, ...items) : h("p", { class: "muted" }, "No games yet."));
}

function renderRecord(state) {
  const box = document.getElementById("record");
  const keyInput = h("input", { id: "write-key", type: "password", autocomplete: "off",
    value: localStorage.getItem(keyStore(state.slug)) || "" });
  const saveKey = h("button", { type: "button", class: "secondary", onclick: () => {
    localStorage.setItem(keyStore(state.slug), keyInput.value.trim());
    say("Write key saved in this browser.", "info");
  } }, "Save key");
  const modes = ["singles", "doubles", "free-for-all"];
  const modeBox = h("fieldset", {}, h("legend", {}, "Game"), modes.map((m) => h("label", { class: "inline" },
    h("input", { type: "radio", name: "mode", value: m, checked: m === "singles" }), m)));
  const sidesBox = h("div", { id: "sides" });
  const advantage = h("input", { id: "served", type: "checkbox" });
  const advantageQ = h("input", { id: "served-q", type: "number", min: "0.51", max: "0.95", step: "0.01", value: "0.55" });
  const preview = h("p", { id: "preview", class: "muted" }, "Enter the players to see each side's chances.");
  const outcome = h("div", { id: "outcome", class: "result" });
  const submit = h("button", { type: "submit", id: "submit-game" }, "Record game");
  const form = h("form", { id: "game-form" },
    h("label", { for: "write-key" }, "Write key"), h("div", { class: "row" }, keyInput, saveKey),
    modeBox, sidesBox,
    h("label", { class: "inline" }, advantage, "First side served first, winning an even game with probability"),
    advantageQ, preview, submit, outcome);
  box.replaceChildren(h("h2", {}, "Record a game"), form);

  const mode = () => form.querySelector("input[name=mode]:checked").value;
  const drawSides = () => {
    const m = mode();
    if (m === "free-for-all") {
      const list = h("div", { id: "ffa" });
      const addRow = () => list.append(h("div", { class: "row ffa-row" },
        h("input", { class: "ffa-player", "aria-label": "Player", placeholder: "player" }),
        h("input", { class: "ffa-place", type: "number", min: "1", "aria-label": "Finishing position",
          placeholder: "position", value: String(list.children.length + 1) })));
      for (let i = 0; i < 3; i++) addRow();
      sidesBox.replaceChildren(list, h("button", { type: "button", class: "secondary", onclick: addRow }, "Add player"),
        h("p", { class: "muted" }, "Equal positions are ties."));
    } else {
      const per = m === "doubles" ? 2 : 1;
      const side = (label, id) => h("fieldset", {}, h("legend", {}, label),
        Array.from({ length: per }, (_, i) => h("input", { id: `${id}-${i}`, class: `side-${id}`,
          "aria-label": `${label} player ${i + 1}`, placeholder: `player ${i + 1}` })));
      const seats = (state.ladder.seats || []).map((x) => x.name);
      const seatPick = (id, label, pick) => h("label", { class: "inline" }, label, " ",
        h("select", { id, "aria-label": label }, h("option", { value: "" }, "none"),
          seats.map((name, i) => h("option", { value: name, selected: i === pick }, name))));
      sidesBox.replaceChildren(h("div", { class: "row" }, side("Side A", "a"), side("Side B", "b")),
        seats.length ? h("div", { class: "row", id: "seats" }, seatPick("seat-a", "Side A's seat", 0),
          seatPick("seat-b", "Side B's seat", 1)) : null,
        h("label", { for: "result" }, "Result"),
        h("select", { id: "result" }, h("option", { value: "a" }, "Side A won"), h("option", { value: "draw" }, "Draw"),
          h("option", { value: "b" }, "Side B won")));
    }
  };

  const gameBody = () => {
    const q = Number(advantageQ.value);
    const served = advantage.checked ? { win_probability: q } : {};
    if (mode() === "free-for-all") {
      const rows = [...form.querySelectorAll(".ffa-row")]
        .map((r) => ({ players: names(r.querySelector(".ffa-player").value), rank: Number(r.querySelector(".ffa-place").value) }))
        .filter((s) => s.players.length);
      return { sides: rows.map((s, i) => (i === 0 ? { ...s, ...served } : s)) };
    }
    const players = (id) => [...form.querySelectorAll(`.side-${id}`)].map((i) => i.value.trim()).filter(Boolean);
    const result = form.querySelector("#result").value;
    const ranks = { a: [1, 2], draw: [1, 1], b: [2, 1] }[result];
    const seat = (id) => {
      const picked = form.querySelector(`#seat-${id}`);
      return picked && picked.value ? { seat: picked.value } : {};
    };
    return { sides: [{ players: players("a"), rank: ranks[0], ...served, ...seat("a") },
      { players: players("b"), rank: ranks[1], ...seat("b") }] };
  };

  let timer;
  const updatePreview = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const body = gameBody();
      if (body.sides.length < 2 || body.sides.some((s) => !s.players.length)) return;
      const sides = body.sides.map(({ players, win_probability, seat }) => ({ players,
        ...(win_probability ? { win_probability } : {}), ...(seat ? { seat } : {}) }));
      try {
        const match = await api("POST", `/v1/ladders/${state.slug}/predict`, { sides });
        preview.textContent = "Chances: " + body.sides.map((s, i) => `${s.players.join(" & ")} ${pct(match.expected_scores[i])}`).join(" · ");
      } catch (err) {
        preview.textContent = err.status === 404 ? `${err.message} New players start at the ladder's initial rating.` : err.message;
      }
    }, 250);
  };

  form.addEventListener("change", (event) => {
    if (event.target.name === "mode") drawSides();
    updatePreview();
  });
  form.addEventListener("input", updatePreview);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    const key = keyInput.value.trim();
    if (key) localStorage.setItem(keyStore(state.slug), key);
    const body = gameBody();
    const before = new Map([...state.board].map(([k, p]) => [k, p.elo]));
    submit.disabled = true;
    const posted = await guarded(() => api("POST", `/v1/ladders/${state.slug}/games`, body, key));
    submit.disabled = false;
    if (!posted) return;
    await guarded(() => renderBoard(state));
    await guarded(() => renderRecent(state));
    const changes = posted.sides.flatMap((s) => s.players.map((p) => {
      const now = state.board.get(p.key);
      const was = before.get(p.key);
      if (!now) return h("li", {}, p.key);
      if (was === undefined) return h("li", {}, `${p.key}: new, ${fmt(now.elo)}`);
      const delta = now.elo - was;
      return h("li", {}, `${p.key}: ${fmt(was)} → ${fmt(now.elo)} `,
        h("span", { class: delta >= 0 ? "up" : "down" }, `(${signed(delta, 1)})`));
    }));
    outcome.replaceChildren(h("p", {}, `Game ${posted.id} recorded.`), h("ul", { id: "changes" }, changes));
  });
  drawSides();
}

function renderHeadToHead(state) {
  const box = document.getElementById("h2h");
  const a = h("input", { id: "h2h-a", placeholder: "ann, or ann, cy for a team" });
  const b = h("input", { id: "h2h-b", placeholder: "bob" });
  const out = h("p", { id: "h2h-result", class: "result" });
  const form = h("form", { onsubmit: async (event) => {
    event.preventDefault();
    clearMessages();
    const match = await guarded(() => api("POST", `/v1/ladders/${state.slug}/predict`,
      { sides: [{ players: names(a.value) }, { players: names(b.value) }] }));
    if (match) out.textContent = `${names(a.value).join(" & ")} beats ${names(b.value).join(" & ")} with probability ${pct(match.matrix[0][1])}.`;
  } }, h("label", { for: "h2h-a" }, "Player or team"), a, h("label", { for: "h2h-b" }, "against"), b,
  h("p", {}, h("button", { type: "submit" }, "Compare")), out);
  box.replaceChildren(h("h2", {}, "Head to head"), form);
}

function renderTeams(state) {
  const box = document.getElementById("teams");
  const who = h("input", { id: "teams-players", placeholder: "ann, bob, cy, dee" });
  const count = h("input", { id: "teams-count", type: "number", min: "2", value: "2" });
  const out = h("div", { id: "teams-result", class: "result" });
  const form = h("form", { onsubmit: async (event) => {
    event.preventDefault();
    clearMessages();
    const split = await guarded(() => api("POST", `/v1/ladders/${state.slug}/teams`,
      { players: names(who.value), teams: Number(count.value) }));
    if (!split) return;
    out.replaceChildren(
      h("ol", {}, ...split.teams.map((team, n) =>
        h("li", {}, `${team.join(" & ")}: wins ${pct(split.win_probabilities[n])}`))),
      h("p", { class: "muted" }, `Match quality ${pct(split.match_quality)} (100% = dead even)` +
        (split.exact ? ", the best of every possible split." : ", the best split a search found.")));
  } }, h("label", { for: "teams-players" }, "Who is playing"), who,
  h("label", { for: "teams-count" }, "Teams"), count,
  h("p", {}, h("button", { type: "submit" }, "Make fair teams")), out);
  box.replaceChildren(h("h2", {}, "Make teams"), form);
}

async function renderDiscs(state) {
  const box = document.getElementById("discs");
  const [canonical, intrans] = await Promise.all([
    api("GET", `/v1/ladders/${state.slug}/canonical`),
    api("GET", `/v1/ladders/${state.slug}/intransitivity`),
  ]);
  const points = canonical.players.map((p) => ({ label: p.key, x: p.coordinates[0], y: p.coordinates[1] }));
  const block = canonical.blocks[0];
  box.replaceChildren(
    h("h2", {}, "Cycles in this ladder"),
    h("p", { id: "intransitivity" }, `Intransitivity ${fmt(intrans.measure, 2)}: ` +
      "below 1 the ranking (the transitive part) outweighs the cycles, above 1 the cycles (rock-paper-scissors) outweigh the ranking, and 1 means they weigh the same (as when every player is equal)."),
    block ? h("p", { class: "muted" }, `Largest disc: ${block.kind}, ${pct(block.share)} of the advantages. ` +
      "A player's angle is their style and their distance from the centre their weight: in a transitive disc " +
      "players further along the arc beat those behind; in a cyclic disc each beats the next around the circle.") : null,
    points.length ? scatter(points) : h("p", { class: "muted" }, "No players yet."),
  );
}

function scatter(points, width = 560, height = 360, pad = 36) {
  const xs = points.map((p) => p.x).concat([0]);
  const ys = points.map((p) => p.y).concat([0]);
  const span = (v) => Math.max(...v) - Math.min(...v) || 1;
  const sx = (x) => pad + ((x - Math.min(...xs)) / span(xs)) * (width - 2 * pad);
  const sy = (y) => height - pad - ((y - Math.min(...ys)) / span(ys)) * (height - 2 * pad);
  return svg("svg", { id: "disc-plot", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "Canonical disc view: each player as a point" },
  svg("line", { class: "axis", x1: sx(Math.min(...xs)), x2: sx(Math.max(...xs)), y1: sy(0), y2: sy(0) }),
  svg("line", { class: "axis", x1: sx(0), x2: sx(0), y1: sy(Math.min(...ys)), y2: sy(Math.max(...ys)) }),
  points.map((p) => svg("g", {}, svg("circle", { class: "dot", cx: sx(p.x), cy: sy(p.y), r: 4 }),
    svg("text", { x: sx(p.x) + 6, y: sy(p.y) - 6 }, p.label))));
}

function linePlot(values, width = 560, height = 220, pad = 36) {
  const lo = Math.min(...values), hi = Math.max(...values);
  const sx = (i) => pad + (values.length > 1 ? i / (values.length - 1) : 0.5) * (width - 2 * pad);
  const sy = (v) => height - pad - ((v - lo) / (hi - lo || 1)) * (height - 2 * pad);
  return svg("svg", { id: "history-plot", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "Elo-equivalent strength after each game" },
  svg("line", { class: "axis", x1: pad, x2: width - pad, y1: height - pad, y2: height - pad }),
  svg("line", { class: "axis", x1: pad, x2: pad, y1: pad, y2: height - pad }),
  svg("text", { x: 2, y: sy(hi) + 4 }, fmt(hi)), svg("text", { x: 2, y: sy(lo) + 4 }, fmt(lo)),
  svg("text", { x: width - pad - 60, y: height - 10 }, `${values.length} games`),
  svg("polyline", { class: "line", points: values.map((v, i) => `${sx(i)},${sy(v)}`).join(" ") }));
}

async function playerView(view, slug, key) {
  const [player, history, next] = await Promise.all([
    api("GET", `/v1/ladders/${slug}/players/${encodeURIComponent(key)}`),
    api("GET", `/v1/ladders/${slug}/players/${encodeURIComponent(key)}/history?limit=200`),
    api("GET", `/v1/ladders/${slug}/players/${encodeURIComponent(key)}/opponents?limit=5`).then((page) => page.items),
  ]);
  const games = history.items.slice().reverse();
  const counts = new Map();
  for (const g of games) for (const o of g.opponents) counts.set(o, (counts.get(o) || 0) + 1);
  const regulars = [...counts].sort((x, y) => y[1] - x[1]).slice(0, 5).map(([k]) => k);
  const odds = await Promise.all(regulars.map((o) =>
    api("GET", `/v1/ladders/${slug}/predict?a=${encodeURIComponent(key)}&b=${encodeURIComponent(o)}`).catch(() => null)));
  const title = h("h1", {}, player.name || player.key, " ", player.provisional ? badge(player) : null);
  view.replaceChildren(
    h("p", {}, h("a", { href: `/ladders/${slug}` }, "← leaderboard")),
    title,
    h("p", { class: "muted", id: "summary" }, "Elo-equivalent ", interval(player), ` · ${player.games} games · ` +
      `${player.wins} won, ${player.draws} drawn, ${player.losses} lost`),
    player.provisional_reason ? h("p", { class: "muted", id: "why-provisional" },
      `${player.provisional ? "Provisional" : "Placed"}: ${player.provisional_reason}.`) : null,
    player.aliases && player.aliases.length ? h("p", { class: "muted", id: "aliases" },
      `Also posted as ${player.aliases.join(", ")} (key ${player.key}).`) : null,
    h("h2", {}, "Strength over time"),
    games.length ? linePlot(games.map((g) => g.elo_after)) : h("p", { class: "muted" }, "No games yet."),
    h("div", { class: "grid" },
      h("section", {}, h("h2", {}, "Against regular opponents"),
        regulars.length ? h("ul", { id: "regulars" }, regulars.map((o, i) => h("li", {}, `vs ${o}: `,
          odds[i] ? `wins with probability ${pct(odds[i].probability)}` : "—"))) : h("p", { class: "muted" }, "None yet.")),
      h("section", {}, h("h2", {}, "Who to play next"),
        h("p", { class: "muted" }, "The most even games, so both of you learn the most:"),
        h("ul", { id: "next" }, next.map((o) => h("li", {}, h("a", { href: `/ladders/${slug}/players/${encodeURIComponent(o.key)}` },
          o.name || o.key), ` (${pct(o.probability)})`))))),
    h("h2", {}, "Recent games"),
    h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Game"), h("th", {}, "Against"), h("th", { class: "num" }, "Score"),
        h("th", { class: "num" }, "Expected"))),
      h("tbody", {}, history.items.slice(0, 20).map((g) => h("tr", {}, h("td", {}, `#${g.seq}`), h("td", {}, g.opponents.join(", ")),
        h("td", { class: "num" }, fmt(g.actual_score, 2)), h("td", { class: "num" }, fmt(g.expected_score, 2))))))),
    renameForm(slug, player, title),
  );
}

// Rename a player (a write key, kept in this browser as on the ladder page).
function renameForm(slug, player, title) {
  const name = h("input", { id: "new-name", value: player.name || "", maxlength: "200", autocomplete: "off" });
  const key = h("input", { id: "rename-key", type: "password", autocomplete: "off",
    value: localStorage.getItem(keyStore(slug)) || "" });
  const form = h("form", { id: "rename", class: "panel" },
    h("h2", {}, "Rename"),
    h("div", { class: "row" }, h("label", { for: "new-name" }, "Name"), name),
    h("div", { class: "row" }, h("label", { for: "rename-key" }, "Write key"), key),
    h("button", { type: "submit", id: "rename-submit" }, "Rename"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    const body = { name: name.value.trim() || null };
    const changed = await guarded(() =>
      api("PATCH", `/v1/ladders/${slug}/players/${encodeURIComponent(player.key)}`, body, key.value.trim()));
    if (!changed) return;
    if (key.value.trim()) localStorage.setItem(keyStore(slug), key.value.trim());
    title.replaceChildren(changed.name || changed.key, " ", changed.provisional ? badge(changed) : null);
    say(`Renamed to ${changed.name || changed.key}.`, "info");
  });
  return form;
}

// The ladder's keys, for its admins: create write or admin keys (each shown once) and revoke them.
async function settingsView(view, slug) {
  const adminKey = h("input", { id: "settings-key", type: "password", autocomplete: "off",
    value: localStorage.getItem(keyStore(slug)) || "" });
  const list = h("div", { id: "keys" });
  const name = h("input", { id: "key-name", required: "", maxlength: "200", autocomplete: "off", placeholder: "front desk" });
  const role = h("select", { id: "key-role" }, h("option", { value: "write" }, "write: records and undoes games"),
    h("option", { value: "read" }, "read: reads a private ladder"),
    h("option", { value: "admin" }, "admin: also manages keys and settings"));
  const expires = h("input", { id: "key-expires", type: "date" });
  const when = (moment) => (moment ? moment.slice(0, 16).replace("T", " ") : "never");
  const shown = h("div", { id: "new-key-box" });
  const load = async () => {
    const keys = await allPages(`/v1/ladders/${slug}/keys?limit=500`, adminKey.value.trim());
    list.replaceChildren(h("div", { class: "table-wrap" }, h("table", { id: "key-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Role"), h("th", {}, "Created"),
        h("th", {}, "Last used"), h("th", {}, "Expires"), h("th", {}, ""))),
      h("tbody", {}, keys.map((k) => {
        const revoke = h("button", { type: "button", class: "secondary", "aria-label": `Revoke ${k.name}` }, "Revoke");
        revoke.addEventListener("click", async () => {
          if (!window.confirm(`Revoke the key “${k.name}”? Its next request will be refused.`)) return;
          clearMessages();
          const done = await guarded(() => api("DELETE", `/v1/ladders/${slug}/keys/${k.id}`, undefined, adminKey.value.trim()));
          if (done) await guarded(load);
        });
        return h("tr", { "data-id": k.id, class: k.revoked_at ? "revoked" : "" }, h("td", {}, k.name), h("td", {}, k.role),
          h("td", {}, k.created_at.slice(0, 10)), h("td", {}, when(k.last_used_at)), h("td", {}, when(k.expires_at)),
          h("td", {}, k.revoked_at ? "revoked" : revoke));
      })))));
    return true;
  };
  const open = h("button", { type: "button", id: "load-keys" }, "Show keys");
  open.addEventListener("click", async () => {
    clearMessages();
    if (await guarded(load)) localStorage.setItem(keyStore(slug), adminKey.value.trim());
  });
  const form = h("form", { id: "new-key", class: "panel" }, h("h2", {}, "New key"),
    h("div", { class: "row" }, h("label", { for: "key-name" }, "Name"), name),
    h("div", { class: "row" }, h("label", { for: "key-role" }, "Role"), role),
    h("div", { class: "row" }, h("label", { for: "key-expires" }, "Expires (optional)"), expires),
    h("button", { type: "submit", id: "create-key" }, "Create"), shown);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    const body = { name: name.value.trim(), role: role.value };
    if (expires.value) body.expires_at = `${expires.value}T00:00:00Z`;
    const created = await guarded(() => api("POST", `/v1/ladders/${slug}/keys`, body, adminKey.value.trim()));
    if (!created) return;
    shown.replaceChildren(h("p", {}, `Key “${created.name}” (${created.role}), shown only now: `,
      h("code", { id: "created-key" }, created.key)));
    await guarded(load);
  });
  view.replaceChildren(
    h("p", {}, h("a", { href: `/ladders/${slug}` }, "← leaderboard")),
    h("h1", {}, "Keys"),
    h("div", { class: "row" }, h("label", { for: "settings-key" }, "Your admin key"), adminKey, open),
    list, form);
}

async function route() {
  const view = document.getElementById("view");
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  await guarded(async () => {
    if (parts.length === 0) return home(view);
    if (parts[0] === "ladders" && parts.length === 2) return ladderView(view, parts[1]);
    if (parts[0] === "ladders" && parts[2] === "players" && parts.length === 4) return playerView(view, parts[1], parts[3]);
    if (parts[0] === "ladders" && parts[2] === "settings" && parts.length === 3) return settingsView(view, parts[1]);
    view.replaceChildren(h("p", {}, "Nothing here. ", h("a", { href: "/" }, "All ladders")));
  });
  if (view.textContent === "Loading…") view.replaceChildren(h("p", {}, h("a", { href: "/" }, "All ladders")));
}

document.addEventListener("DOMContentLoaded", route);
