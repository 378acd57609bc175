// A player's page: rating and how sure it is, what their last game did and how others' games moved them since,
// form, streaks, rating over time against dates from the starting rating, head-to-head records (singles, doubles
// and partners apart) with today's chances, recent games with partners and rating changes, and who to play next
// with what each game would win or lose. It follows the ladder's event stream and redraws when one of the
// player's games is recorded or undone.
import { LadderApi } from "./api.js";
import { announce, challengeButton } from "./challenges.js";
import { ratingChart } from "./charts.js";
import { changeClass, debounce, fill, fullDate, h, pct, profileHref, shortDate, signed, timeAgo,
  whole } from "./dom.js";
import { follow } from "./live.js";
import { badge, certainty, formChips, keyShown, ladderHeader, ladderName, loadLadder, playerName, setTitle,
  showLive } from "./parts.js";
import { Roster } from "./picker.js";
import { guarded, say, withKey } from "./ui.js";

const HISTORY = 500; // games read for the chart and streaks (the API's largest page)
const RIVALS = 20; // players in the head-to-head table
const RECENT = 15; // games listed
const MAX_SIDES = 64; // sides one prediction may have
const VERBS = { win: "Beat", draw: "Drew with", loss: "Lost to" };
const LETTER = { win: "W", draw: "D", loss: "L" };

export async function playerView(view, slug, key) {
  const api = new LadderApi(slug);
  // The player and their games are read while the ladder is, not after it.
  api.readAhead(api.playerPath(key));
  api.readAhead(`${api.playerPath(key)}/history?limit=${HISTORY}`);
  api.readAhead(`${api.playerPath(key)}/head-to-head?limit=${RIVALS}`);
  const ladder = await loadLadder(api);
  ladderHeader(ladder);
  const page = new ProfilePage(view, api, ladder, key);
  await page.start();
}

class ProfilePage {
  constructor(view, api, ladder, key) {
    this.view = view;
    this.api = api;
    this.ladder = ladder;
    this.key = key;
    this.roster = new Roster();
    this.refresh = debounce(() => guarded(() => this.load()), 250);
    this.chances = new Map(); // rival's key: today's chance to beat them
  }

  async start() {
    await this.read(); // an unknown player is said before anything is drawn
    this.layout();
    this.draw();
    performance.mark("melo:content"); // the first render, as bench/bench_pages.py measures it
    guarded(() => this.loadNames());
    follow(this.api.slug, this.eventHandlers(), showLive);
    window.addEventListener("resize", debounce(() => this.drawChart(), 200));
  }

  layout() {
    this.parts = {
      head: h("div", { class: "page-head" }),
      stats: h("div", { class: "stats", id: "stats" }),
      chart: h("div", { class: "chart-box", id: "chart" }),
      rivals: h("div", { id: "rivals" }),
      games: h("div", { id: "games" }),
      next: h("div", { id: "next-box" }),
      more: h("div", { id: "more" }),
      past: h("div", { id: "past" }),
    };
    const p = this.parts;
    const back = h("p", { class: "back profile-back" }, h("a", { href: `/ladders/${encodeURIComponent(this.api.slug)}` },
      `← ${ladderName(this.ladder)}`));
    this.renameBox = h("div");
    fill(this.view, back, p.head, p.stats,
      h("div", { class: "profile-grid" },
        h("section", { class: "panel wide", "aria-labelledby": "chart-title" },
          h("h2", { id: "chart-title" }, "Rating over time"), p.chart,
          h("p", { class: "muted note" }, "From the starting rating (the hollow point), each point is the rating " +
            "after a game, against today's field.")),
        h("section", { class: "panel", "aria-labelledby": "rivals-title" },
          h("h2", { id: "rivals-title" }, "Head to head"), p.rivals),
        h("section", { class: "panel", "aria-labelledby": "games-title" },
          h("h2", { id: "games-title" }, "Recent games"), p.games),
        h("section", { class: "panel", "aria-labelledby": "next-title" },
          h("h2", { id: "next-title" }, "Who to play next"), p.next),
        h("section", { class: "panel", "aria-labelledby": "past-title" },
          h("h2", { id: "past-title" }, "Back in time"), p.past),
        h("section", { class: "panel", "aria-labelledby": "more-title" },
          h("h2", { id: "more-title" }, "More about the rating"), p.more, this.renameBox)));
    fill(p.past, this.pastForm());
  }

  // The player as they stood at the end of a chosen day (the API's as_of), a month at a time.
  // The day starts at today and cannot go before the day of the ladder's first game (nothing counted before it).
  pastForm() {
    const day = h("input", { type: "date", id: "as-of-date", "aria-label": "Day" });
    const result = h("p", { id: "past-result", "aria-live": "polite" });
    const today = new Date().toISOString().slice(0, 10);
    day.value = today;
    day.max = today;
    guarded(async () => {
      try {
        const first = await this.api.get("/games/1");
        day.min = new Date(first.played_at).toISOString().slice(0, 10);
      } catch (error) {
        if (error.status !== 404) throw error;
        day.min = today; // no game yet
      }
    });
    const show = async () => {
      if (!day.value) return;
      const end = new Date(`${day.value}T00:00:00Z`);
      end.setUTCDate(end.getUTCDate() + 1); // the whole day: games played before the next one began
      const label = shortDate(new Date(`${day.value}T12:00:00Z`));
      try {
        const then = await this.api.get(`${this.api.playerPath(this.key)}?as_of=${end.toISOString()}`);
        fill(result, h("b", {}, `${whole(then.elo)} Elo`), ` ± ${whole(2 * then.strength_se)} at the end of ${label}`,
          h("br"), `${then.games} games: ${then.wins} won, ${then.draws} drawn, ${then.losses} lost`);
      } catch (error) {
        if (error.status !== 404) throw error;
        fill(result, `Not on the ladder yet at the end of ${label}.`);
      }
    };
    const step = (months) => {
      const at = new Date(`${day.value || today}T00:00:00Z`);
      at.setUTCMonth(at.getUTCMonth() + months);
      const wanted = at.toISOString().slice(0, 10);
      day.value = wanted > today ? today : day.min && wanted < day.min ? day.min : wanted;
      guarded(show);
    };
    day.addEventListener("change", () => guarded(show));
    const earlier = h("button", { type: "button", class: "secondary", id: "month-earlier" }, "← A month earlier");
    const later = h("button", { type: "button", class: "secondary", id: "month-later" }, "A month later →");
    earlier.addEventListener("click", () => step(-1));
    later.addEventListener("click", () => step(1));
    fill(result, "Pick a day to see the rating as it stood at its end."); // read on request: it is a pass over the log
    return h("div", { class: "stack" }, h("div", { class: "inline-form" }, earlier, day, later), result,
      h("p", { class: "muted note" }, "Ratings, record and uncertainty as the games up to that day give them."));
  }

  async read() {
    const path = this.api.playerPath(this.key);
    const [player, history, rivals] = await Promise.all([this.api.get(path),
      this.api.get(`${path}/history?limit=${HISTORY}`), this.api.get(`${path}/head-to-head?limit=${RIVALS}`)]);
    this.player = player;
    this.rivals = rivals.items;
    this.key = player.key; // an alias or another case leads to the player's own key
    this.history = history.items; // newest first
    this.wholeHistory = !history.next_cursor; // a page may hold fewer games than asked (large team games)
    // The first game's date: the earliest one read (games keep the dates they were posted with, in any order),
    // or the player's creation if earlier when the history read is only the latest games.
    const earliest = Math.min(...this.history.map((g) => Date.parse(g.played_at)));
    this.since = history.next_cursor ? Math.min(earliest, Date.parse(player.created_at)) : earliest;
  }

  async load() {
    await this.read();
    this.draw();
  }

  draw() {
    setTitle(playerName(this.player), ladderName(this.ladder));
    this.drawHead();
    this.drawStats();
    this.drawChart();
    this.drawGames();
    this.drawRivals();
    this.drawMore();
    if (!this.renameBox.firstChild) fill(this.renameBox, this.renameForm());
    guarded(() => this.predictRivals());
    guarded(() => this.drawNext());
  }

  // The players' names, read after the first render (a key stands in until then).
  async loadNames() {
    this.roster.replace(await this.api.all("/leaderboard?by=hodge&limit=500&inactive=true"));
    this.drawChart();
    this.drawGames();
    this.drawRivals();
  }

  drawHead() {
    const p = this.player;
    fill(this.parts.head, h("h1", {}, playerName(p)),
      h("p", { class: "muted" }, p.provisional ? [badge(p), " "] : null,
        keyShown(p) ? `Key ${keyShown(p)}` : null),
      challengeButton({ api: this.api, roster: this.roster, to: p.key, toLabel: playerName(p) }));
  }

  drawStats() {
    const p = this.player;
    const twoSe = 2 * p.strength_se;
    const results = this.history.map((g) => g.result).filter(Boolean);
    const streak = streaks(results);
    const card = (id, label, ...value) => h("div", { class: "stat", id }, h("span", { class: "label" }, label),
      h("span", { class: "value" }, value));
    fill(this.parts.stats,
      card("rating", "Rating", h("b", {}, whole(p.elo)), h("small", {},
        `give or take ${whole(twoSe)}: ${certainty(twoSe)}`)),
      card("record-card", "Games", h("b", {}, p.games),
        h("small", {}, this.ladder.play?.draws === false && !p.draws ? `${p.wins} won, ${p.losses} lost`
          : `${p.wins} won, ${p.draws} drawn, ${p.losses} lost`)),
      card("form", "Form", formChips(results.slice(0, 5).map((r) => LETTER[r]))),
      card("streak", "Streak", h("b", {}, streak.current), h("small", {}, `best: ${streak.best}`)),
      card("last-played", "Last game", ...this.lastGame()));
  }

  // What the player's own last game did to their rating, and apart, how others' games have moved it since.
  lastGame() {
    const p = this.player;
    if (!p.last_played_at) return ["never"];
    const own = p.last_game_change;
    const moved = p.change_since_last_game;
    return [
      own === null || own === undefined ? null
        : h("b", { class: ["chg", changeClass(own)], id: "last-change" }, `${signed(own)} Elo`),
      h("small", {}, timeAgo(p.last_played_at)),
      moved === null || moved === undefined || Math.round(moved) === 0 ? null
        : h("small", { id: "moved-since" }, `Others' games moved you ${signed(moved)} since`),
    ];
  }

  drawChart() {
    const games = this.history.slice().reverse();
    if (!games.length) return fill(this.parts.chart, h("p", { class: "muted" }, "No games yet."));
    // The rating before the first game read, a little before it (an hour, or a twentieth of the span): where
    // the line starts, so that one game is a line from the starting rating to the rating after it.
    const times = games.map((g) => Date.parse(g.played_at));
    const lead = Math.max(3600e3, (Math.max(...times) - Math.min(...times)) / 20);
    const begin = games[0];
    const complete = this.wholeHistory;
    const start = { time: Date.parse(begin.played_at) - lead, elo: begin.elo_before, start: true,
      title: `${complete ? "Starting rating" : `Before ${fullDate(begin.played_at)}`}: ${whole(begin.elo_before)}` };
    const points = [start, ...games.map((g) => ({
      time: Date.parse(g.played_at),
      elo: g.elo_after,
      title: `${fullDate(g.played_at)}: ${g.result ? `${VERBS[g.result].toLowerCase()} ` : "vs "}` +
        `${this.names(g.opponents)}, ${whole(g.elo_after)}` +
        (g.elo_change === undefined ? "" : ` (${signed(g.elo_change)})`),
    }))];
    const width = this.parts.chart.clientWidth || 600;
    return fill(this.parts.chart, ratingChart(points, width));
  }

  names(keys) {
    return keys.map((k) => this.roster.name(k)).join(" & ");
  }

  drawGames() {
    const shown = this.history.slice(0, RECENT);
    const link = (k) => h("a", { href: profileHref(this.api.slug, k) }, this.roster.name(k));
    const and = (keys) => keys.map((k, n) => [n ? " & " : "", link(k)]);
    fill(this.parts.games, shown.length ? h("ul", { class: "history", id: "history" }, shown.map((g) => h("li", {
      "data-game": g.game_id },
    h("span", { class: `r r-${(LETTER[g.result] || "x").toLowerCase()}`, "aria-hidden": "true" },
      LETTER[g.result] || "·"),
    h("span", { class: "what" }, g.result ? `${VERBS[g.result]} ` : "Against ", and(g.opponents),
      g.partners && g.partners.length ? [h("span", { class: "muted" }, " with "), and(g.partners)] : null,
      scoreText(g) ? [" ", h("span", { class: "score" }, scoreText(g))] : null),
    g.elo_change === undefined ? null : h("span", { class: ["chg", changeClass(g.elo_change)] }, signed(g.elo_change)),
    h("span", { class: "meta" }, timeAgo(g.played_at), ` · #${g.game_id}`))))
      : h("p", { class: "muted" }, "No games yet."));
  }

  // The players met most often, with the record against them in singles and in doubles, and with them as partner
  // (and in free-for-alls, when there were any), as the API counts them over all the player's games: won–lost
  // where the ladder plays no draws (and none was recorded before it said so).
  drawRivals() {
    const rivals = this.rivals;
    const ffa = rivals.some((r) => r.free_for_all.games);
    const kinds = ["singles", "doubles", "partners", "free_for_all"];
    const draws = this.ladder.play?.draws !== false || rivals.some((r) => kinds.some((kind) => r[kind].draws));
    const record = (r) => (!r.games ? "–"
      : draws ? `${r.wins}–${r.draws}–${r.losses}` : `${r.wins}–${r.losses}`);
    const words = (kind, r) => (!r.games ? `${kind}: none` : `${kind}: ${r.wins} won, ` +
      (draws ? `${r.draws} drawn, ${r.losses} lost` : `${r.losses} lost`));
    const [wdl, ahead] = draws ? ["won–drawn–lost", "ahead–level–behind"] : ["won–lost", "ahead–behind"];
    const head = (text, title) => h("th", { class: "num", scope: "col" }, h("abbr", { title }, text));
    fill(this.parts.rivals, rivals.length ? [h("table", { id: "rivals-table", class: "compact" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Player"),
        head("Singles", `Singles against them: ${wdl}`),
        head("Doubles", `Doubles against them: ${wdl}`),
        head("With", `Games with them as partner: ${wdl}`),
        ffa ? head("Free-for-all", `Free-for-alls with them: finished ${ahead}`) : null,
        head("Chance", "Chance to beat them in a singles game now"))),
      h("tbody", {}, rivals.map((r) => h("tr", { "data-key": r.key },
        h("td", {}, h("a", { href: profileHref(this.api.slug, r.key) }, r.name || this.roster.name(r.key))),
        h("td", { class: "num singles", title: words("Singles", r.singles) }, record(r.singles)),
        h("td", { class: "num doubles", title: words("Doubles against", r.doubles) }, record(r.doubles)),
        h("td", { class: "num partners", title: words("As partners", r.partners) }, record(r.partners)),
        ffa ? h("td", { class: "num ffa", title: words("Free-for-alls", r.free_for_all) }, record(r.free_for_all))
          : null,
        h("td", { class: "num chance" }, this.chances.has(r.key) ? pct(this.chances.get(r.key)) : "…"))))),
    h("p", { class: "muted note" },
      `${draws ? "Won–drawn–lost" : "Won–lost"} in singles and doubles against them, and with them as partner.`)]
      : h("p", { class: "muted" }, "No opponents yet."));
  }

  // Today's chance to beat each rival, from one prediction of them all at once: the matrix of a many-sided match
  // holds every pair's probability.
  async predictRivals() {
    for (let start = 0; start < this.rivals.length; start += MAX_SIDES - 1) {
      const group = this.rivals.slice(start, start + MAX_SIDES - 1);
      const match = await this.api.send("POST", "/predict",
        { sides: [{ players: [this.key] }, ...group.map((r) => ({ players: [r.key] }))] });
      group.forEach((r, n) => this.chances.set(r.key, match.matrix[0][n + 1]));
    }
    this.drawRivals();
  }

  // The games that would tell the most about the rating now, each with what it would win or lose and why.
  async drawNext() {
    const next = await this.api.get(`${this.api.playerPath(this.key)}/opponents?purpose=next&limit=5`);
    fill(this.parts.next, next.items.length ? [
      h("p", { class: "muted" }, "Games that would settle the rating most, and what each would win or lose:"),
      h("ul", { id: "next", class: "suggestions" }, next.items.map((o) => h("li", { "data-key": o.key },
        h("a", { href: profileHref(this.api.slug, o.key) }, o.name || o.key),
        h("span", { class: "stakes" }, h("span", { class: "up" }, `win ${signed(o.if_win)}`), ", ",
          h("span", { class: "down" }, `lose ${signed(o.if_lose)}`)),
        h("span", { class: "reason muted" }, o.reason,
          o.last_played ? [" Last played together ", timeAgo(o.last_played), "."] : null))))]
      : h("p", { class: "muted" }, "Nobody yet."));
  }

  drawMore() {
    const p = this.player;
    const own = p.last_game_change;
    const moved = p.change_since_last_game;
    fill(this.parts.more, h("dl", { class: "facts" },
      h("div", {}, h("dt", {}, "Rating"), h("dd", {}, `${whole(p.elo)} Elo ± ${whole(2 * p.strength_se)} ` +
        "(two standard errors: the range the results support with about 95% confidence)")),
      h("div", {}, h("dt", {}, "Sure rating"), h("dd", {}, `${whole(p.conservative)}: the rating we are sure of, ` +
        "the rating less what it may still be off by; the standings are in this order")),
      own === null || own === undefined ? null : h("div", { id: "own-last-game" }, h("dt", {}, "Last game"),
        h("dd", {}, `${signed(own)} Elo from the player's own last game`)),
      moved === null || moved === undefined ? null : h("div", { id: "others-since" }, h("dt", {}, "Since then"),
        h("dd", {}, Math.round(moved) === 0 ? "Others' games have not moved the rating." : `Others' games moved ` +
          `the rating ${signed(moved)}: a rating is measured against everyone, so it shifts a little as others play.`)),
      p.provisional_reason ? h("div", { id: "why-provisional" }, h("dt", {}, p.provisional ? "Provisional" : "Placed"),
        h("dd", {}, p.provisional_reason)) : null,
      p.inactive_reason ? h("div", { id: "why-inactive" }, h("dt", {}, "Off the standings"),
        h("dd", {}, p.inactive_reason)) : null,
      p.aliases && p.aliases.length ? h("div", {}, h("dt", {}, "Also known as"),
        h("dd", { id: "aliases" }, `Also posted as ${p.aliases.join(", ")} (key ${p.key}).`)) : null,
      Number.isFinite(this.since) ? h("div", {}, h("dt", {}, "Playing since"),
        h("dd", {}, shortDate(new Date(this.since)))) : null));
  }

  // Rename (a write key, asked for once and kept in this browser as on the ladder page).
  renameForm() {
    const name = h("input", { id: "new-name", value: this.player.name || "", maxlength: "200", autocomplete: "off" });
    const form = h("form", { id: "rename-form", class: "inline-form" },
      h("div", { class: "field" }, h("label", { for: "new-name" }, "Name"), name),
      h("button", { type: "submit", id: "rename-submit", class: "secondary" }, "Rename"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = { name: name.value.trim() || null };
      const changed = await guarded(() => withKey(this.api.slug, "write", () =>
        this.api.send("PATCH", this.api.playerPath(this.key), body)));
      if (!changed) return;
      this.player = { ...this.player, ...changed };
      this.drawHead();
      setTitle(playerName(changed), ladderName(this.ladder));
      say(`Renamed to ${playerName(changed)}.`, "info");
    });
    return h("details", { class: "options", id: "rename" }, h("summary", {}, "Change the name"), form);
  }

  eventHandlers() {
    const mine = (game) => game.sides.some((s) => s.players.some((p) => p.key === this.key));
    const reload = () => this.refresh();
    return {
      // A change between the page's reads and the stream's start: read again.
      hello: (data) => data.version > (this.player?.ladder_version ?? 0) && reload(),
      game: (data) => mine(data.game) && reload(),
      void: (data) => mine(data.game) && reload(),
      player: (data) => {
        if (data.was === this.key) this.key = data.key; // their key changed: follow it
        if (data.key === this.key || data.into === this.key) reload();
      },
      challenge: (data) => data.action === "created" && announce(data.challenge, this.api.slug),
      refit: reload,
      ladder: reload,
      reset: reload,
    };
  }
}

// The current run of equal results ("3 wins") and the longest run of wins, from results newest first.
function streaks(results) {
  const plural = { win: ["win", "wins"], draw: ["draw", "draws"], loss: ["loss", "losses"] };
  const words = (n, r) => `${n} ${plural[r][n === 1 ? 0 : 1]}`;
  let current = 0;
  while (current < results.length && results[current] === results[0]) current += 1;
  let best = 0;
  let run = 0;
  for (const r of results) {
    run = r === "win" ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return {
    current: results.length ? words(current, results[0]) : "none yet",
    best: best ? words(best, "win") : "no wins yet",
  };
}

// A two-sided game's score from the player's side ("21–15"), a match with its games ("2–1: 11–7, 9–11, 11–5");
// null where none was given.
function scoreText(g) {
  const s = g.scores;
  if (!s || s.length !== 2 || s.some((x) => x === null || x === undefined)) return null;
  const [mine, theirs] = [g.side, 1 - g.side];
  const games = g.match ? `: ${g.match.map((p) => `${p[mine]}–${p[theirs]}`).join(", ")}` : "";
  return `${s[mine]}–${s[theirs]}${games}`;
}
