// Dead letters: filter, inspect (the job page holds every attempt's error), and, for an
// admin token, redrive one job or every one shown, at most `rate` jobs a second.

import { get, post } from "./api.js";
import { fill, h, jobLink, table, time } from "./dom.js";

const FILTERS = ["type", "error_type", "owner"];

export function render(root, { params, me }) {
  const message = h("p", { class: "message", id: "dlq-message" });
  const rate = h("input", { name: "rate", type: "number", min: "0.1", step: "0.1", value: "10", size: 5 });
  const query = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ""]));
  const search = h("form", { class: "filters" },
    FILTERS.map((f) => h("label", {}, f.replace("_", " "), h("input", { name: f, value: query[f] }))),
    h("button", { type: "submit" }, "Filter"),
    me.admin ? h("label", {}, "redrive rate (jobs/s)", rate) : null);
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const f of FILTERS) { const v = new FormData(search).get(f); if (v) next.set(f, String(v)); }
    location.hash = `#/dlq?${next}`;
  });

  const redrive = async (body, button) => {
    button.disabled = true;
    message.textContent = "redriving…";
    try {
      const done = await post("/api/v1/dlq/redrive", { ...body, rate: Number(rate.value) || 10 });
      message.textContent = `redriven: ${done.job_ids.length} job(s) ${done.job_ids.join(", ")}`;
    } catch (error) {
      message.textContent = error.message;
    } finally {
      button.disabled = false;
    }
  };

  const load = async () => {
    const items = (await get("/api/v1/dlq", { ...query, limit: 500 })).items;
    const rows = items.map((d) => h("tr", { "data-job": d.job_id },
      h("td", {}, jobLink(d.job_id)), h("td", { class: "mono" }, d.job_type), h("td", {}, d.owner),
      h("td", {}, d.reason ?? ""), h("td", { class: "num" }, d.attempts ?? ""),
      h("td", {}, d.error_type ? `${d.error_type}: ${d.message ?? ""}` : ""),
      h("td", {}, time(d.dead_lettered_at_ms)),
      h("td", {}, me.admin ? h("button", { type: "button", "data-redrive": d.job_id,
        onclick: (e) => redrive({ job_id: d.job_id, limit: 1 }, e.target) }, "Redrive") : "")));
    const all = me.admin && items.length ? h("button", { type: "button", id: "redrive-all",
      onclick: (e) => redrive({ job_type: query.type || null, error_type: query.error_type || null,
        owner: query.owner || null, limit: items.length }, e.target) }, `Redrive all ${items.length} shown`) : null;
    fill(root, h("h1", {}, `Dead letters (${items.length})`), search,
      table([["job"], ["type"], ["owner"], ["reason"], ["attempts", "num"], ["last error"],
        ["dead-lettered"], [""]], rows, { id: "dead-letters" }),
      h("div", { class: "actions" }, all), message,
      me.admin ? null : h("p", { class: "message" }, "Redrive needs an admin token."));
  };
  load();
  return { onStatus() {}, stop() {} };
}
