// Recording a game in seconds: pick the players (suggested as you type), press who won. Singles, doubles and
// free-for-all in one form, as far as the ladder plays them (its `play`), with the score: points for a game, or
// each game's points for a best-of-3 or 5 (a ladder that plays matches plays single games too: the form offers
// both, the match first); the seat question only on ladders that learn seats. The toast that
// follows shows each player's rating change and can undo the game.
import { ApiError, savedKey, forgetKey } from "./api.js";
import { debounce, fill, h, pct } from "./dom.js";
import { FormProblem, SIDES, freeForAll, pointsOf, teamsOf, twoSided } from "./game-body.js";
import { picker } from "./picker.js";
import { showRecorded } from "./recorded.js";
import { scoreEntry } from "./score-entry.js";
import { seatEntry } from "./seat-entry.js";
import { ask, clearMessages, guarded, hideToast, say, showInView, withKey } from "./ui.js";

const MODES = [["singles", "Singles"], ["doubles", "Doubles"], ["ffa", "Free-for-all"]];
const PLAYED_AS = { singles: "singles", doubles: "doubles", ffa: "free_for_all" }; // each mode's kind in `play`

// The record form. `onRecorded(game)` and `onUndone(game)` let the page show the change at once; `me()` is the key
// of who uses this device, filled in as the first player.
export function recordForm({ api, ladder, roster, onRecorded, onUndone, me = () => "" }) {
  const seats = (ladder.seats || []).map((s) => s.name);
  // What the ladder plays: every kind unless it says otherwise.
  const play = { draws: true, points: null, best_of: 1, ...ladder.play };
  // A match's games, or one game: kept from game to game, and on this device from visit to visit.
  const formatName = `melo-format:${api.slug}`;
  let format = play.best_of > 1 ? (localStorage.getItem(formatName) === "game" ? "game" : "match") : "game";
  const modes = MODES.filter(([value]) => play[PLAYED_AS[value]] !== false);
  const form = h("form", { id: "game-form", novalidate: true });
  const modeBox = h("fieldset", { class: "modes", hidden: modes.length < 2 },
    h("legend", { class: "sr-only" }, "Kind of game"),
    modes.map(([value, label], n) => h("label", {},
      h("input", { type: "radio", name: "mode", value, checked: n === 0 }), h("span", {}, label))));
  const playersBox = h("div", { class: "players" });
  const seatBox = h("div", { class: "seats" });
  const scoreBox = h("div", { class: "scores" });
  const preview = h("p", { id: "preview", class: "muted", "aria-live": "polite" });
  const actions = h("div", { class: "who-won" });
  const keyLine = h("p", { class: "key-line muted" });
  // What is wrong with the game, next to the buttons that send it (a message at the top of a phone's page is out
  // of sight).
  const problemLine = h("p", { id: "form-problem", class: "form-problem", role: "alert", hidden: true });
  const confirmedNew = new Set(); // new players' names confirmed for the game being entered
  fill(form, modeBox, playersBox, seatBox, scoreBox, preview, problemLine, actions);
  let pickers = []; // singles and doubles: [side A's pickers, side B's]; free-for-all: one per row
  let places = []; // free-for-all: each row's place box
  const scores = scoreEntry({ play, box: scoreBox, sideName }); // singles and doubles
  const seatQuestion = seatEntry({ seats, box: seatBox, sideName });

  const mode = () => form.querySelector("input[name=mode]:checked").value;

  // The players picked in every picker but `except`: not suggested twice in one game.
  const pickedElsewhere = (except) => () =>
    new Set(pickers.flat().filter((p) => p !== except.current).map((p) => p.key).filter(Boolean));

  const nextPicker = () => pickers.flat().find((p) => !p.key); // the first player still to pick

  // After a pick by click or Enter, on to the next empty picker, or to the buttons when every player is there.
  function advance(how) {
    if (how === "tab") return;
    const next = nextPicker();
    const points = scores.rows().flat().find((input) => input.offsetParent !== null); // the score, where asked
    (next ? next.input : points || form.querySelector(".who-won button")).focus();
  }

  // The first player still to pick (the skip link's target), else the first box of the form.
  function focusFirst() {
    const next = nextPicker();
    (next ? next.input : form.querySelector("input:not([type=radio]), button")).focus();
  }

  function makePicker(id, label) {
    const self = { current: null };
    self.current = picker({ id, label, roster, allowNew: ladder.auto_create_players, exclude: pickedElsewhere(self),
      onPick: (_, how) => advance(how) });
    return self.current;
  }

  function drawTeams() {
    const per = mode() === "doubles" ? 2 : 1;
    const kept = pickers.map((side) => (Array.isArray(side) ? side.map((p) => p.key) : [])); // keep who was picked
    pickers = SIDES.map((side, s) => Array.from({ length: per }, (_, i) => {
      const label = per === 1 ? `Player ${side}` : h("span", {}, h("span", { class: "sr-only" }, `Team ${side}, `),
        `Player ${i + 1}`);
      const p = makePicker(`${side.toLowerCase()}-${i}`, label);
      const key = kept[s] && kept[s][i];
      if (key) p.set(key);
      return p;
    }));
    fill(playersBox, h("div", { class: "teams" },
      pickers[0].length > 1 ? h("fieldset", { class: "team" }, h("legend", {}, "Team A"), pickers[0].map((p) => p.root))
        : pickers[0][0].root,
      h("span", { class: "vs", "aria-hidden": "true" }, "vs"),
      pickers[1].length > 1 ? h("fieldset", { class: "team" }, h("legend", {}, "Team B"), pickers[1].map((p) => p.root))
        : pickers[1][0].root));
    seatQuestion.draw();
    scores.draw(format);
  }

  function drawFreeForAll() {
    pickers = [];
    places = [];
    const rows = h("ol", { class: "ffa", id: "ffa" });
    const addRow = () => {
      const n = pickers.length + 1;
      const p = makePicker(`ffa-${n}`, `Player ${n}`);
      const place = h("input", { id: `ffa-place-${n}`, class: "place", type: "number", min: "1", inputmode: "numeric",
        value: String(n) });
      pickers.push(p);
      places.push(place);
      rows.append(h("li", { class: "ffa-row" }, p.root,
        h("div", { class: "field place-field" }, h("label", { for: place.id }, "Place"), place)));
    };
    for (let i = 0; i < 3; i++) addRow();
    const add = h("button", { type: "button", class: "secondary", id: "add-player" }, "Add player");
    add.addEventListener("click", () => {
      addRow();
      pickers[pickers.length - 1].input.focus();
    });
    fill(playersBox, rows, add, h("p", { class: "muted" }, "Place 1 is the winner; equal places are ties."));
    seatQuestion.clear();
    scores.clear();
  }

  // A side in words: its players' names once picked ("Ann & Cy"), else "A" or "team A".
  function sideName(s) {
    const keys = (pickers[s] || []).map((p) => p.key).filter(Boolean);
    if (keys.length && keys.length === pickers[s].length) return keys.map((k) => roster.name(k)).join(" & ");
    return pickers[s] && pickers[s].length > 1 ? `Team ${SIDES[s]}` : `Player ${SIDES[s]}`;
  }

  function drawActions() {
    if (mode() === "ffa") {
      return fill(actions, h("button", { type: "submit", class: "big", value: "ranked", id: "submit-game" },
        "Record game"));
    }
    return fill(actions, h("span", { class: "label", id: "who-won" }, "Who won?"),
      h("div", { class: "winner-buttons", role: "group", "aria-labelledby": "who-won" },
        SIDES.map((side, s) => h("button", { type: "submit", class: "big", value: side.toLowerCase(),
          id: `won-${side.toLowerCase()}` }, `${sideName(s)} won`)),
        play.draws ? h("button", { type: "submit", class: "secondary", value: "draw", id: "won-draw" }, "Draw")
          : null));
  }

  // Names on the buttons and in the seat question follow the picks.
  function relabel() {
    SIDES.forEach((side, s) => {
      const button = form.querySelector(`#won-${side.toLowerCase()}`);
      if (button) button.textContent = `${sideName(s)} won`;
    });
    seatQuestion.label();
    scores.label();
  }

  function drawKeyLine() {
    if (!savedKey(api.slug)) {
      return fill(keyLine, "You will be asked for the ladder's write key once; this browser keeps it.");
    }
    const forget = h("button", { type: "button", class: "link", id: "forget-key" }, "Forget it");
    forget.addEventListener("click", () => {
      forgetKey(api.slug);
      drawKeyLine();
      say("The key is forgotten in this browser.", "info");
    });
    return fill(keyLine, "The ladder's key is saved in this browser. ", forget);
  }

  function draw() {
    if (mode() === "ffa") drawFreeForAll();
    else drawTeams();
    drawActions();
    fill(preview);
    prefillMe();
  }

  // Me as the first player, unless I am picked already or the first box has someone else.
  function prefillMe() {
    const key = me();
    const all = pickers.flat();
    if (!key || !all.length) return;
    const mine = all.find((p) => p.key === key);
    if (mine && mine.input.value === key) mine.set(key); // the name, once the roster knows it
    else if (!mine && !all[0].input.value.trim()) all[0].set(key);
    relabel();
  }

  function showProblem(message) {
    problemLine.textContent = message;
    problemLine.hidden = !message;
    if (message) showInView(problemLine);
  }

  // A typed name that is nobody on the ladder yet (no key, name or alias, in any case) is a new player only once
  // confirmed; the closest names are offered instead ("bobb": did you mean Bob?). False: cancelled.
  async function confirmNewPlayers() {
    for (const p of pickers.flat()) {
      const text = p.input.value.trim();
      const folded = text.toLocaleLowerCase();
      if (!text || roster.find(text) || confirmedNew.has(folded) || (await isPlayer(text))) continue;
      const like = roster.closest(text);
      const allowNew = ladder.auto_create_players;
      const answer = await ask({
        title: allowNew ? `New player “${text}”?` : `No player “${text}”`,
        body: h("p", {}, like.length ? `Did you mean ${like.map((o) => o.name).join(" or ")}?`
          : allowNew ? "Nobody of that name plays on this ladder yet." : "Nobody of that name plays on this ladder."),
        choices: like.map((o) => [`player:${o.key}`, o.name]), // not "ok", whatever the key
        confirm: allowNew ? `Yes, add “${text}”` : null,
      });
      if (answer === null) {
        p.input.focus();
        return false;
      }
      if (answer.choice === "ok") confirmedNew.add(folded);
      else p.set(answer.choice.slice("player:".length));
    }
    relabel();
    return true;
  }

  // Whether the ladder knows `text` (an alias, or a player the page has not listed): one read, only for names the
  // page does not know.
  async function isPlayer(text) {
    try {
      await api.get(api.playerPath(text));
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return false;
      throw err;
    }
  }

  // ---------- the game as the API takes it ----------

  function teams() {
    return teamsOf(pickers.map((side) => side.map((p) => p.key)), (key) => roster.name(key));
  }

  function body(result) {
    if (mode() === "ffa") return freeForAll(pickers.map((p) => p.key), places.map((place) => place.value));
    const sides = teams(); // the players first, then the seats and the score, as a person fills the form in
    const points = pointsOf(scores.rows().map((row) => row.map((input) => input.value)), play.points);
    return twoSided({ sides, result, seats: seatQuestion.value(), points, format, bestOf: play.best_of, sideName });
  }

  // The entry a problem names (FormProblem's `field`).
  function entry([kind, a, b]) {
    if (kind === "place") return places[a];
    if (kind === "points") return (scores.rows()[a] || scores.rows()[0])[b];
    return mode() === "ffa" ? pickers[a].input : pickers[a][b].input;
  }

  // The form filled with a game's players, each on their side, for a rematch: the kind of game it was, if the
  // ladder still plays it; the score left for the new game.
  function rematch(game) {
    const keys = game.sides.map((side) => side.players.map((p) => p.key));
    const kind = keys.length > 2 ? "ffa" : keys.every((side) => side.length === 1) ? "singles" : "doubles";
    const radio = form.querySelector(`input[name=mode][value=${kind}]`);
    if (radio) radio.checked = true;
    draw();
    pickers.flat().forEach((p) => p.clear());
    if (mode() === "ffa") {
      while (pickers.length < keys.length) form.querySelector("#add-player").click();
      keys.forEach((side, n) => pickers[n].set(side[0]));
    } else {
      pickers.forEach((side, s) => side.forEach((p, i) => { if (keys[s] && keys[s][i]) p.set(keys[s][i]); }));
    }
    relabel();
    updatePreview();
  }

  // ---------- before and after ----------

  const updatePreview = debounce(async () => {
    let sides;
    try {
      sides = mode() === "ffa" ? body("ranked").sides.map(({ players }) => ({ players })) : teams().map((players, s) =>
        ({ players, ...seatQuestion.value()[s] }));
    } catch {
      return fill(preview);
    }
    try {
      const match = await api.send("POST", "/predict", { sides });
      const anyNew = match.sides.some((side) => side.players.some((p) => !p.known));
      fill(preview, "Chances: ", sides.map((side, s) => `${side.players.map((k) => roster.name(k)).join(" & ")} ` +
        pct(match.expected_scores[s])).join(" · "),
      match.draw_probability ? ` · draw ${pct(match.draw_probability)}` : "",
      anyNew ? ". New players start at the ladder's starting rating." : "");
    } catch (err) {
      fill(preview, err.message);
    }
  }, 300);

  async function submit(event) {
    event.preventDefault();
    clearMessages();
    showProblem("");
    const result = event.submitter ? event.submitter.value : "a";
    const buttons = [...form.querySelectorAll("button[type=submit]")];
    let game;
    try {
      body(result);
      buttons.forEach((b) => { b.disabled = true; }); // one game per tap, while new names are confirmed too
      const settled = await guarded(confirmNewPlayers);
      buttons.forEach((b) => { b.disabled = false; });
      if (!settled) return;
      game = body(result); // with the names the confirmation settled
    } catch (err) {
      if (!(err instanceof FormProblem)) throw err;
      showProblem(err.message);
      if (err.field) entry(err.field).focus();
      return;
    }
    buttons.forEach((b) => { b.disabled = true; });
    hideToast();
    let posted;
    try {
      posted = await withKey(api.slug, "write", () => api.send("POST", "/games", game));
    } catch (err) {
      showProblem(err instanceof ApiError ? err.message : `Something went wrong: ${err.message}`);
    }
    buttons.forEach((b) => { b.disabled = false; });
    // A disabled button loses the focus: a keyboard user carries on from the button they pressed.
    if (event.submitter && document.activeElement === document.body) event.submitter.focus();
    drawKeyLine();
    if (!posted) return;
    const keys = posted.sides.flatMap((s) => s.players.map((p) => p.key)); // as the ladder keeps them
    roster.remember(keys);
    await roster.learn(keys, api);
    showRecorded(posted, { api, roster, onUndone });
    confirmedNew.clear();
    pickers.flat().forEach((p) => p.clear());
    scores.reset();
    relabel();
    fill(preview);
    prefillMe();
    onRecorded(posted);
  }

  form.addEventListener("change", (event) => {
    if (event.target.name === "mode") draw();
    if (event.target.name === "format") {
      format = event.target.value;
      localStorage.setItem(formatName, format);
      scores.draw(format);
    }
    relabel();
    updatePreview();
  });
  form.addEventListener("input", (event) => {
    if (scores.rows().flat().includes(event.target)) scores.open();
    relabel();
  });
  // Enter in a text box must not record a game (the first button would say who won): only the buttons do.
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target instanceof HTMLInputElement) event.preventDefault();
  });
  form.addEventListener("submit", submit);
  draw();
  drawKeyLine();
  const root = h("div", {}, form, keyLine);
  root.prefillMe = prefillMe; // "me" picked or changed on the page
  root.rematch = rematch; // the results list's "Rematch"
  root.focusFirst = focusFirst;
  return root;
}
