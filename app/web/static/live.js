// The ladder's changes as they commit: GET /v1/ladders/{slug}/events (server-sent events), read with fetch() so
// that a private ladder's key goes in the Authorization header (EventSource cannot send one). The stream resumes
// after a dropped connection from the last event seen (Last-Event-ID), so nothing is missed or shown twice.
import { savedKey } from "./api.js";
import { sleep } from "./dom.js";

const FIRST_RETRY_MS = 1000;
const LAST_RETRY_MS = 15000;
// The server sends a keep-alive comment every 15 s: a connection silent for longer than this is dead.
const SILENCE_MS = 40000;

// Split a text stream into server-sent events: {type, id, data}; comments (keep-alives) are reported as such.
class EventParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.reset();
  }

  reset() {
    this.type = "message";
    this.id = null;
    this.data = [];
  }

  push(text) {
    this.buffer += text;
    const lines = this.buffer.split(/\r\n|\r|\n/);
    this.buffer = lines.pop(); // an incomplete last line waits for the next chunk
    for (const line of lines) this.line(line);
  }

  line(line) {
    if (line === "") {
      if (this.data.length) this.onEvent({ type: this.type, id: this.id, data: this.data.join("\n") });
      this.reset();
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
  }
}

// Follow a ladder's events for as long as the page is open: `handlers[type](data)` for each, `onState("live" |
// "connecting" | "off")` as the connection comes and goes. A 404 or a refused key stops it (nothing to follow).
export function follow(slug, handlers, onState = () => {}) {
  const url = `/v1/ladders/${encodeURIComponent(slug)}/events`;
  let lastId = null;
  let connected = false; // the latest attempt got through: after a drop, the first retry comes soon

  const dispatch = (event) => {
    if (event.id !== null) lastId = event.id;
    const handler = handlers[event.type];
    if (!handler) return;
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return; // not an event of this protocol
    }
    handler(data);
  };

  // One connection, read until it ends: false when there is nothing to follow (no such ladder, a refused key).
  async function readOnce() {
    const controller = new AbortController();
    const headers = { Accept: "text/event-stream" };
    const key = savedKey(slug);
    if (key) headers.Authorization = `Bearer ${key}`;
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    const response = await fetch(url, { headers, signal: controller.signal, cache: "no-store" });
    if ([401, 403, 404].includes(response.status)) return false;
    if (!response.ok || !response.body) throw new Error(`events: ${response.status}`);
    connected = true;
    onState("live");
    const parser = new EventParser(dispatch);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let watchdog;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => controller.abort(), SILENCE_MS);
    };
    try {
      for (arm(); ; arm()) {
        const { value, done } = await reader.read();
        if (done) return true;
        parser.push(value);
      }
    } finally {
      clearTimeout(watchdog);
    }
  }

  (async () => {
    let wait = FIRST_RETRY_MS;
    for (;;) {
      onState("connecting");
      connected = false;
      try {
        if (!(await readOnce())) break;
      } catch {
        /* the connection failed or dropped: try again */
      }
      if (connected) wait = FIRST_RETRY_MS;
      await sleep(wait);
      wait = Math.min(2 * wait, LAST_RETRY_MS);
    }
    onState("off");
  })();
}
