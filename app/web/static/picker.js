// Player pickers: a text box that suggests the ladder's players as one types (the ARIA 1.2 combobox pattern with a
// listbox popup). Arrow keys move through the suggestions, Enter or a click picks one, Tab picks the highlighted
// one and moves on, Escape closes the list. A name nobody has yet can be typed in full: a new player.
import { h, fill } from "./dom.js";

const SHOWN = 8;

// The ladder's players as the pickers suggest them, those seen in recent games first.
export class Roster {
  constructor() {
    this.players = new Map();
    this.recent = [];
    this.replaced = new Set(); // what to do once every player is first in (a picker open then suggests them)
    // Settled once the first players are in (a page reads them after its first render).
    this.ready = new Promise((resolve) => { this.loaded = resolve; });
  }

  add(players) {
    for (const p of players) this.players.set(p.key, { key: p.key, name: p.name || p.key });
    this.loaded();
  }

  // Every player anew: keys changed, merged or erased are gone.
  replace(players) {
    this.players.clear();
    this.add(players);
    this.replaced.forEach((then) => then());
    this.replaced.clear(); // complete from now on: a picker made later needs no second look
  }

  // The players of `keys` the roster has not met yet, read from the ladder (`api`): a player a game has just made
  // has the key the ladder folded ("åsa berg") and the name as typed ("Åsa Berg"), to be shown before the game is.
  async learn(keys, api) {
    const unknown = [...new Set(keys)].filter((key) => !this.players.has(key));
    if (!unknown.length) return;
    const found = await Promise.all(unknown.map((key) => api.get(api.playerPath(key)).catch(() => null)));
    this.add(found.filter(Boolean));
  }

  // Whether another player has the same name as `p` (ignoring case): their keys then tell them apart.
  twinned(p) {
    const name = p.name.toLocaleLowerCase();
    for (const q of this.players.values()) if (q.key !== p.key && q.name.toLocaleLowerCase() === name) return true;
    return false;
  }

  remember(keys) {
    this.recent = [...new Set([...keys, ...this.recent])].slice(0, 50);
  }

  name(key) {
    const player = this.players.get(key);
    return player ? player.name : key;
  }

  // The player a typed text names exactly (key or name, in any case), if any; else one it names but for accents
  // and apostrophes ("Jose Alvarez" names José Álvarez).
  find(text) {
    const wanted = text.trim().toLocaleLowerCase();
    if (!wanted) return null;
    for (const p of this.players.values()) {
      if (p.key.toLocaleLowerCase() === wanted || p.name.toLocaleLowerCase() === wanted) return p;
    }
    const folded = fold(wanted);
    for (const p of this.players.values()) if (fold(p.key) === folded || fold(p.name) === folded) return p;
    return null;
  }

  // The players whose key, name or a word of the name is within a few typos of `text` (edit distance), closest
  // first: "bobb" finds Bob. At most `n`.
  closest(text, n = 3) {
    const wanted = fold(text.trim());
    const most = wanted.length <= 2 ? 1 : Math.max(2, Math.ceil(wanted.length / 3));
    const near = [];
    for (const p of this.players.values()) {
      const name = fold(p.name);
      const forms = [fold(p.key), name, ...name.split(/\s+/)];
      const d = Math.min(...forms.map((form) => editDistance(wanted, form)));
      if (d <= most) near.push({ p, d });
    }
    near.sort((a, b) => a.d - b.d || a.p.name.localeCompare(b.p.name));
    return near.slice(0, n).map((x) => x.p);
  }

  // Players matching `text`: names starting with it first, then a word of the name, then anywhere; among
  // equals, recent players first, then by name.
  suggest(text, exclude) {
    const wanted = fold(text.trim());
    const recency = new Map(this.recent.map((key, n) => [key, n]));
    const scored = [];
    for (const p of this.players.values()) {
      if (exclude.has(p.key)) continue;
      const score = matchScore(p, wanted);
      if (score !== null) scored.push({ p, score, recent: recency.has(p.key) ? recency.get(p.key) : Infinity });
    }
    if (!wanted) { // nothing typed: the recent players first, then the others by name
      scored.sort((a, b) => a.recent - b.recent || a.p.name.localeCompare(b.p.name));
      return scored.slice(0, SHOWN).map((s) => s.p);
    }
    scored.sort((a, b) => a.score - b.score || a.recent - b.recent || a.p.name.localeCompare(b.p.name));
    return scored.slice(0, SHOWN).map((s) => s.p);
  }
}

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`: the optimal string alignment distance.
function editDistance(a, b) {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2][j - 2] + 1);
      rows[i][j] = d;
    }
  }
  return rows[a.length][b.length];
}

// A name as a search compares it: in lower case, without accents or apostrophes, so that "jose alvarez" finds
// José Álvarez, "lukasz" Łukasz and "oneil" O'Neil.
const LETTERS = { "ł": "l", "ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "đ": "d", "ð": "d", "þ": "th", "ı": "i" };
function fold(text) {
  return text.toLocaleLowerCase().normalize("NFD").replace(/\p{M}/gu, "")
    .replace(/[łøæœßđðþı]/g, (c) => LETTERS[c]).replace(/['’`]/g, "");
}

function matchScore(player, wanted) {
  if (!wanted) return 3;
  const name = fold(player.name);
  const key = fold(player.key);
  if (name.startsWith(wanted) || key.startsWith(wanted)) return 0;
  if (name.split(/\s+/).some((word) => word.startsWith(wanted))) return 1;
  if (name.includes(wanted) || key.includes(wanted)) return 2;
  return null;
}

// One picker. `exclude()` names the players picked elsewhere in the form (not suggested twice); `onPick(key,
// how)` follows a choice, `how` being "pointer", "enter" or "tab".
export function picker({ id, label, roster, allowNew = true, exclude = () => new Set(), onPick = () => {} }) {
  // Out of the Tab order (tabindex -1): a list long enough to scroll would otherwise take a Tab of its own.
  const list = h("ul", { id: `${id}-list`, role: "listbox", class: "suggestions", "aria-label": `${label}: players`,
    hidden: true, tabindex: "-1" });
  const input = h("input", { id, type: "text", role: "combobox", class: "picker-input", autocomplete: "off",
    autocapitalize: "none", spellcheck: "false", "aria-autocomplete": "list", "aria-expanded": "false",
    "aria-controls": list.id, placeholder: "Type a name" });
  let options = [];
  let active = -1;
  let chosen = null;

  const isOpen = () => !list.hidden;

  function close() {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  }

  function highlight(n) {
    active = n;
    list.querySelectorAll("[role=option]").forEach((li, i) => li.setAttribute("aria-selected", String(i === n)));
    if (n < 0) {
      input.removeAttribute("aria-activedescendant");
      return;
    }
    const li = document.getElementById(`${id}-opt-${n}`);
    input.setAttribute("aria-activedescendant", li.id);
    li.scrollIntoView({ block: "nearest" });
  }

  function open() {
    const text = input.value.trim();
    options = roster.suggest(text, exclude());
    if (allowNew && text && !roster.find(text)) options.push({ key: text, name: text, isNew: true });
    const picked = text && !options.length ? roster.find(text) : null; // named, but picked elsewhere in the form
    fill(list, options.length ? options.map((p, n) => option(p, n)) : h("li", { class: "none" },
      picked ? `${picked.name} is already picked` : text ? "No such player" : "No players yet: type a name"));
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    highlight(text && options.length ? 0 : -1); // typed text: Enter takes the best match
    keepInView();
  }

  // The list whole on the screen: the page scrolls up by what would pass the foot of the screen (or a phone's tab
  // bar), as far as the box itself stays in view.
  function keepInView() {
    const bar = document.querySelector("nav.tabs");
    const shown = bar && getComputedStyle(bar).display !== "none"; // (fixed: it has no offsetParent)
    const floor = shown ? bar.getBoundingClientRect().top : window.innerHeight;
    const over = list.getBoundingClientRect().bottom - floor;
    if (over > 0) window.scrollBy(0, Math.min(over + 8, input.getBoundingClientRect().top));
  }

  function option(p, n) {
    const li = h("li", { id: `${id}-opt-${n}`, role: "option", "aria-selected": "false", "data-key": p.key,
      class: p.isNew ? "new" : null },
      p.isNew ? ["New player ", h("b", {}, p.name)] : p.name,
      !p.isNew && roster.twinned(p) ? h("small", {}, ` ${p.key}`) : null); // the key tells two of a name apart
    li.addEventListener("click", () => choose(p, "pointer"));
    return li;
  }

  function choose(p, how) {
    chosen = p.isNew ? null : p.key;
    input.value = p.name;
    close();
    input.dispatchEvent(new Event("change", { bubbles: true }));
    onPick(p.key, how);
  }

  // Typed before every player was read (a page reads them after its first render): suggested once they are in.
  roster.replaced.add(() => isOpen() && document.activeElement === input && open());
  list.addEventListener("mousedown", (event) => event.preventDefault()); // keep the focus in the box
  input.addEventListener("focus", open);
  input.addEventListener("click", () => isOpen() || open());
  input.addEventListener("input", () => {
    chosen = null;
    open();
  });
  input.addEventListener("blur", close);
  input.addEventListener("keydown", (event) => {
    const n = options.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!isOpen()) open();
      if (n) highlight(event.key === "ArrowDown" ? (active + 1) % n : (active - 1 + n) % n);
    } else if (event.key === "Enter" && isOpen() && active >= 0) {
      event.preventDefault(); // a pick, not the form's submit
      choose(options[active], "enter");
    } else if (event.key === "Tab" && isOpen() && active >= 0 && input.value.trim()) {
      choose(options[active], "tab"); // the Tab itself moves the focus on
    } else if (event.key === "Escape" && isOpen()) {
      event.preventDefault();
      close();
    }
  });

  return {
    root: h("div", { class: "picker" }, h("label", { for: id }, label), h("div", { class: "picker-box" }, input, list)),
    input,
    // The player's key: the one picked, else a player the text names exactly, else the text (a new player).
    get key() {
      if (chosen) return chosen;
      const text = input.value.trim();
      const found = roster.find(text);
      return found ? found.key : text;
    },
    set(key) {
      chosen = key;
      input.value = roster.name(key);
    },
    clear() {
      chosen = null;
      input.value = "";
    },
  };
}
