// The ladder front-end: plain DOM and SVG over the public API (/v1/...), as ES modules with no build step and no
// dependencies. This module reads the address and draws its view; each view's own modules are loaded only for
// it (the modules every view shares are preloaded by index.html).
import { refreshTimes, fill, h } from "./dom.js";
import { notLiveUnlessFollowing, setTitle } from "./parts.js";
import { guarded } from "./ui.js";

const TIMES_EVERY_MS = 30000; // "2 min ago" stays true

function notFound(view) {
  setTitle("Not found");
  fill(view, h("h1", {}, "Nothing here"), h("p", {}, "There is no page at this address. ",
    h("a", { href: "/" }, "See all ladders"), "."));
}

async function route() {
  const view = document.getElementById("view");
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const [top, slug, what, key] = parts;
  await guarded(async () => {
    if (parts.length === 0) return (await import("./home.js")).homeView(view);
    if (top !== "ladders" || !slug) return notFound(view);
    if (parts.length === 2) return (await import("./ladder.js")).ladderView(view, slug);
    if (what === "players" && parts.length === 4) {
      // charts.js is fetched beside profile.js, not found in it one round trip later; the ladder page never needs it.
      const [{ playerView }] = await Promise.all([import("./profile.js"), import("./charts.js")]);
      return playerView(view, slug, key);
    }
    if ((what === "admin" || what === "settings") && parts.length === 3) {
      return (await import("./admin.js")).adminView(view, slug, what === "settings" ? "keys" : null);
    }
    return notFound(view);
  });
  notLiveUnlessFollowing();
  // A page that could not be drawn (an unknown ladder, the server away) says so above and leads home.
  if (view.querySelector(".loading")) {
    setTitle("Not available");
    fill(view, h("p", {}, h("a", { href: "/" }, "See all ladders")));
  }
}

route();
setInterval(() => refreshTimes(), TIMES_EVERY_MS);
