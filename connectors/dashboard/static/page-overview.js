// Overview: counts by state and by type, throughput, lateness against the 2 s promise,
// dead letters and workers. Refreshed on every status change (at most once a second) and
// every 5 s for the activity charts.

import { get } from "./api.js";
import { legend, lineChart } from "./charts.js";
import { h, state, table } from "./dom.js";

const STATES = ["SUBMITTED", "SCHEDULED", "BLOCKED", "WAITING", "QUEUED", "RUNNING",
  "FAILED_RETRYING", "PAUSED", "SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "EXPIRED"];
const RATES = [
  { name: "fired/s", key: "fired_per_s", color: "#2f6fdf" },
  { name: "started/s", key: "started_per_s", color: "#1a7f37" },
  { name: "ended/s", key: "ended_per_s", color: "#8e44ad" },
];
const LATENESS = [
  { name: "fire p50", key: "fire_lateness_p50_ms", color: "#7fa7ee" },
  { name: "fire p99", key: "fire_lateness_p99_ms", color: "#2f6fdf" },
  { name: "start p50", key: "start_lateness_p50_ms", color: "#76c28f" },
  { name: "start p99", key: "start_lateness_p99_ms", color: "#1a7f37" },
];

function card(label, value, key) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label),
    h("div", { class: "value", "data-count": key }, value));
}

function series(rows, specs) {
  return specs.map((s) => ({ ...s, points: rows.map((r) => [r.at_ms, r[s.key]]) }));
}

function draw(root, data) {
  const running = data.by_state.RUNNING ?? 0;
  const types = Object.keys(data.by_type).sort();
  const shown = STATES.filter((s) => data.by_state[s] !== undefined || ["RUNNING", "SUCCEEDED"].includes(s));
  const rates = series(data.activity, RATES);
  const lateness = series(data.activity, LATENESS);
  root.replaceChildren(
    h("h1", {}, "Overview"),
    h("div", { class: "cards" },
      card("jobs", data.total, "total"), card("running", running, "RUNNING"),
      card("dead letters", data.dead_letters, "dead_letters"),
      card("workers", data.workers, "workers"),
      card("succeeded", data.by_state.SUCCEEDED ?? 0, "SUCCEEDED")),
    h("div", { class: "grid2" },
      h("div", {},
        h("h2", {}, "Jobs by state"),
        table([["state"], ["jobs", "num"]], shown.map((s) => h("tr", {},
          h("td", {}, state(s)),
          h("td", { class: "num", "data-state-count": s }, data.by_state[s] ?? 0)))),
        h("h2", {}, "Jobs by type"),
        table([["type"], ...shown.map((s) => [s.replace("_", " ").toLowerCase(), "num"])],
          types.map((t) => h("tr", { "data-type": t }, h("td", { class: "mono" }, t),
            shown.map((s) => h("td", { class: "num", "data-type-state": `${t}/${s}` },
              data.by_type[t][s] ?? 0)))))),
      h("div", {},
        h("h2", {}, "Throughput (per second, 5 s buckets)"),
        h("div", { class: "panel" }, lineChart(rates, { id: "throughput" }), legend(rates)),
        h("h2", {}, "Lateness (ms): fire and start, against the promise"),
        h("div", { class: "panel" },
          lineChart(lateness, { unit: "", id: "lateness",
            threshold: { value: data.promise_ms, label: `promise ${data.promise_ms / 1000} s` } }),
          legend(lateness)))));
}

export function render(root) {
  let pending = null;
  let stopped = false;
  const refresh = async () => {
    pending = null;
    if (stopped) return;
    draw(root, await get("/api/v1/overview"));
    root.dataset.loadedAt = String(Date.now());
  };
  const timer = setInterval(refresh, 5000);
  refresh();
  return {
    onStatus() { if (!pending) pending = setTimeout(refresh, 1000); },
    stop() { stopped = true; clearInterval(timer); if (pending) clearTimeout(pending); },
  };
}
