// Jobs: search by owner, type, state, label, creation time (from, to) or id, newest
// first, a page at a time; rows follow the live stream, and a new job that matches
// appears on the first page. Rows can be selected (one by one, or every row shown) for a
// bulk cancel, trigger or redrive (bulk.js).

import { get } from "./api.js";
import { bulkBar } from "./bulk.js";
import { h, jobLink, parseWallTime, poolWait, state, table, wallInput, wallTime, zoneName } from "./dom.js";

const STATES = ["", "SUBMITTED", "SCHEDULED", "BLOCKED", "WAITING", "QUEUED", "RUNNING",
  "FAILED_RETRYING", "PAUSED", "SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "EXPIRED"];
const FILTERS = ["owner", "type", "state", "label", "since", "until"];

// A time of the list: its zone is the column's, printed again only when it differs (a
// local time on the other side of a daylight-saving change).
function listTime(ms, zone) {
  if (ms === null || ms === undefined) return "";
  const own = zoneName(ms);
  return own === zone ? wallTime(ms) : `${wallTime(ms)} ${own}`;
}

function matches(job, query) {
  const [name, value] = query.label.split("=");
  return (!query.owner || job.owner === query.owner) && (!query.type || job.job_type === query.type)
    && (!query.state || job.state === query.state) && (!query.label || job.labels?.[name] === value)
    && (!query.since || job.created_at_ms >= Number(query.since))
    && (!query.until || job.created_at_ms < Number(query.until));
}

function form(params) {
  const field = (name, input) => h("label", {}, name, input);
  const zone = zoneName();
  return h("form", { class: "filters", id: "job-search" },
    field("id", h("input", { name: "id", placeholder: "job id", size: 28 })),
    field("owner", h("input", { name: "owner", value: params.get("owner") ?? "" })),
    field("type", h("input", { name: "type", value: params.get("type") ?? "" })),
    field("state", h("select", { name: "state" }, STATES.map((s) =>
      h("option", { value: s, selected: s === (params.get("state") ?? "") }, s || "any")))),
    field("label", h("input", { name: "label", placeholder: "name=value", value: params.get("label") ?? "" })),
    field(`created from (${zone})`, h("input", { name: "since", type: "datetime-local",
      value: wallInput(params.get("since") ? Number(params.get("since")) : null) })),
    field(`created before (${zone})`, h("input", { name: "until", type: "datetime-local",
      value: wallInput(params.get("until") ? Number(params.get("until")) : null) })),
    h("button", { type: "submit" }, "Search"));
}

export function render(root, { params }) {
  const search = form(params);
  const body = h("tbody");
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "More");
  const note = h("p", { class: "message", id: "jobs-note" });
  const zone = zoneName();
  const shown = new Map();  // job id -> the job as last drawn
  const selected = new Set();
  const all = h("input", { type: "checkbox", id: "select-all", "aria-label": "select every job shown" });
  const bulk = bulkBar(() => [...shown.keys()].filter((id) => selected.has(id)).map((id) => shown.get(id)),
    () => { selected.clear(); sync(); });
  let cursor = null;
  let pages = 0;
  let reload = null;
  const query = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ""]));

  const sync = () => {
    for (const box of body.querySelectorAll("input[data-select]")) box.checked = selected.has(box.dataset.select);
    all.checked = shown.size > 0 && [...shown.keys()].every((id) => selected.has(id));
    all.indeterminate = !all.checked && selected.size > 0;
    bulk.update(selected.size);
  };
  const row = (job) => {
    shown.set(job.job_id, job);
    const box = h("input", { type: "checkbox", "data-select": job.job_id, "aria-label": `select ${job.job_id}`,
      checked: selected.has(job.job_id) });
    box.addEventListener("change", () => {
      if (box.checked) selected.add(job.job_id); else selected.delete(job.job_id);
      sync();
    });
    return h("tr", { "data-job": job.job_id },
      h("td", { class: "pick" }, box),
      h("td", {}, jobLink(job.job_id)), h("td", { class: "mono" }, job.job_type),
      h("td", {}, job.owner), h("td", {}, state(job.state), poolWait(job)), h("td", { class: "num" }, job.attempt),
      h("td", { class: "mono" }, listTime(job.created_at_ms, zone)),
      h("td", { class: "mono" }, listTime(job.updated_at_ms, zone)));
  };
  all.addEventListener("change", () => {
    for (const id of shown.keys()) if (all.checked) selected.add(id); else selected.delete(id);
    sync();
  });

  const load = async (again = false) => {
    if (again) { cursor = null; pages = 0; }
    const page = await get("/api/v1/jobs", { ...query, cursor, limit: 50 });
    if (again) {
      body.replaceChildren();
      shown.clear();
      const ids = new Set(page.items.map((job) => job.job_id));
      for (const id of [...selected]) if (!ids.has(id)) selected.delete(id);
    }
    pages += 1;
    body.append(...page.items.map(row));
    cursor = page.next_cursor;
    more.hidden = cursor === null;
    note.textContent = body.children.length ? "" : "No jobs match.";
    sync();
  };
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(search);
    const id = String(data.get("id") ?? "").trim();
    if (id) { location.hash = `#/jobs/${encodeURIComponent(id)}`; return; }
    const next = new URLSearchParams();
    for (const f of FILTERS) {
      const value = String(data.get(f) ?? "");
      if (!value) continue;
      next.set(f, f === "since" || f === "until" ? String(parseWallTime(value) ?? "") : value);
    }
    location.hash = `#/jobs?${next}`;
  });
  more.addEventListener("click", () => load());
  const list = table([[all, "pick"], ["id"], ["type"], ["owner"], ["state"], ["attempt", "num"],
    [`created (${zone})`], [`updated (${zone})`]], []);
  list.querySelector("tbody").replaceWith(body);
  list.id = "jobs";
  root.replaceChildren(h("h1", {}, "Jobs"), search, ...bulk.element,
    h("div", { class: "scroll" }, list), note, more);
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
