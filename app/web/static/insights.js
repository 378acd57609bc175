// The mathematics, below the office: who would win, fair teams, learned seats and the ladder's cycles. Drawn the
// first time the section is seen, so that the reports it reads do not slow the page's first render.
import { savedMe } from "./api.js";
import { count, debounce, fill, h, pct, signed, whole } from "./dom.js";
import { discChart } from "./charts.js";
import { picker } from "./picker.js";
import { clearMessages, guarded } from "./ui.js";

const MAX_LABELLED = 60; // beyond this many players the disc chart names only the leaders and "me"
const LEADERS = 10;
// Fewer games than this say nothing about cycles: no measure is shown until then (an empty ladder's 1.00 would read
// as "all cycles").
const CYCLE_GAMES = 30;
// How to read the measure: the same sentence as the README, the mathematics notes and the API's description.
const SCALE = `below 1 the ranking (the transitive part) outweighs the cycles, above 1 the cycles
  (rock-paper-scissors) outweigh the ranking, and 1 means they weigh the same (as when every player is equal)`;

export function insights(box, { api, ladder, roster }) {
  const cycles = h("div", { id: "cycles" }, h("p", { class: "muted" }, "Working out the cycles…"));
  box.append(h("div", { class: "insight-grid" },
    h("div", { class: "insight" }, h("h3", {}, "Who would win?"), whoWouldWin(api, roster)),
    h("div", { class: "insight" }, h("h3", {}, "Fair teams"), fairTeams(api, roster)),
    ladder.seats ? h("div", { class: "insight" }, h("h3", {}, "Seats"), seatList(ladder.seats)) : null),
  h("h3", {}, "Rock-paper-scissors in this ladder"), cycles);
  guarded(() => drawCycles(cycles, api, ladder, roster));
}

function whoWouldWin(api, roster) {
  const out = h("p", { id: "h2h-result", class: "result", "aria-live": "polite" });
  const a = picker({ id: "h2h-a", label: "Player", roster, allowNew: false });
  const b = picker({ id: "h2h-b", label: "Against", roster, allowNew: false });
  const form = h("form", { id: "h2h", class: "stack" }, a.root, b.root,
    h("button", { type: "submit", class: "secondary" }, "Compare"), out);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    if (!a.key || !b.key) return fill(out, "Choose two players.");
    const match = await guarded(() =>
      api.get(`/predict?a=${encodeURIComponent(a.key)}&b=${encodeURIComponent(b.key)}`));
    if (!match) return undefined;
    return fill(out, `${roster.name(a.key)} beats ${roster.name(b.key)} with probability ${pct(match.probability)}`,
      match.draw_probability ? ` (a draw ${pct(match.draw_probability)})` : "", ".");
  });
  return form;
}

// Players chosen one by one with a picker, shown as chips that can be removed.
function playerChips(id, label, roster) {
  const chosen = [];
  const chips = h("ul", { class: "chips", "aria-label": "Players chosen" });
  const draw = () => fill(chips, chosen.map((key) => {
    const remove = h("button", { type: "button", class: "ghost", "aria-label": `Remove ${roster.name(key)}` }, "×");
    remove.addEventListener("click", () => {
      chosen.splice(chosen.indexOf(key), 1);
      draw();
    });
    return h("li", { "data-key": key }, roster.name(key), remove);
  }));
  const pick = picker({ id, label, roster, allowNew: false, exclude: () => new Set(chosen),
    onPick: (key) => {
      chosen.push(key);
      pick.clear();
      draw();
    } });
  return { root: h("div", {}, pick.root, chips), chosen };
}

function fairTeams(api, roster) {
  const who = playerChips("teams-players", "Who is playing", roster);
  const count = h("input", { id: "teams-count", type: "number", min: "2", max: "32", value: "2",
    inputmode: "numeric" });
  const out = h("div", { id: "teams-result", class: "result", "aria-live": "polite" });
  const form = h("form", { id: "teams", class: "stack" }, who.root,
    h("div", { class: "field" }, h("label", { for: "teams-count" }, "Teams"), count),
    h("button", { type: "submit", class: "secondary" }, "Make fair teams"), out);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    const split = await guarded(() => api.send("POST", "/teams", { players: who.chosen, teams: Number(count.value) }));
    if (!split) return;
    const names = (team) => team.map((k) => roster.name(k)).join(" & ");
    fill(out,
      h("ol", {}, split.teams.map((team, n) => h("li", {}, `${names(team)}: wins ${pct(split.win_probabilities[n])}`))),
      h("p", { class: "muted" }, `Match quality ${pct(split.match_quality)} (100% is dead even)` +
        (split.exact ? ", the best of every possible split." : ", the best split a search found.")));
  });
  return form;
}

function seatList(seats) {
  return h("ul", { id: "learned-seats" }, seats.map((seat) => h("li", {},
    `${seat.name}: ${signed(seat.advantage_elo)} ± ${whole(2 * seat.advantage_elo_se)} Elo`)));
}

// In a colleague's words first (is this a straight ladder, or do matchups matter?), the figures a tap away.
function verdict(measure) {
  if (measure < 0.8) return "Mostly a straight ladder: the better player usually wins, whoever they play.";
  if (measure <= 1.25) {
    return "Partly a ladder, partly rock-paper-scissors: some players do better against some styles than the " +
      "standings say.";
  }
  return "More rock-paper-scissors than a ladder: who wins depends on the matchup more than on one ranking.";
}

// Every player is named on the styles chart of a small ladder; on a large one, the first of the standings
// (`leaders`) and "me" on this device, the others in their dots' tooltips.
function named(players, leaders, slug) {
  if (players.length <= MAX_LABELLED) return true;
  const wanted = new Set(leaders);
  const me = savedMe(slug);
  if (me) wanted.add(me);
  return new Set(players.flatMap((p, n) => (wanted.has(p.key) ? [n] : [])));
}

async function drawCycles(box, api, ladder, roster) {
  const progress = (share) => fill(box, h("p", { class: "muted" }, `Working out the cycles… ${pct(share || 0)}`));
  const enough = ladder.games >= CYCLE_GAMES;
  const [canonical, intrans, first] = await Promise.all([api.get("/canonical"),
    enough ? api.report("/intransitivity", progress) : null,
    ladder.players > MAX_LABELLED ? api.get(`/leaderboard?by=conservative&limit=${LEADERS}`) : null]);
  const leaders = first ? first.items.map((p) => p.key) : [];
  const points = canonical.players.map((p) => ({ label: roster.name(p.key), x: p.coordinates[0],
    y: p.coordinates[1] }));
  const block = canonical.blocks[0];
  const chart = h("div", { class: "chart-box" });
  const draw = () => {
    const width = chart.clientWidth || 560;
    fill(chart, points.length ? discChart(points, width, { labelled: named(canonical.players, leaders, api.slug) })
      : h("p", { class: "muted" }, "No players yet."));
  };
  const said = enough ? verdict(intrans.measure) : "Too few games yet to tell whether some players beat " +
    "others in a circle (Ann beats Bob, Bob beats Cy, Cy beats Ann): ask again after " +
    `${count(CYCLE_GAMES - ladder.games, "more game")}.`;
  fill(box,
    h("p", { id: "intransitivity" }, said),
    points.length ? h("figure", { class: "styles" }, chart,
      h("figcaption", { class: "muted note" }, "Styles of play: each dot is a player. Players in the same " +
        "direction from the centre play alike; further out, the style counts for more." +
        (points.length > MAX_LABELLED ? ` Named: the first ${LEADERS} of the standings and you; a dot tells ` +
          "its name when pointed at." : ""))) : chart,
    enough ? h("details", { class: "options", id: "cycles-maths" }, h("summary", {}, "The figures behind it"),
      h("p", {}, `Intransitivity ${intrans.measure.toFixed(2)}: ${SCALE}.`),
      block ? h("p", { class: "muted" }, `Largest disc: ${block.kind}, ${pct(block.share)} of the advantages. A ` +
        "player's angle is their style and their distance from the centre their weight: in a transitive disc " +
        "players further along the arc beat those behind; in a cyclic disc each beats the next around the " +
        "circle.") : null) : null);
  draw();
  window.addEventListener("resize", debounce(draw, 200));
}
