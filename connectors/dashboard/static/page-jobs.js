// Jobs: search by owner, type, state, label or id, newest first, a page at a time; rows
// follow the live stream, and a new job that matches appears on the first page.

import { get } from "./api.js";
import { h, jobLink, poolWait, state, table, time } from "./dom.js";

const STATES = ["", "SUBMITTED", "SCHEDULED", "BLOCKED", "QUEUED", "RUNNING", "FAILED_RETRYING",
  "PAUSED", "SUCCEEDED", "DEAD_LETTERED", "CANCELLED"];
const FILTERS = ["owner", "type", "state", "label"];

function row(job) {
  return h("tr", { "data-job": job.job_id },
    h("td", {}, jobLink(job.job_id)), h("td", { class: "mono" }, job.job_type),
    h("td", {}, job.owner), h("td", {}, state(job.state), poolWait(job)), h("td", { class: "num" }, job.attempt),
    h("td", {}, time(job.created_at_ms)), h("td", {}, time(job.updated_at_ms)));
}

function matches(job, query) {
  const [name, value] = query.label.split("=");
  return (!query.owner || job.owner === query.owner) && (!query.type || job.job_type === query.type)
    && (!query.state || job.state === query.state) && (!query.label || job.labels?.[name] === value);
}

function form(params) {
  const field = (name, input) => h("label", {}, name, input);
  return h("form", { class: "filters", id: "job-search" },
    field("id", h("input", { name: "id", placeholder: "job id", size: 28 })),
    field("owner", h("input", { name: "owner", value: params.get("owner") ?? "" })),
    field("type", h("input", { name: "type", value: params.get("type") ?? "" })),
    field("state", h("select", { name: "state" }, STATES.map((s) =>
      h("option", { value: s, selected: s === (params.get("state") ?? "") }, s || "any")))),
    field("label", h("input", { name: "label", placeholder: "name=value", value: params.get("label") ?? "" })),
    h("button", { type: "submit" }, "Search"));
}

export function render(root, { params }) {
  const search = form(params);
  const body = h("tbody");
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "More");
  const note = h("p", { class: "message" });
  let cursor = null;
  let pages = 0;
  let reload = null;
  const query = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ""]));

  const load = async (again = false) => {
    if (again) { cursor = null; pages = 0; }
    const page = await get("/api/v1/jobs", { ...query, cursor, limit: 50 });
    if (again) body.replaceChildren();
    pages += 1;
    body.append(...page.items.map(row));
    cursor = page.next_cursor;
    more.hidden = cursor === null;
    note.textContent = body.children.length ? "" : "No jobs match.";
  };
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(search);
    const id = String(data.get("id") ?? "").trim();
    if (id) { location.hash = `#/jobs/${encodeURIComponent(id)}`; return; }
    const next = new URLSearchParams();
    for (const f of FILTERS) if (data.get(f)) next.set(f, String(data.get(f)));
    location.hash = `#/jobs?${next}`;
  });
  more.addEventListener("click", () => load());
  const list = table([["id"], ["type"], ["owner"], ["state"], ["attempt", "num"], ["created"], ["updated"]], []);
  list.querySelector("tbody").replaceWith(body);
  list.id = "jobs";
  root.replaceChildren(h("h1", {}, "Jobs"), search, list, note, more);
  load();
  return {
    onStatus(job) {
      const old = body.querySelector(`tr[data-job="${job.job_id}"]`);
      if (old) old.replaceWith(row(job));
      else if (pages === 1 && !reload && matches(job, query)) {
        reload = setTimeout(() => { reload = null; load(true); }, 1000);
      }
    },
    stop() { if (reload) clearTimeout(reload); },
  };
}
