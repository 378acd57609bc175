// The public API (/v1/...) as the pages use it, and the ladder keys this browser remembers.
import { sleep } from "./dom.js";

export class ApiError extends Error {
  constructor(message, status = 0, detail = "", errors = []) {
    super(message);
    this.status = status;
    this.detail = detail; // the problem's own words, for the messages that depend on them
    this.errors = errors; // the problem's `errors`: each {field, message}, for a message next to its field
  }

  // The key was missing, wrong, revoked, expired or of too low a role: asking for another one can help.
  get aboutKey() {
    return this.status === 401 || this.status === 403;
  }
}

// Every API error is RFC 9457 problem+json: its `detail` is shown, with the key problems put in a visitor's words.
function readable(status, detail) {
  if (status === 401 && /Bearer <key>/.test(detail)) return "This needs a key of the ladder.";
  if (/not a key of this ladder/.test(detail)) return "That key is not one of this ladder's keys.";
  if (/was revoked/.test(detail)) return "That key was revoked: ask the ladder's admin for a new one.";
  if (/expired at/.test(detail)) return "That key has expired: ask the ladder's admin for a new one.";
  const role = /needs an? (\w+) key of the ladder; key \d+ is an? (\w+) key/.exec(detail);
  if (role) return `This needs ${role[1] === "admin" ? "an admin" : `a ${role[1]}`} key; that key is a ${role[2]} key.`;
  // The API marks code with backticks and names the field a problem is in ("sides[0].score: …"): a page shows
  // plain words, next to the form it came from.
  return detail.replaceAll("`", "").replace(/^(?:\w+(?:\[\d+\])*\.)*\w+\[\d+\](?:\.\w+)*: |^\w+(?:\.\w+)+: /, "");
}

async function problem(response) {
  let detail = "";
  let errors = [];
  try {
    const body = await response.json();
    detail = body.detail || body.title || "";
    if (Array.isArray(body.errors)) errors = body.errors;
  } catch { /* not JSON: the status line says it */ }
  const message = readable(response.status, detail) || `${response.status} ${response.statusText}`;
  return new ApiError(message, response.status, detail, errors);
}

export async function request(method, path, { body, key, accept = "application/json" } = {}) {
  const headers = { Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers.Authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError("The server cannot be reached. Check your connection and try again.");
  }
  if (!response.ok) throw await problem(response);
  return response;
}

// GET answers asked for ahead of need, so that a page's first reads go out together: each is taken once.
const ahead = new Map();

export async function api(method, path, options = {}) {
  if (method === "GET" && ahead.has(path)) {
    const early = ahead.get(path);
    ahead.delete(path);
    try {
      return await early;
    } catch {
      /* asked again below, with the key as it is now (a private ladder's key may have been entered since) */
    }
  }
  return (await request(method, path, options)).json();
}

function readAhead(path, key) {
  const answer = api("GET", path, { key });
  answer.catch(() => {}); // whoever takes it sees the error
  ahead.set(path, answer);
}

// ---------- keys ----------

// One key per ladder, kept in this browser's local storage: it is asked for once and sent with every request
// about the ladder (a public ladder ignores it on reads, a private one needs it).
const storeName = (slug) => `melo-write-key:${slug}`;
export const savedKey = (slug) => localStorage.getItem(storeName(slug)) || "";
export const saveKey = (slug, key) => localStorage.setItem(storeName(slug), key);
export const forgetKey = (slug) => localStorage.removeItem(storeName(slug));

// Who "me" is on this device, per ladder: a player's key, picked once on the ladder page.
const meName = (slug) => `melo-me:${slug}`;
export const savedMe = (slug) => localStorage.getItem(meName(slug)) || "";
export const saveMe = (slug, key) => localStorage.setItem(meName(slug), key);
export const forgetMe = (slug) => localStorage.removeItem(meName(slug));

// ---------- one ladder ----------

export class LadderApi {
  constructor(slug) {
    this.slug = slug;
    this.base = `/v1/ladders/${encodeURIComponent(slug)}`;
  }

  get key() {
    return savedKey(this.slug);
  }

  get(path = "") {
    return api("GET", this.base + path, { key: this.key });
  }

  // Send this read now; the page's get() of the same path takes its answer.
  readAhead(path) {
    readAhead(this.base + path, this.key);
  }

  send(method, path, body) {
    return api(method, this.base + path, { body, key: this.key });
  }

  // A ladder-wide report answers 202 while it is computed: wait as the server asks (Retry-After) and ask again.
  async report(path, onProgress) {
    for (;;) {
      const response = await request("GET", this.base + path, { key: this.key });
      const body = await response.json();
      if (response.status !== 202) return body;
      onProgress(body.progress);
      const wait = Number(response.headers.get("Retry-After")) || 1;
      await sleep(1000 * Math.min(wait, 10));
    }
  }

  // Every item of a paged list (items, next_cursor), page after page.
  async all(path) {
    const items = [];
    let cursor = null;
    do {
      const join = path.includes("?") ? "&" : "?";
      const page = await this.get(cursor === null ? path : `${path}${join}cursor=${encodeURIComponent(cursor)}`);
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor !== null);
    return items;
  }

  playerPath(key) {
    return `/players/${encodeURIComponent(key)}`;
  }
}
