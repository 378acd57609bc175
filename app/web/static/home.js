// The list of ladders, and a form to create one with the server's admin key.
import { ApiError, api, saveKey } from "./api.js";
import { count, fill, h } from "./dom.js";
import { ladderName, setTitle } from "./parts.js";
import { clearMessages, say } from "./ui.js";

export async function homeView(view) {
  setTitle("Ladders");
  fill(document.getElementById("context"));
  const ladders = [];
  for (let cursor = null; ;) {
    const page = await api("GET", `/v1/ladders?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    ladders.push(...page.items);
    cursor = page.next_cursor;
    if (cursor === null) break;
  }
  fill(view,
    h("h1", {}, "Ladders"),
    ladders.length
      ? h("ul", { class: "ladders", id: "ladders" }, ladders.map((l) => h("li", {},
        h("a", { href: `/ladders/${encodeURIComponent(l.slug)}` }, ladderName(l)),
        h("span", { class: "muted" }, `${count(l.players, "player")} · ${count(l.games, "game")}` +
          (l.private ? " · private" : "")))))
      : h("p", { class: "muted" }, "No ladders yet: create the first one below."),
    createForm());
  performance.mark("melo:content");
}

// Create a ladder with the server's admin key; its first admin key is shown once, and kept in this browser.
function createForm() {
  // Browsers compile `pattern` with the v flag, where a "-" in a class must be escaped: unescaped, Chromium drops
  // the pattern as invalid and checks nothing.
  const slug = h("input", { id: "new-slug", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}",
    autocomplete: "off", spellcheck: "false", "aria-describedby": "new-slug-hint new-slug-error" });
  const slugError = h("small", { id: "new-slug-error", class: "field-error", role: "alert", hidden: true });
  const name = h("input", { id: "new-ladder-name", maxlength: "200", autocomplete: "off" });
  const admin = h("input", { id: "admin-key", type: "password", autocomplete: "off", required: true });
  const result = h("div", { id: "created", "aria-live": "polite" });
  const form = h("form", { id: "create-ladder", class: "stack" },
    h("div", { class: "field" }, h("label", { for: "new-ladder-name" }, "Name"), name),
    h("div", { class: "field" }, h("label", { for: "new-slug" }, "Address"), slug,
      h("small", { id: "new-slug-hint", class: "muted" }, "Lower-case letters, digits, - and _; the page will be " +
        "/ladders/<address>."), slugError),
    h("div", { class: "field" }, h("label", { for: "admin-key" }, "Server admin key"), admin),
    h("button", { type: "submit", id: "create-submit" }, "Create ladder"),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearMessages();
    slugError.hidden = true;
    const body = { slug: slug.value.trim(), name: name.value.trim() || null };
    let created;
    try {
      created = await api("POST", "/v1/ladders", { body, key: admin.value.trim() });
    } catch (err) {
      // The server names the field `slug`: the page calls it the address, and says so next to it.
      const about = err instanceof ApiError && (err.errors || []).find((e) => e.field === "slug");
      if (!about) return say(err instanceof ApiError ? err.message : `Something went wrong: ${err.message}`);
      slugError.textContent = `The address ${about.message}.`;
      slugError.hidden = false;
      return slug.focus();
    }
    saveKey(created.slug, created.admin_key);
    fill(result,
      h("p", {}, "Created ", h("a", { href: `/ladders/${encodeURIComponent(created.slug)}` }, ladderName(created)),
        "."),
      h("p", {}, "Its admin key, shown only now (this browser keeps it): ", h("code", { id: "new-key" },
        created.admin_key)));
  });
  return h("details", { class: "panel options", id: "new-ladder" }, h("summary", {}, "New ladder"), form);
}
