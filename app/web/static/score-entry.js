// The score of a game of two sides, as the record form asks it: each side's points in one row, or a row per game
// of a best-of-3 or 5 (a match decided early leaves the last rows empty). Optional, unless the ladder plays games
// to a number of points.
import { fill, h } from "./dom.js";
import { SIDES, gamesWon } from "./game-body.js";

// The entry in `box` for a ladder that plays `play`; `sideName(s)` names a side as the form does.
export function scoreEntry({ play, box, sideName }) {
  const needed = Math.floor(play.best_of / 2) + 1; // the games that win a match
  let rows = []; // per game, [side A's points box, side B's]

  // A match's later games open as they are needed: a game's row once each game before it has both points and
  // neither side has won the match yet, so that Tab and Shift+Tab never stop at a Game 3 that a 2-0 does not play.
  // A row that closes again (a score corrected) is emptied.
  function open() {
    if (rows.length < 2) return;
    const played = [];
    let opened = true;
    for (const row of rows) {
      row.forEach((input) => {
        input.disabled = !opened;
        if (!opened) input.value = "";
      });
      const values = row.map((input) => input.value.trim());
      opened = opened && values.every((v) => /^[0-9]+$/.test(v));
      if (opened) played.push(values.map(Number));
      opened = opened && Math.max(...gamesWon(played)) < needed;
    }
  }

  // The boxes' names follow the players picked.
  function label() {
    rows.forEach((row, g) => row.forEach((input, s) => input.setAttribute("aria-label",
      `Points of ${sideName(s)}${rows.length > 1 ? ` in game ${g + 1}` : ""}`)));
    box.querySelectorAll(".score-side").forEach((span, s) => { span.textContent = sideName(s); });
  }

  // The rows of a `format` ("match" or "game"), with the choice between them where the ladder plays matches.
  function draw(format) {
    const games = format === "match" ? play.best_of : 1;
    const choice = play.best_of > 1 ? h("fieldset", { id: "format", class: "inline-choice" },
      h("legend", { class: "sr-only" }, "A match or one game"),
      [["match", `Match (best of ${play.best_of})`], ["game", "One game"]].map(([value, text]) => h("label", {},
        h("input", { type: "radio", name: "format", value, checked: value === format }), h("span", {}, text))))
      : null;
    rows = Array.from({ length: games }, (_, g) => SIDES.map((side) => h("input", {
      id: games === 1 ? `score-${side.toLowerCase()}` : `game-${g + 1}-${side.toLowerCase()}`, class: "points",
      type: "number", min: "0", step: "1", inputmode: "numeric" })));
    const to = play.points ? ` to ${play.points}` : "";
    const legend = games === 1 ? `Score${to}${play.points ? "" : " (optional)"}`
      : `Points of each game${to} (best of ${games}${play.points ? "" : ", optional"})`;
    fill(box, choice, h("fieldset", { id: "score", class: "score-grid" }, h("legend", {}, legend),
      h("span", {}), SIDES.map((_, s) => h("span", { class: "score-side", "aria-hidden": "true" }, sideName(s))),
      rows.map((row, g) => [h("span", { class: "muted" }, games === 1 ? "Points" : `Game ${g + 1}`), row])));
    label();
    open();
  }

  return {
    draw,
    open,
    label,
    rows: () => rows,
    // No score asked (a free-for-all).
    clear() {
      rows = [];
      fill(box);
    },
    // Every box emptied, for the next game.
    reset() {
      rows.flat().forEach((input) => { input.value = ""; });
      open();
    },
  };
}
