// Building DOM and SVG nodes, and the formats every view shares. Nothing here knows about the API.

// Children that are null, undefined or false are left out, so a view can write `cond ? node : null` without the
// word "null" ever reaching the page (replaceChildren and append would print it).
function nodes(children) {
  return children.flat(Infinity)
    .filter((child) => child !== null && child !== undefined && child !== false)
    .map((child) => (child instanceof Node ? child : document.createTextNode(String(child))));
}

function setAttributes(el, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class" && Array.isArray(value)) el.setAttribute("class", value.filter(Boolean).join(" "));
    else el.setAttribute(name, value === true ? "" : value);
  }
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttributes(el, attrs);
  el.append(...nodes(children));
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  setAttributes(el, attrs);
  el.append(...nodes(children));
  return el;
}

export function fill(el, ...children) {
  el.replaceChildren(...nodes(children));
  return el;
}

// ---------- numbers ----------

export const whole = (x) => String(Math.round(x));

// Counts as people write them: thousands separated ("7,999"), and the word in the singular for one ("1 game").
const COUNT = new Intl.NumberFormat();
export const number = (n) => COUNT.format(n);
export const count = (n, word, words = `${word}s`) => `${number(n)} ${n === 1 ? word : words}`;
export const pct = (p) => `${Math.round(100 * p)}%`;

// A signed change as shown: "+12", "−3"; whatever rounds to nothing is "0" (never "+0" or "−0").
export function signed(x, digits = 0) {
  const shown = Number(Number(x).toFixed(digits));
  if (shown === 0) return "0";
  return `${shown > 0 ? "+" : "−"}${Math.abs(shown).toFixed(digits)}`;
}

export const changeClass = (x) => (Math.round(x) > 0 ? "up" : Math.round(x) < 0 ? "down" : "flat");

// ---------- times ----------

const FULL = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "short" });
const DAY = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short" });
const DAY_YEAR = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short", year: "numeric" });

export const fullDate = (iso) => FULL.format(new Date(iso));

export function shortDate(date) {
  return (date.getFullYear() === new Date().getFullYear() ? DAY : DAY_YEAR).format(date);
}

// "just now", "5 min ago", "2 h ago", "3 d ago", then the date: how long ago in words an office reads at a glance.
export function ago(iso, now = Date.now()) {
  const seconds = Math.max(0, (now - new Date(iso).getTime()) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.max(1, Math.round(seconds / 60))} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  if (seconds < 7 * 86400) return `${Math.round(seconds / 86400)} d ago`;
  return shortDate(new Date(iso));
}

// A <time> that says how long ago and shows the full date on hover; refreshTimes keeps the words current.
export function timeAgo(iso) {
  return h("time", { datetime: iso, title: fullDate(iso), "data-ago": "" }, ago(iso));
}

export function refreshTimes(root = document) {
  for (const el of root.querySelectorAll("time[data-ago]")) el.textContent = ago(el.getAttribute("datetime"));
}

// ---------- small utilities ----------

// Run `work` once, `wait` ms after the last call: a burst of events causes one refresh.
export function debounce(work, wait) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => work(...args), wait);
  };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const profileHref = (slug, key) => `/ladders/${encodeURIComponent(slug)}/players/${encodeURIComponent(key)}`;
