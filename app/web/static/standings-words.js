// What the ladder page says of its standings, in a colleague's words: each order, the number it ranks by and what
// that number is, and how ratings work. The mathematics stays in the documentation.
import { pct, whole } from "./dom.js";

// Each order: its label, the standings' number column, what that number is (one line, shown above the table), and
// the number of a row as shown. The number shown is the one the rows are sorted by, so the order always reads right.
export const ORDERS = [
  ["conservative", "The rating we are sure of (default)", "Sure rating",
    "Ranked by the rating we are sure of: each rating less the doubt its games leave, so that a lucky start does " +
    "not jump the regulars.", (p) => whole(p.conservative)],
  ["hodge", "Rating", "Rating", "Ranked by rating.", (p) => whole(p.elo)],
  ["field", "Expected score against everyone", "Against all",
    "Ranked by the share of games each would win against everyone on the ladder.", (p) => pct(p.strength)],
  ["disc", "Strength in the main style of play", "Disc",
    "Ranked by strength in the ladder's main style of play (the chart under Insights).", (p) => p.strength.toFixed(2)],
];
export const orderOf = (value) => ORDERS.find(([v]) => v === value);
export const FIELD_MOVES = "Ratings are measured against the whole field, so a rating can move when its player " +
  "did not play: the players it is compared with did.";
// "How ratings work".
export const HOW = [
  "Everyone starts near 1500 (a newcomer joins the field as it stands). Beating someone moves your rating up, " +
  "losing moves it down, by more when the result is a surprise.",
  "After a few games we cannot be sure of a rating yet: it could still be some way off either side, which is what " +
  "“give or take” says. The standings rank by the rating we are sure of (the rating less that doubt), so that a " +
  "newcomer's lucky start does not put them above the regulars; the doubt shrinks with every game.",
  "A player is ranked after 3 games against others, whatever the results: a 2–0 start is not ranked yet, while " +
  "1–5 after six games is, near the bottom. Until then they are listed below, saying how many games they need.",
];
