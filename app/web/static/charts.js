// Hand-made SVG charts, drawn at the width of their box so that their text stays readable on a phone.
import { shortDate, svg, whole } from "./dom.js";

const FONT_PX = 12;

// Round numbers between lo and hi for an axis: about `count` of them, steps of 1, 2 or 5 times a power of ten.
function niceTicks(lo, hi, count) {
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) ticks.push(t);
  return ticks;
}

const HOUR = 3600e3;
const DAY = 24 * HOUR;
// In the reader's own locale: "14:00" or "2:00 PM", "5 Mar" or "Mar 5", "Mar" over "2026" (a year of two digits,
// "Mar 26", would read as a day).
const TIME = new Intl.DateTimeFormat(undefined, { hour: "numeric", minute: "2-digit" });
const MONTH = new Intl.DateTimeFormat(undefined, { month: "short" });
const YEAR = new Intl.DateTimeFormat(undefined, { year: "numeric" });
const sameDay = (a, b) => a.toDateString() === b.toDateString();

// Ticks for a time axis from t0 to t1 (ms): whole hours, days, weeks or months, at most `count` of them. Each is
// {t, lines}: a label of one or two lines. Ticks of days or more are dates; ticks within a day are times, and the
// first tick of each day shows its date under the time, so that the axis always says which day it is.
function timeTicks(t0, t1, count) {
  const span = t1 - t0;
  const months = [1, 2, 3, 6, 12].find((m) => span / (m * 30 * DAY) <= count);
  if (span > 60 * DAY && months) {
    const ticks = [];
    const d = new Date(t0);
    d.setHours(0, 0, 0, 0);
    d.setDate(1);
    while (d.getTime() < t0) d.setMonth(d.getMonth() + 1);
    while (d.getTime() <= t1) {
      if (d.getMonth() % months === 0) {
        // The first month and each January say their year under them.
        const year = ticks.length === 0 || d.getMonth() === 0 ? [YEAR.format(d)] : [];
        ticks.push({ t: d.getTime(), lines: [MONTH.format(d), ...year] });
      }
      d.setMonth(d.getMonth() + 1);
    }
    return ticks;
  }
  // Times of day only for games within two days: beyond, a tick a day or more reads better.
  const steps = [HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY]
    .filter((s) => s >= DAY || span <= 2 * DAY);
  const step = steps.find((s) => span / s <= count) || 28 * DAY;
  const start = new Date(t0);
  if (step >= DAY) start.setHours(0, 0, 0, 0);
  else start.setHours(start.getHours() - (start.getHours() % (step / HOUR)), 0, 0, 0); // 0:00, 6:00, 12:00, …
  const ticks = [];
  let previous = null;
  for (let t = start.getTime(); t <= t1; t += step) {
    // Steps of days are counted in local midnights (a day of 23 or 25 hours keeps the ticks at 0:00).
    const d = new Date(t);
    if (step >= DAY && d.getHours() !== 0) d.setHours(d.getHours() < 12 ? 0 : 24, 0, 0, 0);
    if (d.getTime() < t0) continue;
    const newDay = previous === null || !sameDay(previous, d);
    const lines = step >= DAY ? [shortDate(d)] : newDay ? [TIME.format(d), shortDate(d)] : [TIME.format(d)];
    ticks.push({ t: d.getTime(), lines });
    previous = d;
  }
  return ticks;
}

// Where each tick's label goes: centred under its tick but kept inside the chart, and left out where it would run
// into the label before it.
function placeTicks(ticks, x, width) {
  const placed = [];
  let right = -Infinity;
  for (const tick of ticks) {
    const w = Math.max(...tick.lines.map(textWidth));
    const centre = clamp(x(tick.t), w / 2 + 2, width - w / 2 - 2);
    if (centre - w / 2 < right + 8) continue;
    placed.push({ ...tick, x: centre });
    right = centre + w / 2;
  }
  return placed;
}

// The rating after each game against the date it was played. `points`: [{time (ms), elo, title, start}], oldest
// first; a point with `start` is the rating before the first game (drawn hollow, the line starts there).
export function ratingChart(points, width) {
  const height = Math.round(Math.min(300, Math.max(190, width * 0.42)));
  const pad = { left: 46, right: 14, top: 14, bottom: 44 };
  const times = points.map((p) => p.time);
  const elos = points.map((p) => p.elo);
  let [t0, t1] = [Math.min(...times), Math.max(...times)];
  if (t1 - t0 < HOUR) [t0, t1] = [t0 - HOUR, t1 + HOUR];
  let [lo, hi] = [Math.min(...elos), Math.max(...elos)];
  const margin = Math.max(10, (hi - lo) * 0.08);
  [lo, hi] = [lo - margin, hi + margin];
  const x = (t) => pad.left + ((t - t0) / (t1 - t0)) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - ((v - lo) / (hi - lo)) * (height - pad.top - pad.bottom);
  const yTicks = niceTicks(lo, hi, 4);
  const xTicks = placeTicks(timeTicks(t0, t1, Math.max(2, Math.floor((width - pad.left - pad.right) / 90))), x,
    width);
  const games = points.filter((p) => !p.start);
  const first = points[0];
  const last = points[points.length - 1];
  const line = points.map((p) => `${x(p.time).toFixed(1)},${y(p.elo).toFixed(1)}`).join(" ");
  const base = height - pad.bottom + 16;
  return svg("svg", { id: "rating-chart", class: "chart", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-labelledby": "rating-chart-title" },
  svg("title", { id: "rating-chart-title" }, `Rating over time: ${whole(first.elo)} on ` +
    `${shortDate(new Date(first.time))}, ${whole(last.elo)} on ${shortDate(new Date(last.time))}, highest ` +
    `${whole(Math.max(...elos))}.`),
  yTicks.map((v) => svg("g", { class: "tick" },
    svg("line", { class: "grid", x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }),
    svg("text", { x: pad.left - 6, y: y(v) + 4, "text-anchor": "end" }, whole(v)))),
  xTicks.map((tick) => svg("text", { class: "x-tick", x: tick.x, y: base, "text-anchor": "middle" },
    tick.lines.map((text, n) => svg("tspan", { x: tick.x, dy: n ? 15 : 0 }, text)))),
  svg("polyline", { class: "line", points: line }),
  first.start ? svg("circle", { class: "start", cx: x(first.time), cy: y(first.elo), r: 4 },
    svg("title", {}, first.title)) : null,
  games.length <= 80 ? games.map((p) => svg("circle", { class: "dot", cx: x(p.time), cy: y(p.elo), r: 3.5 },
    svg("title", {}, p.title))) : null,
  svg("circle", { class: "dot last", cx: x(last.time), cy: y(last.elo), r: 5 }, svg("title", {}, last.title)));
}

// ---------- the disc chart ----------

let measurer;
function textWidth(text) {
  measurer = measurer || document.createElement("canvas").getContext("2d");
  measurer.font = `${FONT_PX}px ${getComputedStyle(document.body).fontFamily}`;
  return measurer.measureText(text).width;
}

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
const overlaps = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

// Whether the segment (x1, y1)-(x2, y2) runs through the box (its edges less a pixel): Liang-Barsky clipping.
function crosses(x1, y1, x2, y2, b) {
  const dx = x2 - x1;
  const dy = y2 - y1;
  let lo = 0;
  let hi = 1;
  const sides = [[-dx, x1 - b.x - 1], [dx, b.x + b.w - 1 - x1], [-dy, y1 - b.y - 1], [dy, b.y + b.h - 1 - y1]];
  for (const [p, q] of sides) {
    if (p === 0) {
      if (q < 0) return false;
    } else if (p < 0) {
      lo = Math.max(lo, q / p);
    } else {
      hi = Math.min(hi, q / p);
    }
  }
  return lo < hi;
}

// Where each label goes: beside its dot where there is room, else further out with a line to the dot. Every
// label is kept off the other labels and dots, and no line runs through a label, so that close players stay
// readable (on a phone, lines out to names once crossed other names).
function placeLabels(dots, bounds, named = () => true) {
  const taken = dots.filter((d, n) => named(n)).map((d) => ({ x: d.x - 5, y: d.y - 5, w: 10, h: 10 }));
  const labels = [];
  const leaders = [];
  const angles = [0, 180, -45, 45, -135, 135, -90, 90, -22, 22, -158, 158, -68, 68, -112, 112];
  return dots.map((d, n) => {
    if (!named(n)) return null;
    const w = textWidth(d.label) + 4;
    const hgt = FONT_PX + 4;
    for (const distance of [8, 16, 26, 38, 52, 68, 86]) {
      for (const angle of angles) {
        const rad = (angle * Math.PI) / 180;
        const cx = d.x + Math.cos(rad) * (distance + w / 2);
        const cy = d.y + Math.sin(rad) * (distance + hgt / 2);
        const box = { x: cx - w / 2, y: cy - hgt / 2, w, h: hgt };
        const inside = box.x >= bounds.x && box.y >= bounds.y && box.x + w <= bounds.x + bounds.w &&
          box.y + hgt <= bounds.y + bounds.h;
        if (!inside || taken.some((t) => overlaps(box, t))) continue;
        const leader = distance > 8 ? [d.x, d.y, clamp(d.x, box.x, box.x + w), clamp(d.y, box.y, box.y + hgt)] : null;
        if (leader && labels.some((b) => crosses(...leader, b))) continue;
        if (leaders.some((l) => crosses(...l, box))) continue;
        taken.push(box);
        labels.push(box);
        if (leader) leaders.push(leader);
        return { box, leader };
      }
    }
    return null; // no room anywhere near: the dot keeps its name as a tooltip
  });
}

// The players in the largest disc of the canonical form. `points`: [{label, x, y}]; both axes on one scale, so
// that angles (styles) are as the mathematics has them. Unlabelled, the names are only the dots' tooltips.
export function discChart(points, width, { labelled = true } = {}) {
  const height = Math.round(Math.min(440, Math.max(260, width * 0.62)));
  const pad = 24;
  const xs = points.map((p) => p.x).concat(0);
  const ys = points.map((p) => p.y).concat(0);
  const spanX = Math.max(...xs) - Math.min(...xs) || 1;
  const spanY = Math.max(...ys) - Math.min(...ys) || 1;
  // Room for labels around the dots: the dots use the middle of the plot.
  const scale = Math.min((width - 2 * pad) * 0.7 / spanX, (height - 2 * pad) * 0.75 / spanY);
  const midX = (Math.max(...xs) + Math.min(...xs)) / 2;
  const midY = (Math.max(...ys) + Math.min(...ys)) / 2;
  const sx = (v) => width / 2 + (v - midX) * scale;
  const sy = (v) => height / 2 - (v - midY) * scale;
  const dots = points.map((p) => ({ label: p.label, x: sx(p.x), y: sy(p.y) }));
  // `labelled`: every dot named, none, or the indices of those to name (a large ladder's leaders and "me").
  const named = labelled instanceof Set ? (n) => labelled.has(n) : () => labelled;
  const labels = placeLabels(dots, { x: 2, y: 2, w: width - 4, h: height - 4 }, named);
  return svg("svg", { id: "disc-plot", class: "chart", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-label": "The players' styles: each dot is a player, the direction from the centre is their " +
      "style, the distance how much it counts" },
  svg("line", { class: "axis", x1: pad, x2: width - pad, y1: sy(0), y2: sy(0) }),
  svg("line", { class: "axis", x1: sx(0), x2: sx(0), y1: pad, y2: height - pad }),
  dots.map((d, n) => {
    const place = labels[n];
    return svg("g", { class: "player" },
      place && place.leader ? svg("line", { class: "leader", x1: place.leader[0], y1: place.leader[1],
        x2: place.leader[2], y2: place.leader[3] }) : null,
      svg("circle", { class: labelled instanceof Set && named(n) ? "dot named" : "dot", cx: d.x, cy: d.y, r: 4 },
        svg("title", {}, d.label)),
      place ? svg("text", { class: "label", x: place.box.x + 2, y: place.box.y + FONT_PX }, d.label) : null);
  }));
}
