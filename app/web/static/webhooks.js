// The admin page's Webhooks section: add a webhook (its URL and the events it is sent; its secret shown once), the
// webhooks with their status, each one's recent deliveries, and deleting one. Every call needs an admin key.
import { fill, h, timeAgo } from "./dom.js";
import { clearMessages, confirmed, guarded, say } from "./ui.js";

const EVENTS = [
  ["game", "Games", true],
  ["void", "Games undone", false],
  ["season", "Season results", true],
  ["challenge", "Challenges", false],
  ["moment", "Moments (first wins, upsets, streaks, a new #1)", false],
  ["digest", "A weekly digest", false],
];
const NAMES = new Map(EVENTS.map(([event, label]) => [event, label.split(" (")[0].toLowerCase()]));
const RECENT = 20;

export function webhooksPanel(api) {
  const list = h("div", { id: "webhook-list" });
  const load = () => guarded(() => loadWebhooks(api, list, load));
  load();
  return h("section", { class: "panel", id: "webhooks", "aria-labelledby": "webhooks-title" },
    h("h2", { id: "webhooks-title" }, "Webhooks"),
    h("p", { class: "muted" }, "Post the ladder's news to a team chat: paste a Slack or Microsoft Teams " +
      "incoming-webhook address (or your own program's) and choose what to send. Each message is one readable " +
      "line, signed with the webhook's secret."),
    list, newWebhookForm(api, load));
}

async function loadWebhooks(api, list, reload) {
  const hooks = await api.all("/webhooks?limit=100");
  if (!hooks.length) return fill(list, h("p", { class: "muted", id: "no-webhooks" }, "No webhooks yet."));
  return fill(list, h("ul", { class: "admin-players webhooks" }, hooks.map((hook) => webhookItem(api, hook, reload))));
}

function webhookItem(api, hook, reload) {
  const log = h("div", { class: "webhook-log", "aria-live": "polite" });
  const show = h("button", { type: "button", class: "secondary", "aria-expanded": "false" }, "Recent deliveries");
  show.addEventListener("click", () => guarded(async () => {
    const open = show.getAttribute("aria-expanded") === "true";
    show.setAttribute("aria-expanded", String(!open));
    if (open) return fill(log);
    return showDeliveries(api, hook, log);
  }));
  const remove = h("button", { type: "button", class: "danger", "aria-label": `Delete the webhook to ${hook.url}` },
    "Delete…");
  remove.addEventListener("click", async () => {
    if (!(await confirmed({ title: "Delete this webhook?", confirm: "Delete", danger: true,
      body: h("p", { class: "webhook-url" }, `Nothing more is sent to ${hook.url}, and its delivery log goes.`) }))) {
      return;
    }
    clearMessages();
    if (await guarded(() => api.send("DELETE", `/webhooks/${hook.id}`))) {
      say("The webhook is deleted.", "info");
      await reload();
    }
  });
  const status = hook.failing
    ? h("b", { class: "down" }, "failing: its last message could not be delivered")
    : h("span", { class: "muted" }, "working");
  return h("li", { "data-id": hook.id },
    h("p", { class: "webhook-url" }, h("b", {}, hook.url)),
    h("p", {}, hook.events.map((e) => NAMES.get(e) || e).join(", "), " · ", status),
    h("div", { class: "row-actions" }, show, remove), log);
}

async function showDeliveries(api, hook, log) {
  const page = await api.get(`/webhooks/${hook.id}/deliveries?limit=${RECENT}`);
  if (!page.items.length) return fill(log, h("p", { class: "muted" }, "Nothing sent yet: it is sent what happens " +
    "from now on."));
  const tries = (n) => `${n} ${n === 1 ? "attempt" : "attempts"}`;
  return fill(log, h("ul", { class: "deliveries" }, page.items.map((d) => h("li", { class: d.status },
    h("b", {}, NAMES.get(d.event) || d.event), ` · ${d.status} · ${tries(d.attempts)}`,
    d.response_code ? ` · answered ${d.response_code}` : "",
    " · ", timeAgo(d.attempted_at || d.created_at),
    d.error && d.status !== "delivered" ? h("div", { class: "muted webhook-url" }, d.error) : null))));
}

function newWebhookForm(api, reload) {
  const url = h("input", { id: "webhook-url", type: "url", required: true, maxlength: "2000", autocomplete: "off",
    spellcheck: "false", placeholder: "https://hooks.slack.com/services/…" });
  const boxes = EVENTS.map(([event, label, on]) => h("label", { class: "check" },
    h("input", { type: "checkbox", name: "events", value: event, id: `webhook-event-${event}`, checked: on }),
    ` ${label}`));
  const shown = h("div", { id: "new-webhook-box", "aria-live": "polite" });
  const form = h("form", { id: "new-webhook", class: "stack" }, h("h3", {}, "New webhook"),
    h("div", { class: "field" }, h("label", { for: "webhook-url" }, "Address (https)"), url),
    h("fieldset", {}, h("legend", {}, "Send"), boxes),
    h("button", { type: "submit", id: "add-webhook" }, "Add webhook"), shown);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    const events = [...form.querySelectorAll("input[name=events]:checked")].map((box) => box.value);
    if (!events.length) return say("Choose at least one thing to send.");
    const made = await guarded(() => api.send("POST", "/webhooks", { url: url.value.trim(), events }));
    if (!made) return undefined;
    url.value = "";
    fill(shown, h("p", {}, "Added. Its secret, shown only now: ", h("code", { id: "webhook-secret" }, made.secret)),
      h("p", { class: "muted" }, "Copy it into the program that receives the messages if it checks the " +
        "Melo-Signature header (a Slack or Teams channel does not need it)."));
    return reload();
  });
  return form;
}
