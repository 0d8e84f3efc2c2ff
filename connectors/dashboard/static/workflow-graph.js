// A workflow drawn as a small layered SVG graph, left to right: each step a box (its name,
// type and state) linking to its job page, each parent -> child an arrow. Steps come
// parents first (GET /api/v1/workflows/{id}), so one pass gives each its layer: one more
// than its deepest parent's.
//
// A wait (an hourglass) says the signal it waits for, or the approval's prompt; a sleep (a
// moon) the instant it wakes. A map is one box however many items it has: the API counts
// its items by state, drawn as a line of text and a bar of one segment per state; the
// children a handler spawned are counted at their spawner the same way. Both are drawn as
// a pile, a second box showing behind the first. Boxes grow with their lines, so a column
// stacks boxes of different heights.

import { svg } from "./charts.js";
import { duration, wallTime, zoneName } from "./dom.js";

const W = 200, GAP_X = 56, GAP_Y = 14, PAD = 8, LINE = 18, BAR = 10, PILE = 4;
const CHARS = 31;  // what a line of a box holds at 12px before it is cut with an ellipsis
const ENDED = ["SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "EXPIRED"];
// A bar's segments, left to right: what has ended well, then badly, then what runs, then
// what waits.
const SEGMENTS = ["SUCCEEDED", "DEAD_LETTERED", "EXPIRED", "CANCELLED", "RUNNING", "FAILED_RETRYING",
  "QUEUED", "SCHEDULED", "WAITING", "PAUSED", "BLOCKED", "SUBMITTED"];

export function layers(steps) {
  const layer = new Map();
  for (const step of steps) {
    const above = step.depends_on.filter((id) => layer.has(id)).map((id) => layer.get(id));
    layer.set(step.job_id, above.length ? Math.max(...above) + 1 : 0);
  }
  return layer;
}

const fit = (text) => (text.length > CHARS ? `${text.slice(0, CHARS - 1)}…` : text);

// An instant short enough for a box: the time of day, with the date unless it is today.
function short(ms) {
  const wall = wallTime(ms);
  const today = wallTime(Date.now()).slice(0, 10) === wall.slice(0, 10);
  return `${today ? wall.slice(11, 19) : wall.slice(0, 16)} ${zoneName(ms)}`;
}

// "37 of 100 items done", then "2 failed · 5 running" (what has not ended well, and what
// runs); by_state: state -> members, as the API counts them.
export function memberSummary(members, noun) {
  const n = (...states) => states.reduce((sum, s) => sum + (members.by_state[s] ?? 0), 0);
  const rest = [[n("DEAD_LETTERED", "EXPIRED"), "failed"], [n("CANCELLED"), "cancelled"],
    [n("FAILED_RETRYING"), "retrying"], [n("RUNNING"), "running"]]
    .filter(([count]) => count > 0).map(([count, what]) => `${count} ${what}`);
  return { done: n(...ENDED), head: `${n(...ENDED)} of ${members.total} ${noun} done`, rest: rest.join(" · ") };
}

function waitLine(step) {
  const held = step.held ?? {};
  const signal = held.signal ?? step.waiting_for[0] ?? "?";
  if (held.approval) return `approval: ${held.prompt ?? signal}`;
  if (step.state === "SUCCEEDED") return `signal '${signal}' came`;
  if (step.state === "EXPIRED") return `no signal '${signal}' in time`;
  return `waits for signal '${signal}'`;
}

function sleepLine(step) {
  const held = step.held ?? {};
  const wake = step.state === "WAITING" || step.state === "SUCCEEDED" ? step.scheduled_at_ms : held.until_ms;
  if (wake) return `${step.state === "SUCCEEDED" ? "slept" : "sleeps"} until ${short(wake)}`;
  return held.for_ms ? `sleeps ${duration(held.for_ms)}` : "sleeps";
}

// What a box shows: its first line, the lines below it (each [text, class]), the members
// its bar counts, and the glyph before its name.
function content(step) {
  const label = step.step ?? step.job_id.slice(-8);
  const lines = [];
  let head = `${label} · ${step.job_type}`, members = null, glyph = null;
  if (step.kind === "wait") {
    glyph = "wait";
    head = `${label} · wait`;
    lines.push([waitLine(step), "detail"]);
  } else if (step.kind === "sleep") {
    glyph = "sleep";
    head = `${label} · sleep`;
    lines.push([sleepLine(step), "detail"]);
  } else if (step.kind === "map") {
    glyph = "map";
    head = `${label} · map of ${step.held?.item_type ?? "items"}`;
    members = step.items;
    if (!members) {
      const over = step.held?.over ? `over '${step.held.over}'` : "its parent's list";
      lines.push([`${over}${step.held?.max_concurrency ? `, ${step.held.max_concurrency} at a time` : ""}`, "detail"]);
    }
  }
  for (const [group, noun] of [[members, "items"], [step.children, "children"]]) {
    if (!group) continue;
    const summary = memberSummary(group, noun);
    lines.push([summary.head, `summary ${noun}`]);
    if (summary.rest) lines.push([summary.rest, `summary ${noun}`]);
  }
  const timeout = step.kind === "wait" && step.state === "WAITING" && step.scheduled_at_ms
    ? ` · until ${short(step.scheduled_at_ms)}` : "";
  lines.push([`${step.state}${timeout}`, "state-label"]);
  const counted = members ?? step.children;
  return { head, lines, glyph, counted, height: 10 + LINE * (lines.length + 1) + (counted ? BAR : 0) };
}

function place(steps, boxes) {
  const layer = layers(steps);
  const bottom = [];
  const at = new Map();
  for (const step of steps) {
    const column = layer.get(step.job_id);
    const y = bottom[column] ?? PAD;
    at.set(step.job_id, { x: PAD + column * (W + GAP_X), y, h: boxes.get(step.job_id).height });
    bottom[column] = y + boxes.get(step.job_id).height + GAP_Y + (boxes.get(step.job_id).counted ? PILE : 0);
  }
  const width = PAD * 2 + Math.max(...layer.values()) * (W + GAP_X) + W + PILE;
  const height = Math.max(...bottom) - GAP_Y + PAD;
  return { at, width, height };
}

function edge(from, to, parent, child) {
  const x1 = from.x + W, y1 = from.y + from.h / 2, x2 = to.x, y2 = to.y + to.h / 2, bend = GAP_X / 2;
  return svg("path", { class: "edge", "data-edge": `${parent}>${child}`, "marker-end": "url(#arrow)",
    d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}` });
}

// A glyph of a few strokes, 12 px, drawn rather than taken from a font that may lack it.
const GLYPHS = {
  wait: "M0,0 H10 L0,12 H10 Z",  // an hourglass
  sleep: "M7,0 A6,6 0 1 0 12,9 A4.5,4.5 0 0 1 7,0 Z",  // a crescent moon
  map: "M0,3 H9 V12 H0 Z M3,0 H12 V9",  // a card before another
};

function bar(members, x, y) {
  const group = svg("g", { class: "bar" });
  const width = W - 16;
  let left = x;
  for (const state of SEGMENTS) {
    const count = members.by_state[state] ?? 0;
    if (!count) continue;
    const part = (width * count) / Math.max(members.total, 1);
    group.append(svg("rect", { class: `segment ${state}`, "data-segment": state, x: left, y, width: part, height: 6 }));
    left += part;
  }
  return group;
}

function node(step, { x, y }, box, current) {
  const link = svg("a", { href: `#/jobs/${encodeURIComponent(step.job_id)}`, "data-node": step.job_id,
    "data-state": step.state, "data-kind": step.kind ?? "job",
    class: `node ${step.kind ?? "job"} ${step.state}${current ? " current" : ""}` });
  for (const [group, noun] of [[step.items, "items"], [step.children, "children"]]) {
    if (!group) continue;
    link.setAttribute(`data-${noun}-total`, group.total);
    link.setAttribute(`data-${noun}-done`, memberSummary(group, noun).done);
  }
  const said = box.lines.map(([text]) => text).join("; ");
  link.append(svg("title", {}, `${step.job_id} (${box.head}; ${said})`),
    svg("rect", { class: "box", x, y, width: W, height: box.height, rx: 5 }));
  const indent = box.glyph ? 26 : 8;
  if (box.glyph) link.append(svg("path", { class: `glyph ${box.glyph}`, d: GLYPHS[box.glyph], transform: `translate(${x + 8},${y + 7})` }));
  link.append(svg("text", { x: x + indent, y: y + 18, class: "name" }, fit(box.head)));
  box.lines.forEach(([text, cls], i) => {
    const last = i === box.lines.length - 1;
    const at = y + 18 + LINE * (i + 1) + (last && box.counted ? BAR : 0);
    link.append(svg("text", { x: x + 8, y: at, class: cls }, fit(text)));
  });
  if (box.counted) link.append(bar(box.counted, x + 8, y + 18 + LINE * (box.lines.length - 1) + 5));
  return link;
}

// Whether the job shown is a member (a map's item, a spawned child) drawn inside `step`.
function holds(step, currentStep) {
  return Boolean(step.step && currentStep && (step.items || step.children)
    && (currentStep.startsWith(`${step.step}[`) || currentStep.startsWith(`${step.step}/`)));
}

// steps: [{job_id, step, job_type, kind, state, depends_on, held, items, children, ...}],
// parents first; current: the job shown (and its step, to outline the box holding it).
export function workflowGraph(steps, current, currentStep = null) {
  const boxes = new Map(steps.map((step) => [step.job_id, content(step)]));
  const { at, width, height } = place(steps, boxes);
  const graph = svg("svg", { class: "workflow", id: "workflow-graph", width, height,
    viewBox: `0 0 ${width} ${height}` });
  const arrow = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  arrow.append(svg("path", { d: "M0,0 L10,5 L0,10 z" }));
  const defs = svg("defs", {});
  defs.append(arrow);
  graph.append(defs);
  for (const step of steps) {
    for (const parent of step.depends_on) {
      if (at.has(parent)) graph.append(edge(at.get(parent), at.get(step.job_id), parent, step.job_id));
    }
  }
  const shown = steps.some((step) => step.job_id === current);
  for (const step of steps) {
    const where = at.get(step.job_id), box = boxes.get(step.job_id);
    if (box.counted) {
      graph.append(svg("rect", { class: `pile ${step.state}`, x: where.x + PILE, y: where.y + PILE,
        width: W, height: box.height, rx: 5 }));
    }
    const outlined = step.job_id === current || (!shown && holds(step, currentStep));
    graph.append(node(step, where, box, outlined));
  }
  return graph;
}
