// A workflow drawn as a small layered SVG graph, left to right: each step a box (its name,
// type and state) linking to its job page, each parent -> child an arrow. Steps come
// parents first (GET /api/v1/workflows/{id}), so one pass gives each its layer: one more
// than its deepest parent's.

import { svg } from "./charts.js";

const W = 170, H = 46, GAP_X = 56, GAP_Y = 14, PAD = 8;

export function layers(steps) {
  const layer = new Map();
  for (const step of steps) {
    const above = step.depends_on.filter((id) => layer.has(id)).map((id) => layer.get(id));
    layer.set(step.job_id, above.length ? Math.max(...above) + 1 : 0);
  }
  return layer;
}

function place(steps) {
  const layer = layers(steps);
  const rows = [];
  const at = new Map();
  for (const step of steps) {
    const column = layer.get(step.job_id);
    const row = rows[column] = (rows[column] ?? -1) + 1;
    at.set(step.job_id, { x: PAD + column * (W + GAP_X), y: PAD + row * (H + GAP_Y) });
  }
  const width = PAD * 2 + Math.max(...layer.values()) * (W + GAP_X) + W;
  const height = PAD * 2 + Math.max(...rows) * (H + GAP_Y) + H;
  return { at, width, height };
}

function edge(from, to, parent, child) {
  const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2, bend = GAP_X / 2;
  return svg("path", { class: "edge", "data-edge": `${parent}>${child}`, "marker-end": "url(#arrow)",
    d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}` });
}

function node(step, { x, y }, current) {
  const label = step.step ?? step.job_id.slice(-8);
  const link = svg("a", { href: `#/jobs/${encodeURIComponent(step.job_id)}`, "data-node": step.job_id,
    "data-state": step.state, class: `node ${step.state}${step.job_id === current ? " current" : ""}` });
  link.append(svg("title", {}, `${step.job_id} (${step.state})`),
    svg("rect", { x, y, width: W, height: H, rx: 5 }),
    svg("text", { x: x + 8, y: y + 18, class: "name" }, `${label} · ${step.job_type}`),
    svg("text", { x: x + 8, y: y + 36, class: "state-label" }, step.state));
  return link;
}

// steps: [{job_id, step, job_type, state, depends_on}], parents first; current: the job shown.
export function workflowGraph(steps, current) {
  const { at, width, height } = place(steps);
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
  for (const step of steps) graph.append(node(step, at.get(step.job_id), current));
  return graph;
}
