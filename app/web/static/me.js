// "Me" on the ladder page: who I am on this device (picked once, kept per ladder in this browser), my page a tap
// away, my place in the standings with the players just above and below me, the games the ladder suggests I play
// next, and, on a ladder that plays both, my singles and doubles records apart (the rating is one for both: a
// doubles game rates each of its players).
import { forgetMe, saveMe, savedMe } from "./api.js";
import { debounce, fill, h, number, pct, profileHref } from "./dom.js";
import { picker } from "./picker.js";
import { guarded } from "./ui.js";

const SUGGESTED = 3; // opponents suggested
const HISTORY = 500; // games read for the singles and doubles records (the API's largest page)
const AROUND = 5; // standings rows centred on me
const REFRESH_MS = 400; // a burst of games causes one read

// The bar. `onChange()` follows a pick or a change of mind; `refresh()` reads the suggestions again (after games);
// `version()` is the ladder version the page has seen (the standings are read at it or later).
export function meBar({ api, ladder, roster, onChange, version }) {
  const root = h("div", { id: "me", class: "me-bar" });
  const slug = api.slug;
  let next = []; // suggested opponents: {key, name, probability}
  let kinds = null; // {singles: [w, d, l], doubles: [w, d, l]} once read
  let around = []; // the standings rows centred on me (none while I am not on them)

  const me = () => savedMe(slug);

  function draw() {
    const key = me();
    if (!key) return drawPick();
    const change = h("button", { type: "button", class: "link", id: "me-change" }, "Not you?");
    change.addEventListener("click", () => {
      forgetMe(slug);
      next = [];
      kinds = null;
      onChange();
      drawPick(true);
    });
    return fill(root,
      h("p", { class: "me-line" }, h("span", { class: "me-label" }, "Me: "),
        h("a", { href: profileHref(slug, key), id: "me-link" }, roster.name(key)), " ", change),
      aroundLine(key),
      kindsLine(),
      next.length ? h("div", { class: "me-next" }, h("span", { class: "me-label", id: "me-next-label" },
        "Play next: "),
      h("ul", { id: "me-next", "aria-labelledby": "me-next-label" }, next.map((o) => h("li", { "data-key": o.key },
        h("a", { href: profileHref(slug, o.key) }, o.name || roster.name(o.key)),
        h("span", { class: "muted" }, ` your chance ${pct(o.probability)}`))))) : null);
  }

  // My place in the standings (as the board ranks them: by conservative strength, the new players below unranked).
  function aroundLine(key) {
    if (!around.length) return null;
    return h("div", { class: "me-next" }, h("span", { class: "me-label", id: "me-around-label" }, "Standings: "),
      h("ul", { id: "me-around", "aria-labelledby": "me-around-label" }, around.map((p) =>
        h("li", { "data-key": p.key, class: p.key === key ? "me-mark" : null }, p.provisional ? "– " : `${p.rank}. `,
          h("a", { href: profileHref(slug, p.key) }, p.name || roster.name(p.key))))));
  }

  // Singles and doubles apart, only where the player has played both.
  function kindsLine() {
    if (!kinds || !kinds.singles[3] || !kinds.doubles[3]) return null;
    const draws = ladder.play?.draws !== false;
    const wdl = ([w, d, l]) => (draws ? `${number(w)}–${number(d)}–${number(l)}` : `${number(w)}–${number(l)}`);
    return h("p", { class: "muted", id: "me-kinds" }, `Singles ${wdl(kinds.singles)} · doubles ` +
      `${wdl(kinds.doubles)} (one rating for both)`);
  }

  function drawPick(open = false) {
    const who = picker({ id: "me-picker", label: "I am", roster, allowNew: false, onPick: (key) => {
      if (!roster.players.has(key)) return;
      saveMe(slug, key);
      onChange();
      draw();
      load();
    } });
    const start = h("button", { type: "button", class: "secondary", id: "me-pick", "aria-expanded": "false" },
      "Who are you?");
    const form = h("div", { class: "me-pick", hidden: !open }, who.root,
      h("small", { class: "muted" }, "Kept on this device: your row is marked and the record form starts with you."));
    start.addEventListener("click", () => {
      form.hidden = !form.hidden;
      start.setAttribute("aria-expanded", String(!form.hidden));
      if (!form.hidden) who.input.focus();
    });
    fill(root, start, form);
    if (open) start.setAttribute("aria-expanded", "true");
  }

  async function load() {
    const key = me();
    if (!key) return;
    const base = api.playerPath(key);
    const standings = `/leaderboard?by=conservative&limit=${AROUND}&around=${encodeURIComponent(key)}` +
      (version() ? `&min_version=${version()}` : "");
    try {
      const [opponents, history, near] = await Promise.all([api.get(`${base}/opponents?limit=${SUGGESTED}`),
        api.get(`${base}/history?limit=${HISTORY}`),
        api.get(standings).catch((err) => (err.status === 404 ? { items: [] } : Promise.reject(err)))]);
      next = opponents.items;
      kinds = countKinds(history.items);
      around = near.items; // none: not on the standings (inactive)
    } catch (err) {
      if (err.status !== 404) throw err;
      forgetMe(slug); // the player is gone (erased, merged away): pick again
      onChange();
    }
    draw();
  }

  draw();
  guarded(load);
  const refresh = debounce(() => guarded(load), REFRESH_MS);
  return {
    root,
    get key() {
      return me();
    },
    refresh: () => me() && refresh(),
    redraw: () => me() && draw(), // names arrive after the first render
  };
}

// Wins, draws, losses and games in singles (one against one) and doubles (two sides, partners), from a history.
function countKinds(games) {
  const kinds = { singles: [0, 0, 0, 0], doubles: [0, 0, 0, 0] };
  const at = { win: 0, draw: 1, loss: 2 };
  for (const g of games) {
    const kind = g.partners.length === 0 && g.opponents.length === 1 ? "singles"
      : g.partners.length === 1 && g.opponents.length === 2 ? "doubles" : null;
    if (!kind || !(g.result in at)) continue;
    kinds[kind][at[g.result]] += 1;
    kinds[kind][3] += 1;
  }
  return kinds;
}
