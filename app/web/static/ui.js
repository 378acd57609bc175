// What every page shares to talk to its visitor: messages, the toast, confirmation and key dialogs.
import { ApiError, saveKey, savedKey } from "./api.js";
import { fill, h } from "./dom.js";

// ---------- messages ----------

export function say(message, kind = "error") {
  const box = document.getElementById("messages");
  fill(box, h("p", { class: kind, role: kind === "error" ? "alert" : "status" }, message));
  showInView(box);
}

// A message out of sight (a phone scrolled down to a form) is brought into view.
export function showInView(el) {
  const box = el.getBoundingClientRect();
  if (box.top < 0 || box.bottom > window.innerHeight) el.scrollIntoView({ block: "nearest" });
}

export function clearMessages() {
  fill(document.getElementById("messages"));
}

// Run `work`; an error is shown in words (an API problem's detail, never raw JSON) and the answer is undefined.
export async function guarded(work) {
  try {
    return await work();
  } catch (err) {
    say(err instanceof ApiError ? err.message : `Something went wrong: ${err.message}`);
    return undefined;
  }
}

// ---------- the toast ----------

const TOAST_MS = 12000;
let toastTimer;

// A short-lived note at the bottom of the screen with optional buttons (Undo). It stays while the pointer or the
// focus is on it, so that nobody loses the Undo while reaching for it.
export function toast(content, actions = []) {
  const box = document.getElementById("toast");
  const close = h("button", { type: "button", class: "ghost", "aria-label": "Close the message" }, "×");
  close.addEventListener("click", hideToast);
  fill(box, h("div", { class: "toast-card" }, h("div", { class: "toast-body" }, content),
    h("div", { class: "toast-actions" }, actions, close)));
  scheduleHide();
}

// The live region itself stays in the page (empty), so that screen readers announce the next toast.
export function hideToast() {
  clearTimeout(toastTimer);
  fill(document.getElementById("toast"));
}

function scheduleHide() {
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    const box = document.getElementById("toast");
    if (box.matches(":hover, :focus-within")) scheduleHide();
    else hideToast();
  }, TOAST_MS);
}

// ---------- dialogs ----------

// A modal <dialog> (focus kept inside, Escape cancels) with a form; resolves to the form's values, or null when
// cancelled. `choices` ([value, label], …) are buttons of their own: the one pressed is the values' `choice`
// ("ok" for the confirm button, which `confirm: null` leaves out).
export function ask({ title, body = [], fields = [], confirm, danger = false, error = "", choices = [] }) {
  const dialog = h("dialog", { class: "dialog", "aria-labelledby": "dialog-title" });
  const cancel = h("button", { type: "button", class: "secondary", value: "cancel" }, "Cancel");
  const form = h("form", { method: "dialog" },
    h("h2", { id: "dialog-title" }, title),
    body,
    error ? h("p", { class: "error", role: "alert" }, error) : null,
    fields,
    choices.length ? h("div", { class: "dialog-choices" }, choices.map(([value, label]) =>
      h("button", { type: "submit", value, class: "secondary" }, label))) : null,
    h("div", { class: "dialog-actions" }, cancel,
      confirm === null ? null : h("button", { type: "submit", value: "ok", class: danger ? "danger" : "" }, confirm)));
  dialog.append(form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    cancel.addEventListener("click", () => dialog.close("cancel"));
    dialog.addEventListener("close", () => {
      const answer = dialog.returnValue;
      const values = answer && answer !== "cancel" ? { ...Object.fromEntries(new FormData(form)), choice: answer }
        : null;
      dialog.remove();
      resolve(values);
    });
    dialog.showModal();
  });
}

export async function confirmed(options) {
  return (await ask(options)) !== null;
}

const ROLE_WORDS = {
  read: "a key of this ladder (it is private)",
  write: "this ladder's write key",
  admin: "an admin key of this ladder",
};

// Ask for the ladder's key (once: it is kept in this browser); resolves to the key, or null when cancelled.
export async function askKey(slug, need, error = "") {
  const field = h("div", { class: "field" },
    h("label", { for: "key-input" }, "Key"),
    h("input", { id: "key-input", name: "key", type: "password", required: true, autocomplete: "off",
      spellcheck: "false", value: savedKey(slug) }));
  const values = await ask({
    title: "Enter the key",
    body: h("p", {}, `This needs ${ROLE_WORDS[need]}. It is kept in this browser, so you are asked only once.`),
    fields: field,
    confirm: "Save key",
    error,
  });
  const key = values && values.key.trim();
  if (!key) return null;
  saveKey(slug, key);
  return key;
}

// Do `work` (which reads the saved key), asking for a key first if none is saved, and again, saying what was
// wrong, while the server refuses the key. Resolves to undefined when the visitor cancels.
export async function withKey(slug, need, work) {
  if (!savedKey(slug) && !(await askKey(slug, need))) return undefined;
  for (;;) {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof ApiError && err.aboutKey)) throw err;
      if (!(await askKey(slug, need, err.message))) return undefined;
    }
  }
}
