// The seat question of the record form, only on ladders that learn seats: with two seats, who had the first one;
// with more, a seat for each side.
import { fill, h } from "./dom.js";
import { SIDES } from "./game-body.js";

// Seats in an office's words; other seats are named as the ladder names them.
const SEAT_QUESTIONS = {
  server: "Who served first?",
  white: "Who played white?",
  home: "Who played at home?",
  first: "Who went first?",
};
const seatQuestion = (seat) => SEAT_QUESTIONS[seat.toLowerCase()] || `Who took the “${seat}” seat?`;

// The question in `box` for the ladder's `seats` (names); `sideName(s)` names a side as the form does.
export function seatEntry({ seats, box, sideName }) {
  function draw() {
    if (!seats.length) return fill(box);
    if (seats.length === 2) {
      return fill(box, h("fieldset", { id: "seat-choice", class: "inline-choice" },
        h("legend", {}, seatQuestion(seats[0])),
        [["0", sideName(0)], ["1", sideName(1)], ["", "Not noted"]].map(([value, label], n) => h("label", {},
          h("input", { type: "radio", name: "seat", value, checked: n === 0 }), h("span", { class: "seat-side" },
            label)))));
    }
    return fill(box, SIDES.map((side, s) => h("div", { class: "field" },
      h("label", { for: `seat-${side.toLowerCase()}` }, `Seat of ${sideName(s)}`),
      h("select", { id: `seat-${side.toLowerCase()}` }, h("option", { value: "" }, "Not noted"),
        seats.map((name) => h("option", { value: name }, name))))));
  }

  // Each side's seat as the game takes it ({} where none is noted).
  function value() {
    if (!seats.length) return [{}, {}];
    if (seats.length === 2) {
      const first = box.querySelector("input[name=seat]:checked").value;
      if (first === "") return [{}, {}];
      return first === "0" ? [{ seat: seats[0] }, { seat: seats[1] }] : [{ seat: seats[1] }, { seat: seats[0] }];
    }
    return SIDES.map((side) => {
      const chosen = box.querySelector(`#seat-${side.toLowerCase()}`).value;
      return chosen ? { seat: chosen } : {};
    });
  }

  // The names in the question follow the players picked.
  function label() {
    box.querySelectorAll(".seat-side").forEach((span, n) => { if (n < 2) span.textContent = sideName(n); });
  }

  return { draw, value, label, clear: () => fill(box) };
}
