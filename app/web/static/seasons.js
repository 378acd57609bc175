// Past seasons on the ladder page: each closed season's final standings as they were archived, read when opened.
import { count, fill, h, profileHref, shortDate, whole } from "./dom.js";
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

export function pastSeasons(api) {
  const box = h("div", { id: "seasons-box" });
  const details = h("details", { class: "options", id: "past-seasons" }, h("summary", {}, "Past seasons"), box);
  let loaded = false;
  details.addEventListener("toggle", () => {
    if (!details.open || loaded) return;
    loaded = true;
    guarded(() => load(api, box));
  });
  return details;
}

async function load(api, box) {
  const seasons = (await api.get("/seasons?limit=100")).items;
  if (!seasons.length) {
    fill(box, h("p", { class: "muted" }, "No season has been closed yet (an admin closes one on the admin page)."));
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
    fill(table, note, page.items.length ? h("table", { class: "board" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "#"), h("th", {}, "Player"), h("th", { class: "num" }, "Elo"),
        h("th", { class: "num" }, "W–D–L"))),
      h("tbody", {}, page.items.map((r) => h("tr", { "data-key": r.key },
        h("td", { class: "num" }, r.provisional ? "–" : r.rank),
        h("td", {}, h("a", { href: profileHref(api.slug, r.key) }, r.name || r.key)),
        h("td", { class: "num" }, whole(r.elo)),
        h("td", { class: "num wdl" }, `${r.wins}–${r.draws}–${r.losses}`))))) :
      h("p", { class: "muted" }, "Nobody played in this season."));
  };
  select.addEventListener("change", () => guarded(show));
  fill(box, h("div", { class: "field" }, h("label", { for: "season" }, "Season"), select), table);
  await show();
}
