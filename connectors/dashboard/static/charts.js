// Line charts drawn as SVG: time on x, one polyline per series, an optional dashed
// threshold line (the 2 s firing promise on the lateness chart).

import { wallTime, zoneName } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const W = 560, H = 180, LEFT = 44, RIGHT = 8, TOP = 8, BOTTOM = 20;

// An SVG element with its attributes and, optionally, its text (the workflow graph too).
export function svg(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  if (text !== undefined) el.textContent = text;
  return el;
}

// series: [{name, color, points: [[x, y|null], ...]}]; threshold: {value, label} or null
export function lineChart(series, { unit = "", threshold = null, id = null } = {}) {
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" });
  if (id) chart.setAttribute("id", id);
  const xs = series.flatMap((s) => s.points.map(([x]) => x));
  const ys = series.flatMap((s) => s.points.map(([, y]) => y)).filter((y) => y !== null);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const top = Math.max(1, ...ys, threshold ? threshold.value * 1.25 : 0);
  const px = (x) => LEFT + ((x - x0) / Math.max(1, x1 - x0)) * (W - LEFT - RIGHT);
  const py = (y) => H - BOTTOM - (y / top) * (H - TOP - BOTTOM);
  for (const frac of [0, 0.5, 1]) {
    const y = py(top * frac);
    chart.append(svg("line", { x1: LEFT, x2: W - RIGHT, y1: y, y2: y, stroke: "#e4e7ed" }));
    chart.append(svg("text", { x: 2, y: y + 3 }, `${+(top * frac).toPrecision(3)}${unit}`));
  }
  if (xs.length) {
    chart.append(svg("text", { x: LEFT, y: H - 4 }, wallTime(x0).slice(11, 19)));
    chart.append(svg("text", { x: W - RIGHT - 70, y: H - 4, class: "axis-end" },
      `${wallTime(x1).slice(11, 19)} ${zoneName(x1)}`));
  }
  if (threshold) {
    const y = py(threshold.value);
    chart.append(svg("line", { x1: LEFT, x2: W - RIGHT, y1: y, y2: y, stroke: "#c4320a",
      "stroke-dasharray": "6 4", class: "threshold" }));
    chart.append(svg("text", { x: W - RIGHT - 90, y: y - 4, fill: "#c4320a" }, threshold.label));
  }
  for (const s of series) {
    const points = s.points.filter(([, y]) => y !== null).map(([x, y]) => `${px(x)},${py(y)}`);
    if (points.length) {
      chart.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: s.color,
        "stroke-width": 1.6, "data-series": s.name }));
    }
  }
  return chart;
}

export function legend(series) {
  const box = document.createElement("div");
  box.className = "legend";
  for (const s of series) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = s.color;
    item.append(swatch, s.name);
    box.append(item);
  }
  return box;
}
