// Recording a game in seconds: pick the players (suggested as you type), press who won. Singles, doubles and
// free-for-all in one form, as far as the ladder plays them (its `play`), with the score: points for a game, or
// each game's points for a best-of-3 or 5 (a ladder that plays matches plays single games too: the form offers
// both, the match first); the seat question only on ladders that learn seats. The toast that
// follows shows each player's rating change and can undo the game.
import { ApiError, savedKey, forgetKey } from "./api.js";
import { changeClass, debounce, fill, h, pct, signed, whole } from "./dom.js";
import { FormProblem, SIDES, freeForAll, gamesWon, pointsOf, teamsOf, twoSided } from "./game-body.js";
import { picker } from "./picker.js";
import { ask, clearMessages, guarded, hideToast, say, showInView, toast, withKey } from "./ui.js";

const MODES = [["singles", "Singles"], ["doubles", "Doubles"], ["ffa", "Free-for-all"]];
const PLAYED_AS = { singles: "singles", doubles: "doubles", ffa: "free_for_all" }; // each mode's kind in `play`

// Seats in an office's words; other seats are named as the ladder names them.
const SEAT_QUESTIONS = {
  server: "Who served first?",
  white: "Who played white?",
  home: "Who played at home?",
  first: "Who went first?",
};
const seatQuestion = (seat) => SEAT_QUESTIONS[seat.toLowerCase()] || `Who took the “${seat}” seat?`;

// The record form. `onRecorded(game)` and `onUndone(game)` let the page show the change at once; `me()` is the key
// of who uses this device, filled in as the first player.
export function recordForm({ api, ladder, roster, onRecorded, onUndone, me = () => "" }) {
  const seats = (ladder.seats || []).map((s) => s.name);
  // What the ladder plays: every kind unless it says otherwise.
  const play = { draws: true, points: null, best_of: 1, ...ladder.play };
  const needed = Math.floor(play.best_of / 2) + 1; // the games that win a match
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
  let scoreRows = []; // singles and doubles: per game, [side A's points box, side B's]

  const mode = () => form.querySelector("input[name=mode]:checked").value;

  // The players picked in every picker but `except`: not suggested twice in one game.
  const pickedElsewhere = (except) => () =>
    new Set(pickers.flat().filter((p) => p !== except.current).map((p) => p.key).filter(Boolean));

  const nextPicker = () => pickers.flat().find((p) => !p.key); // the first player still to pick

  // After a pick by click or Enter, on to the next empty picker, or to the buttons when every player is there.
  function advance(how) {
    if (how === "tab") return;
    const next = nextPicker();
    const points = scoreRows.flat().find((input) => input.offsetParent !== null); // the score, where it is asked
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
    drawSeats();
    drawScores();
  }

  // The score: each side's points in one row, or a row per game of a best-of-3 or 5 (a match decided early
  // leaves the last rows empty). Optional, unless the ladder plays games to a number of points.
  function drawScores() {
    const games = format === "match" ? play.best_of : 1;
    const choice = play.best_of > 1 ? h("fieldset", { id: "format", class: "inline-choice" },
      h("legend", { class: "sr-only" }, "A match or one game"),
      [["match", `Match (best of ${play.best_of})`], ["game", "One game"]].map(([value, label]) => h("label", {},
        h("input", { type: "radio", name: "format", value, checked: value === format }), h("span", {}, label))))
      : null;
    scoreRows = Array.from({ length: games }, (_, g) => SIDES.map((side) => h("input", {
      id: games === 1 ? `score-${side.toLowerCase()}` : `game-${g + 1}-${side.toLowerCase()}`, class: "points",
      type: "number", min: "0", step: "1", inputmode: "numeric" })));
    const to = play.points ? ` to ${play.points}` : "";
    const legend = games === 1 ? `Score${to}${play.points ? "" : " (optional)"}`
      : `Points of each game${to} (best of ${games}${play.points ? "" : ", optional"})`;
    fill(scoreBox, choice, h("fieldset", { id: "score", class: "score-grid" }, h("legend", {}, legend),
      h("span", {}), SIDES.map((_, s) => h("span", { class: "score-side", "aria-hidden": "true" }, sideName(s))),
      scoreRows.map((row, g) => [h("span", { class: "muted" }, games === 1 ? "Points" : `Game ${g + 1}`), row])));
    labelScores();
    openGames();
  }

  // A match's later games open as they are needed: a game's row once each game before it has both points and
  // neither side has won the match yet, so that Tab and Shift+Tab never stop at a Game 3 that a 2-0 does not play.
  // A row that closes again (a score corrected) is emptied.
  function openGames() {
    if (scoreRows.length < 2) return;
    const played = [];
    let open = true;
    for (const row of scoreRows) {
      row.forEach((input) => {
        input.disabled = !open;
        if (!open) input.value = "";
      });
      const values = row.map((input) => input.value.trim());
      open = open && values.every((v) => /^[0-9]+$/.test(v));
      if (open) played.push(values.map(Number));
      open = open && Math.max(...gamesWon(played)) < needed;
    }
  }

  function labelScores() {
    scoreRows.forEach((row, g) => row.forEach((input, s) => input.setAttribute("aria-label",
      `Points of ${sideName(s)}${scoreRows.length > 1 ? ` in game ${g + 1}` : ""}`)));
    scoreBox.querySelectorAll(".score-side").forEach((span, s) => { span.textContent = sideName(s); });
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
    fill(seatBox);
    fill(scoreBox);
    scoreRows = [];
  }

  // The seat question, only on ladders that learn seats: with two seats, who had the first one; with more, a
  // seat for each side.
  function drawSeats() {
    if (!seats.length) return fill(seatBox);
    if (seats.length === 2) {
      return fill(seatBox, h("fieldset", { id: "seat-choice", class: "inline-choice" },
        h("legend", {}, seatQuestion(seats[0])),
        [["0", sideName(0)], ["1", sideName(1)], ["", "Not noted"]].map(([value, label], n) => h("label", {},
          h("input", { type: "radio", name: "seat", value, checked: n === 0 }), h("span", { class: "seat-side" },
            label)))));
    }
    return fill(seatBox, SIDES.map((side, s) => h("div", { class: "field" },
      h("label", { for: `seat-${side.toLowerCase()}` }, `Seat of ${sideName(s)}`),
      h("select", { id: `seat-${side.toLowerCase()}` }, h("option", { value: "" }, "Not noted"),
        seats.map((name) => h("option", { value: name }, name))))));
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
    form.querySelectorAll(".seat-side").forEach((span, n) => { if (n < 2) span.textContent = sideName(n); });
    labelScores();
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

  function seatsOf() {
    if (!seats.length) return [{}, {}];
    if (seats.length === 2) {
      const first = form.querySelector("input[name=seat]:checked").value;
      if (first === "") return [{}, {}];
      return first === "0" ? [{ seat: seats[0] }, { seat: seats[1] }] : [{ seat: seats[1] }, { seat: seats[0] }];
    }
    return SIDES.map((side) => {
      const value = form.querySelector(`#seat-${side.toLowerCase()}`).value;
      return value ? { seat: value } : {};
    });
  }

  function teams() {
    return teamsOf(pickers.map((side) => side.map((p) => p.key)), (key) => roster.name(key));
  }

  function body(result) {
    if (mode() === "ffa") return freeForAll(pickers.map((p) => p.key), places.map((place) => place.value));
    const sides = teams(); // the players first, then the seats and the score, as a person fills the form in
    const seats = seatsOf();
    const points = pointsOf(scoreRows.map((row) => row.map((input) => input.value)), play.points);
    return twoSided({ sides, result, seats, points, format, bestOf: play.best_of, sideName });
  }

  // The entry a problem names (FormProblem's `field`).
  function entry([kind, a, b]) {
    if (kind === "place") return places[a];
    if (kind === "points") return (scoreRows[a] || scoreRows[0])[b];
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
        ({ players, ...seatsOf()[s] }));
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

  function showRecorded(game) {
    const changes = game.sides.flatMap((side) => side.players).map((p) => h("li", { "data-key": p.key },
      h("span", { class: "who" }, roster.name(p.key)), " ",
      h("span", { class: ["chg", changeClass(p.elo_change)] }, signed(p.elo_change)),
      h("span", { class: "muted" }, ` → ${whole(p.elo_after)}`)));
    const undo = h("button", { type: "button", class: "secondary", id: "toast-undo" }, "Undo");
    undo.addEventListener("click", () => guarded(async () => {
      undo.disabled = true;
      const voided = await withKey(api.slug, "write", () => api.send("DELETE", `/games/${game.id}`));
      if (!voided) {
        undo.disabled = false;
        return;
      }
      toast(h("p", {}, `Game #${game.id} undone: it no longer counts.`));
      onUndone(voided);
    }));
    const sizes = new Set(game.sides.flatMap((side) => side.players).map((p) => Math.round(Math.abs(p.elo_change))));
    // Why the gains and losses differ, told once on this device (the toast stays short from the next game on).
    const told = "melo-told:changes-why";
    const why = sizes.size > 1 && !localStorage.getItem(told) ? h("p", { class: "muted", id: "changes-why" },
      "Gains and losses differ: a rating still settling moves more than a settled one, and each is measured " +
      "against the whole field.") : null;
    if (why) localStorage.setItem(told, "1");
    toast([h("p", { class: "toast-title" }, `Game #${game.id} recorded.`), h("ul", { id: "changes" }, changes), why],
      undo);
  }

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
    showRecorded(posted);
    confirmedNew.clear();
    pickers.flat().forEach((p) => p.clear());
    scoreRows.flat().forEach((input) => { input.value = ""; });
    openGames();
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
      drawScores();
    }
    relabel();
    updatePreview();
  });
  form.addEventListener("input", (event) => {
    if (scoreRows.flat().includes(event.target)) openGames();
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
