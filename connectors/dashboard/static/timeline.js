// A job's event timeline (GET /api/v1/jobs/{id}/events): every lifecycle event with its
// time, attempt, worker and lateness (FIRED and STARTED minus the instant it was due; a
// run's end: when its handler really began minus it); a run's heartbeats are one row with
// their count and the latest.

import { duration, h, state, table, time } from "./dom.js";

const OUTCOMES = new Set(["SUCCEEDED", "FAILED", "TIMED_OUT", "LOST", "CANCELLED", "DEAD_LETTERED",
  "EXPIRED"]);

function what(e) {
  if (e.kind === "HEARTBEAT") return `HEARTBEAT ×${e.count ?? 1}`;
  return e.kind;
}

function detail(e) {
  const parts = [];
  if (e.kind === "HEARTBEAT" && e.count > 1) parts.push(`latest ${time(e.last_at_ms)}`);
  if ((e.kind === "FIRED" || e.kind === "STARTED") && e.scheduled_at_ms != null) parts.push(`due ${time(e.scheduled_at_ms)}`);
  if (e.kind === "SCHEDULED" && e.scheduled_at_ms != null) parts.push(`due ${time(e.scheduled_at_ms)}`);
  if (e.kind === "RETRY_SCHEDULED" && e.scheduled_at_ms != null) parts.push(`retry due ${time(e.scheduled_at_ms)}`);
  if (e.launched_at_ms != null) parts.push(`handler began ${time(e.launched_at_ms)}`);
  if (e.error) parts.push(e.error);
  if (e.detail) parts.push(e.detail);
  if (e.by) parts.push(`by ${e.by}`);
  return parts.join(" · ");
}

function row(e) {
  const kind = OUTCOMES.has(e.kind) ? state(e.kind) : h("span", { class: "event-kind" }, what(e));
  return h("tr", { "data-kind": e.kind },
    h("td", { class: "mono" }, time(e.at_ms)), h("td", {}, kind),
    h("td", { class: "num" }, e.attempt ?? ""), h("td", { class: "mono" }, e.worker_id ?? ""),
    h("td", { class: "num", "data-lateness": e.lateness_ms ?? "" },
      e.lateness_ms == null ? "" : duration(e.lateness_ms)),
    h("td", { class: "reason" }, detail(e)));
}

export function timelineSection(found) {
  if (!found) return null;
  const events = found.events;
  const title = `Timeline (${events.length}${found.truncated ? ", the latest" : ""})`;
  return [h("h2", {}, title),
    events.length
      ? h("div", { class: "scroll" }, table([["time"], ["event"], ["attempt", "num"], ["worker"],
        ["lateness", "num"], ["detail"]], events.map(row), { id: "timeline" }))
      : h("p", { class: "message" }, "No event yet.")];
}
