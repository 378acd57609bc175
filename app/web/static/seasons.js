// Past seasons on the ladder page: each closed season's final standings as they were archived, read when opened,
// with the number they are ranked by (the sure rating, as the standings' default order).
import { count, fill, h, profileHref, shortDate, whole } from "./dom.js";
import { orderOf } from "./standings-words.js";
import { guarded } from "./ui.js";

const SHOWN = 50; // standings rows shown of a season
const MEDALS = ["🥇", "🥈", "🥉"];

// "Last season: 🥇 Ada 🥈 Bob 🥉 Cy" above the standings, once a season has closed (read again when one closes).
export function lastSeason(api) {
  const element = h("p", { id: "last-season", class: "last-season", hidden: true });
  const load = async () => {
    const [season] = (await api.get("/seasons?limit=1")).items;
    if (!season || !season.podium.length) return;
    element.hidden = false;
    fill(element, h("span", { class: "muted" }, `Last season (${season.name}):`), season.podium.map((p) =>
      [" ", h("span", { class: "medal", "data-rank": p.rank }, `${MEDALS[p.rank - 1]} `,
        h("a", { href: profileHref(api.slug, p.key) }, p.name || p.key))]));
  };
  guarded(load);
  return { element, load };
}

export function pastSeasons(api, ladder) {
  const box = h("div", { id: "seasons-box" });
  const details = h("details", { class: "options", id: "past-seasons" }, h("summary", {}, "Past seasons"), box);
  let loaded = false;
  details.addEventListener("toggle", () => {
    if (!details.open || loaded) return;
    loaded = true;
    guarded(() => load(api, ladder, box));
  });
  return details;
}

// On a ladder whose seasons close themselves (its `season_every`), when the next one closes and what it will hold:
// every game since the latest season, or since the first game, those played before the setting was made included.
function nextSeason(ladder, latest) {
  if (!ladder.season_every) return null;
  const now = new Date();
  const span = ladder.season_every === "quarter" ? 3 : 1;
  const first = now.getUTCMonth() - (now.getUTCMonth() % span); // the period running now, from its first month
  const year = now.getUTCFullYear();
  const name = span === 1 ? `${year}-${String(first + 1).padStart(2, "0")}` : `${year}-Q${first / 3 + 1}`;
  const end = new Date(Date.UTC(year, first + span, 1));
  const day = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });
  let holds = `every game so far (${count(ladder.games, "game")}), those played before seasons closed by themselves ` +
    "included";
  if (latest) {
    holds = latest.last_game ? `the games after “${latest.name}” (from game #${latest.last_game + 1})`
      : `the games since “${latest.name}” closed`;
  }
  return h("p", { id: "next-season", class: "muted" }, `Seasons close by themselves at the end of each ` +
    `${ladder.season_every} (UTC). The next, “${name}”, closes on ${day.format(end)} at 00:00 UTC with ${holds}; ` +
    `a ${ladder.season_every} without games closes none.`);
}

async function load(api, ladder, box) {
  const seasons = (await api.get("/seasons?limit=100")).items;
  const next = nextSeason(ladder, seasons[0]);
  if (!seasons.length) {
    fill(box, next || h("p", { class: "muted" },
      "No season has been closed yet (an admin closes one on the admin page)."));
    return;
  }
  const select = h("select", { id: "season" }, seasons.map((s) => h("option", { value: s.name },
    `${s.name} (closed ${shortDate(new Date(s.closed_at))}, ${count(s.games, "game")})`)));
  const table = h("div", { id: "season-standings" });
  const show = async () => {
    const page = await api.get(`/seasons/${encodeURIComponent(select.value)}?limit=${SHOWN}`);
    const note = page.season.changed_after_closing
      ? h("p", { class: "muted" }, "A game of this season was undone after it closed: these are the standings as " +
        "they were when it closed.") : null;
    const [, , column, meaning] = orderOf("conservative");
    const draws = ladder.play?.draws !== false || page.items.some((r) => r.draws); // W–D–L, else W–L
    fill(table, note, page.items.length ? h("table", { class: "board" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "#"), h("th", {}, "Player"),
        h("th", { class: "num", title: meaning }, column),
        h("th", { class: "num", title: draws ? "Won, drawn, lost" : "Won, lost" }, draws ? "W–D–L" : "W–L"))),
      h("tbody", {}, page.items.map((r) => h("tr", { "data-key": r.key },
        h("td", { class: "num" }, r.provisional ? "–" : r.rank),
        h("td", {}, h("a", { href: profileHref(api.slug, r.key) }, r.name || r.key)),
        h("td", { class: "num", title: `Rating ${whole(r.elo)}, give or take ${whole(2 * r.strength_se)}` },
          whole(r.conservative)),
        h("td", { class: "num wdl" }, draws ? `${r.wins}–${r.draws}–${r.losses}` : `${r.wins}–${r.losses}`))))) :
      h("p", { class: "muted" }, "Nobody played in this season."));
  };
  select.addEventListener("change", () => guarded(show));
  fill(box, next, h("div", { class: "field" }, h("label", { for: "season" }, "Season"), select), table);
  await show();
}
