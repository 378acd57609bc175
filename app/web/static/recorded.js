// What follows a recorded game: a toast with each player's rating change, and the button that undoes it.
import { changeClass, h, signed, whole } from "./dom.js";
import { guarded, toast, withKey } from "./ui.js";

// The toast for the posted `game`; `onUndone(voided)` hears an undo.
export function showRecorded(game, { api, roster, onUndone }) {
  const changes = game.sides.flatMap((side) => side.players).map((p) => h("li", { "data-key": p.key },
    h("span", { class: "who" }, roster.name(p.key)), " ",
    h("span", { class: ["chg", changeClass(p.elo_change)] }, signed(p.elo_change)),
    h("span", { class: "muted" }, ` → ${whole(p.elo_after)}`)));
  const undo = h("button", { type: "button", class: "secondary", id: "toast-undo" }, "Undo");
  undo.addEventListener("click", () => guarded(async () => {
    undo.disabled = true;
    const voided = await withKey(api.slug, "write", () => api.send("DELETE", `/games/${game.id}`));
    if (!voided) {
      undo.disabled = false;
      return;
    }
    toast(h("p", {}, `Game #${game.id} undone: it no longer counts.`));
    onUndone(voided);
  }));
  const sizes = new Set(game.sides.flatMap((side) => side.players).map((p) => Math.round(Math.abs(p.elo_change))));
  // Why the gains and losses differ, told once on this device (the toast stays short from the next game on).
  const told = "melo-told:changes-why";
  const why = sizes.size > 1 && !localStorage.getItem(told) ? h("p", { class: "muted", id: "changes-why" },
    "Gains and losses differ: a rating still settling moves more than a settled one, and each is measured " +
    "against the whole field.") : null;
  if (why) localStorage.setItem(told, "1");
  toast([h("p", { class: "toast-title" }, `Game #${game.id} recorded.`), h("ul", { id: "changes" }, changes), why],
    undo);
}
