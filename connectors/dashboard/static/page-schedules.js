// Schedules: the recurring jobs and recurring workflows not ended (GET /api/v1/schedules),
// newest first, with their cron expression and time zone, their next runs (computed from
// the schedule), whether they are paused, pause and resume (a recurring job's through
// /api/v1/jobs, a recurring workflow's through /api/v1/workflows) and their last runs.
// Redrawn when one of them (a workflow: its own status) changes on the live stream.

import { get, post } from "./api.js";
import { fill, h, jobLink, minuteTime, state, table, time, zoneName } from "./dom.js";

function nextRuns(s) {
  if (!s.next_runs_ms.length) return h("span", { class: "message" }, "none: the schedule has ended");
  return h("ol", { class: `runs${s.paused ? " paused" : ""}`, "data-next-runs": s.id,
    title: s.paused ? "Paused: these run only once it is resumed" : null },
  s.next_runs_ms.map((ms) => h("li", { class: "mono", "data-next-run": ms }, minuteTime(ms))));
}

function lastRuns(s) {
  if (!s.last_runs.length) return h("span", { class: "message" }, "none yet");
  return h("ol", { class: "runs", "data-last-runs": s.id }, s.last_runs.map((run) => h("li", {
    title: run.error ?? run.id }, state(run.outcome), " ", h("span", { class: "mono" }, time(run.at_ms)))));
}

function what(s) {
  if (s.kind === "job") return [jobLink(s.id), h("div", { class: "mono sub" }, s.job_type)];
  return [h("span", { class: "mono" }, s.id),
    h("div", { class: "sub" }, `workflow: ${s.steps.join(", ")}`)];
}

export function render(root, { params, me }) {
  const message = h("p", { class: "message", id: "schedule-message", role: "status" });
  const body = h("tbody");
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "More");
  const owner = params.get("owner") ?? "";
  const listed = new Set();
  let cursor = null, reload = null, stopped = false;

  const command = async (name, s, button) => {
    button.disabled = true;
    try {
      const path = s.kind === "workflow"
        ? `/api/v1/workflows/${encodeURIComponent(s.id)}/${name}?owner=${encodeURIComponent(s.owner)}`
        : `/api/v1/jobs/${encodeURIComponent(s.id)}/${name}`;
      await post(path, { reason: `${name} from the schedules page` });
      message.textContent = `${name} of ${s.id} sent`;
    } catch (error) {
      message.textContent = error.message;
      button.disabled = false;
    }
  };
  const buttons = (s) => {
    return s.paused
      ? h("button", { type: "button", class: "secondary", "data-schedule-command": "resume",
        onclick: (e) => command("resume", s, e.target) }, "Resume")
      : h("button", { type: "button", class: "secondary", "data-schedule-command": "pause",
        onclick: (e) => command("pause", s, e.target) }, "Pause");
  };
  const row = (s) => {
    listed.add(s.status_id ?? s.id);
    return h("tr", { "data-schedule": s.id, "data-kind": s.kind },
      h("td", {}, what(s)), me.admin ? h("td", {}, s.owner) : null,
      h("td", {}, h("code", { "data-cron": s.id }, s.expression), h("div", { class: "sub" }, s.timezone)),
      h("td", { "data-paused": String(s.paused) }, s.paused ? state("PAUSED") : state(s.state)),
      h("td", {}, nextRuns(s)), h("td", {}, lastRuns(s)), h("td", {}, buttons(s)));
  };
  const load = async (again = true) => {
    const page = await get("/api/v1/schedules", { owner, cursor: again ? null : cursor, limit: 50 });
    if (stopped) return;
    if (again) { body.replaceChildren(); listed.clear(); }
    body.append(...page.items.map(row));
    cursor = page.next_cursor;
    more.hidden = cursor === null;
    note.textContent = body.children.length ? "" : "No recurring job or workflow.";
    root.dataset.loadedAt = String(Date.now());
  };
  const note = h("p", { class: "message" });
  const filter = me.admin ? h("form", { class: "filters", id: "schedule-filter",
    onsubmit: (event) => {
      event.preventDefault();
      const value = String(new FormData(event.target).get("owner") ?? "");
      location.hash = value ? `#/schedules?owner=${encodeURIComponent(value)}` : "#/schedules";
    } }, h("label", {}, "owner", h("input", { name: "owner", value: owner })),
  h("button", { type: "submit" }, "Filter")) : null;
  more.addEventListener("click", () => load(false));
  const zone = zoneName();
  fill(root, h("h1", {}, "Schedules"),
    h("p", { class: "message" }, `Recurring jobs and workflows not ended; times in ${zone}, each cron read in its own zone.`),
    filter,
    h("div", { class: "scroll" }, table([["schedule"], me.admin ? ["owner"] : null, ["cron (its zone)"], ["state"],
      [`next runs (${zone})`], ["last runs"], [""]].filter(Boolean), [], { id: "schedules" })),
    note, more, message);
  root.querySelector("#schedules tbody").replaceWith(body);
  load();
  return {
    onStatus(job) {
      if (listed.has(job.job_id) && !reload) reload = setTimeout(() => { reload = null; load(); }, 300);
    },
    stop() { stopped = true; if (reload) clearTimeout(reload); },
  };
}
