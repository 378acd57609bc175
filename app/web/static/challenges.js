// Challenges: a "Challenge" button (on a player's page and in a standings row's details) that asks who challenges
// and sends it; the ladder's open challenges with Accept, Decline, Withdraw and one tap per winner to record the
// game that settles one, with its points if they were typed beside it; a toast "Ada challenged Bob" when a
// challenge is made anywhere. Over the public API: /v1/ladders/{slug}/challenges.
import { savedMe } from "./api.js";
import { fill, h, timeAgo } from "./dom.js";
import { picker } from "./picker.js";
import { ask, guarded, toast, withKey } from "./ui.js";

const UNRESOLVED = new Set(["open", "accepted"]);
const announced = new Set(); // challenges this page has told of already (its own, and the stream's echo of them)
const lastChallenger = (slug) => `melo-challenger:${slug}`;

const fromName = (c) => c.from_name || c.from;
const toName = (c) => c.to_name || c.to;
const standing = (c) => UNRESOLVED.has(c.status) && Date.parse(c.expires_at) > Date.now();

// "Ada challenged Bob" ("Ada challenged you" where this device is Bob's: "me"), once per challenge on this page.
export function announce(challenge, slug) {
  if (announced.has(challenge.id)) return;
  announced.add(challenge.id);
  const me = slug ? savedMe(slug) : null;
  const from = challenge.from === me ? "You" : fromName(challenge);
  const to = challenge.to === me ? "you" : toName(challenge);
  toast([h("p", { class: "toast-title" }, `${from} challenged ${to}`),
    challenge.message ? h("p", {}, `“${challenge.message}”`) : null]);
}

// A "Challenge" button for the player `to`: it asks who challenges (the same picker as the record form, "me" or the last
// choice remembered in this browser) and a word to go with it, then sends the challenge with the write key.
export function challengeButton({ api, roster, to, toLabel, onMade = () => {} }) {
  const button = h("button", { type: "button", class: "secondary challenge-button", "data-challenge": to,
    "aria-label": `Challenge ${toLabel || roster.name(to)}` }, "Challenge");
  button.addEventListener("click", () => guarded(() => challenge({ api, roster, to, toLabel, onMade })));
  return button;
}

async function challenge({ api, roster, to, toLabel, onMade }) {
  // Who may challenge: the ladder's players, read just after the page rendered. A tap before they are in waits for
  // them (5 s at most: then the picker takes a typed key).
  await Promise.race([roster.ready, new Promise((resolve) => setTimeout(resolve, 5000))]);
  let error = "";
  for (;;) {
    const who = picker({ id: "challenger", label: "Who challenges?", roster, allowNew: false,
      exclude: () => new Set([to]) });
    // "Me" on this device first, else the last one to challenge from it.
    const first = [savedMe(api.slug), localStorage.getItem(lastChallenger(api.slug))]
      .find((key) => key && key !== to && roster.players.has(key));
    if (first) who.set(first);
    // Who challenges already named: the message has the focus, so no list of players opens over it and Send.
    const message = h("div", { class: "field" }, h("label", { for: "challenge-message" }, "Message (optional)"),
      h("input", { id: "challenge-message", name: "message", maxlength: "200", autocomplete: "off",
        placeholder: "lunch?", autofocus: Boolean(first) && !error }));
    const values = await ask({
      title: `Challenge ${toLabel || roster.name(to)}`,
      body: h("p", { class: "muted" }, "They can accept or decline; the game is recorded against it in one tap."),
      fields: [who.root, message],
      confirm: "Send challenge",
      error,
    });
    if (values === null) return;
    const from = who.key;
    if (!roster.players.has(from)) {
      error = from ? `There is no player “${from}” here.` : "Pick who challenges.";
      continue;
    }
    const body = { from, to, ...(values.message.trim() ? { message: values.message.trim() } : {}) };
    const made = await withKey(api.slug, "write", () => api.send("POST", "/challenges", body));
    if (!made) return;
    localStorage.setItem(lastChallenger(api.slug), made.from);
    announce(made, api.slug);
    onMade(made);
    return;
  }
}

// The ladder's open (and accepted) challenges, kept current from the event stream: `changed(event)` takes each
// `challenge` event. `onPlayed(game)` shows a game recorded here at once.
export class OpenChallenges {
  constructor({ api, onPlayed = () => {} }) {
    this.api = api;
    this.onPlayed = onPlayed;
    this.challenges = new Map(); // id: challenge, unresolved ones only
    this.list = h("ul", { id: "challenges", class: "challenges" });
    this.root = h("div", { id: "open-challenges", hidden: true },
      h("h3", { id: "challenges-title" }, "Open challenges"), this.list);
  }

  async load() {
    const page = await this.api.get("/challenges?status=open&status=accepted&limit=100");
    this.challenges = new Map(page.items.map((c) => [c.id, c]));
    this.draw();
  }

  // A challenge as it is now: listed while it stands, gone once resolved.
  upsert(challenge) {
    if (standing(challenge)) this.challenges.set(challenge.id, challenge);
    else this.challenges.delete(challenge.id);
    this.draw();
  }

  changed(event) {
    if (event.action === "created") announce(event.challenge, this.api.slug);
    this.upsert(event.challenge);
  }

  draw() {
    const shown = [...this.challenges.values()].filter(standing).sort((a, b) => b.id - a.id);
    this.root.hidden = !shown.length;
    fill(this.list, shown.map((c) => this.item(c)));
  }

  item(c) {
    const act = (label, work, cls = "secondary", data = {}) => {
      const button = h("button", { type: "button", class: cls, ...data }, label);
      button.addEventListener("click", () => guarded(async () => {
        button.disabled = true;
        try {
          await work();
        } finally {
          button.disabled = false;
        }
      }));
      return button;
    };
    const answer = (how, method = "POST") => async () => {
      const path = how ? `/challenges/${c.id}/${how}` : `/challenges/${c.id}`;
      const done = await withKey(this.api.slug, "write", () => this.api.send(method, path));
      if (done) this.upsert(done);
    };
    // The points, optional: left empty, the winner's tap records the game without a score.
    const points = [c.from, c.to].map((key, n) => h("input", { type: "number", min: "0", step: "1",
      inputmode: "numeric", class: "points", "data-points": key,
      "aria-label": `Points of ${n ? toName(c) : fromName(c)} (optional)` }));
    const won = (key, name) => act(`${name} won`, async () => {
      const typed = points.map((input) => input.value.trim());
      const body = { winner: key };
      if (typed.some(Boolean)) {
        const [mine, theirs] = key === c.from ? typed : [...typed].reverse();
        if (!typed.every(Boolean) || !(Number(mine) > Number(theirs))) {
          toast(h("p", { class: "toast-title" }, typed.every(Boolean)
            ? `${name} won with fewer points: check the score.` : "Enter both players' points, or neither."));
          return;
        }
        body.scores = Object.fromEntries([c.from, c.to].map((k, n) => [k, Number(typed[n])]));
      }
      const played = await withKey(this.api.slug, "write", () =>
        this.api.send("POST", `/challenges/${c.id}/game`, body));
      if (!played) return;
      this.upsert(played);
      const game = await this.api.get(`/games/${played.game}`);
      const score = body.scores ? ` ${body.scores[key]}-${body.scores[key === c.from ? c.to : c.from]}` : "";
      toast(h("p", { class: "toast-title" }, `Game #${game.id} recorded: ${name} won the challenge${score}.`));
      this.onPlayed(game);
    }, "big", { "data-winner": key });
    return h("li", { "data-id": c.id, class: c.status },
      h("p", { class: "line" }, h("b", {}, fromName(c)), " challenged ", h("b", {}, toName(c)),
        c.status === "accepted" ? h("span", { class: "accepted-mark" }, " · accepted") : null),
      c.message ? h("p", { class: "message" }, `“${c.message}”`) : null,
      h("p", { class: "meta" }, timeAgo(c.created_at), ` · challenge #${c.id}`),
      h("div", { class: "challenge-points", role: "group", "aria-label": `Points of challenge ${c.id} (optional)` },
        h("span", { class: "muted" }, "Points (optional):"), h("span", { "aria-hidden": "true" }, fromName(c)),
        points[0], h("span", { "aria-hidden": "true" }, "–"), points[1],
        h("span", { "aria-hidden": "true" }, toName(c))),
      h("div", { class: "winner-buttons", role: "group", "aria-label": `Record the result of challenge ${c.id}` },
        won(c.from, fromName(c)), won(c.to, toName(c))),
      h("div", { class: "row-actions" },
        c.status === "open" ? act("Accept", answer("accept"), "secondary", { "data-answer": "accept" }) : null,
        c.status === "open" ? act("Decline", answer("decline"), "secondary", { "data-answer": "decline" }) : null,
        act("Withdraw", answer(null, "DELETE"), "secondary", { "data-answer": "withdraw" })));
  }
}
