// The record form's game as the API takes it, worked out from what the form holds and nothing else (no page, no
// request): the checks a person can fix, each naming the field to fix, and the body of POST …/games. The form
// (record.js) reads its fields into these and shows a problem beside the field it names.

export const SIDES = ["A", "B"];

// A game that cannot be sent as entered: `message` says why, `field` which entry to fix: ["player", side, n],
// ["place", n] or ["points", game, side].
export class FormProblem extends Error {
  constructor(message, field) {
    super(message);
    this.field = field;
  }
}

// The games each side won, of rows of [side A's points, side B's].
export function gamesWon(rows) {
  const won = [0, 0];
  for (const [x, y] of rows) if (x !== y) won[x > y ? 0 : 1] += 1;
  return won;
}

// The points entered, `rows` of two texts a game, as a row of numbers per game played (null: none): both of a
// row, or neither, in whole numbers. `required`: the points a game is played to, where the ladder asks for them.
export function pointsOf(rows, required = null) {
  const out = [];
  rows.forEach((row, g) => {
    const values = row.map((value) => value.trim());
    if (values.every((v) => v === "")) return;
    const missing = values.findIndex((v) => !/^[0-9]+$/.test(v));
    if (missing >= 0) {
      throw new FormProblem(rows.length === 1 ? "Enter both scores, or neither."
        : `Enter both scores of game ${g + 1}, as whole numbers.`, ["points", g, missing]);
    }
    out.push(values.map(Number));
  });
  if (!out.length && required && rows.length) {
    throw new FormProblem(rows.length === 1 ? `Enter the score of the game to ${required}.`
      : "Enter the points of each game played.", ["points", 0, 0]);
  }
  return out.length ? out : null;
}

// The players of each side, `sides` of keys (empty where none is picked), each picked once; `name(key)` in messages.
export function teamsOf(sides, name = (key) => key) {
  sides.forEach((side, s) => side.forEach((key, n) => {
    if (!key) {
      throw new FormProblem(`Choose ${side.length > 1 ? "both players of team" : "player"} ${SIDES[s]}.`,
        ["player", s, n]);
    }
  }));
  const all = sides.flat();
  const twice = all.find((key, n) => all.indexOf(key) !== n);
  if (twice) {
    let last = all.lastIndexOf(twice); // the later pick is the one to change
    const side = sides.findIndex((players) => (last -= players.length) < 0);
    throw new FormProblem(`${name(twice)} is picked twice.`, ["player", side, last + sides[side].length]);
  }
  return sides;
}

// A free-for-all's sides: each picked player (`keys`, empty where none) with their place (`places`, as typed).
export function freeForAll(keys, places) {
  const rows = keys.map((key, n) => ({ players: [key], rank: Number(places[n]), n })).filter((row) => row.players[0]);
  if (rows.length < 2) throw new FormProblem("A game needs at least two players.", ["player", 0, 0]);
  const unplaced = rows.find((row) => !(row.rank >= 1));
  if (unplaced) throw new FormProblem("Every player needs a place (1 = first).", ["place", unplaced.n]);
  return { sides: rows.map(({ players, rank }) => ({ players, rank })) };
}

// A game of two sides won by `result` ("a", "b" or "draw"): the `sides`' players (teamsOf's), each side's seat
// (`seats`, an object a side), the `points` (pointsOf's), one game or a match (`format`) of `bestOf` games, and
// `sideName(s)` in messages. The score, where there is one, must say what the button says.
export function twoSided({ sides, result, seats = [{}, {}], points = null, format = "game", bestOf = 1, sideName }) {
  const ranks = { a: [1, 2], b: [2, 1], draw: [1, 1] }[result];
  if (!points) return { sides: sides.map((players, s) => ({ players, rank: ranks[s], ...seats[s] })) };
  const won = gamesWon(points); // (a single game: 1-0)
  const needed = Math.floor(bestOf / 2) + 1;
  if (format === "match" && Math.max(...won) < needed) {
    throw new FormProblem(`A best-of-${bestOf} is won with ${needed} games: enter the points of each game ` +
      "played, or choose “One game”.", ["points", points.length, 0]);
  }
  const winner = won[0] > won[1] ? "a" : won[1] > won[0] ? "b" : "draw";
  if (winner !== result) {
    const says = winner === "draw" ? "The score is a draw: press “Draw”"
      : `The score says ${sideName(winner === "a" ? 0 : 1)} won: press “${sideName(winner === "a" ? 0 : 1)} won”`;
    throw new FormProblem(`${says}, or correct the score.`, ["points", 0, 0]);
  }
  if (format === "game") {
    return { sides: sides.map((players, s) => ({ players, rank: ranks[s], score: points[0][s], ...seats[s] })) };
  }
  return { sides: sides.map((players, s) => ({ players, ...seats[s] })), match: points };
}
