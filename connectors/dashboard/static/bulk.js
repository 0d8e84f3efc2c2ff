// Bulk actions on the jobs list: the rows selected (a checkbox each, and one for every row
// shown) are cancelled, triggered or redriven, one request per job, once a bar naming
// the action and the count is confirmed; then a summary says, job by job, what the API
// answered. Redrive applies to DEAD_LETTERED jobs only (POST /api/v1/dlq/redrive with
// the job's id); the others are listed as skipped, not sent.

import { post } from "./api.js";
import { fill, h, jobLink, table } from "./dom.js";

const AT_ONCE = 4;

const ACTIONS = {
  cancel: { label: "Cancel", danger: true, verb: "cancelled",
    applies: () => null,
    send: (job) => post(`/api/v1/jobs/${encodeURIComponent(job.job_id)}/cancel`,
      { reason: "bulk cancel from the dashboard" }) },
  trigger: { label: "Trigger", verb: "triggered",
    applies: () => null,
    send: (job) => post(`/api/v1/jobs/${encodeURIComponent(job.job_id)}/trigger`) },
  redrive: { label: "Redrive", verb: "redriven",
    applies: (job) => (job.state === "DEAD_LETTERED" ? null : `not dead-lettered (${job.state})`),
    send: async (job) => {
      const done = await post("/api/v1/dlq/redrive", { job_id: job.job_id, job_type: job.job_type, limit: 1 });
      if (!done.job_ids.includes(job.job_id)) throw new Error("no dead letter of it was found");
    } },
};

// Each of `jobs` through `send`, AT_ONCE at a time; [job, error message or null] each.
async function each(jobs, send) {
  const results = new Array(jobs.length);
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) {
      const i = next++;
      try {
        await send(jobs[i]);
        results[i] = [jobs[i], null];
      } catch (error) {
        results[i] = [jobs[i], error.message];
      }
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, lane));
  return results;
}

// The bar above the list: selected(): the jobs selected, in the list's order; done(): called
// after an action, to clear the selection.
export function bulkBar(selected, done) {
  const count = h("span", { class: "message", id: "bulk-count" }, "0 selected");
  const confirm = h("div", { class: "confirm", id: "bulk-confirm", role: "alertdialog", hidden: true });
  const summary = h("div", { id: "bulk-summary" });
  const buttons = Object.entries(ACTIONS).map(([name, action]) => h("button", {
    type: "button", class: action.danger ? "danger" : "secondary", "data-bulk": name, disabled: true,
    onclick: () => ask(name) }, action.label));

  const run = async (name, jobs) => {
    const action = ACTIONS[name];
    for (const b of buttons) b.disabled = true;
    fill(summary, h("p", { class: "message" }, `${action.label}: sending ${jobs.length}…`));
    const skipped = jobs.map((job) => [job, action.applies(job)]).filter(([, why]) => why);
    const sent = await each(jobs.filter((job) => !action.applies(job)), action.send);
    const ok = sent.filter(([, error]) => !error).length;
    const failed = sent.length - ok;
    const rows = [...sent.map(([job, error]) => [job, error ? "failed" : "ok", error ?? action.verb]),
      ...skipped.map(([job, why]) => [job, "skipped", why])];
    fill(summary,
      h("h2", {}, h("span", {}, `${action.label}: ${ok} ${action.verb}, ${failed} failed${skipped.length ? `, ${skipped.length} skipped` : ""}`),
        h("button", { type: "button", class: "secondary", id: "bulk-dismiss", onclick: () => summary.replaceChildren() }, "Dismiss")),
      table([["job"], ["type"], ["result"], ["detail"]], rows.map(([job, result, detail]) =>
        h("tr", { "data-job": job.job_id, "data-result": result },
          h("td", {}, jobLink(job.job_id)), h("td", { class: "mono" }, job.job_type),
          h("td", {}, h("span", { class: `outcome ${result}` }, result)), h("td", { class: "reason" }, detail))),
      { id: "bulk-results" }));
    done();
  };

  const ask = (name) => {
    const jobs = selected();
    if (!jobs.length) return;
    const action = ACTIONS[name];
    const close = () => { confirm.hidden = true; confirm.replaceChildren(); };
    const noun = `${jobs.length} job${jobs.length === 1 ? "" : "s"}`;
    fill(confirm, h("span", {}, `${action.label} ${noun}?${name === "cancel" ? " This cannot be undone." : ""}`),
      h("button", { type: "button", class: action.danger ? "danger" : "", "data-bulk-confirm": name,
        onclick: () => { close(); run(name, jobs); } }, `Yes, ${action.label.toLowerCase()} ${noun}`),
      h("button", { type: "button", class: "secondary", "data-bulk-dismiss": name, onclick: close }, "No"));
    confirm.hidden = false;
  };

  return {
    element: [h("div", { class: "actions bulk" }, count, buttons), confirm, summary],
    update(n) {
      count.textContent = `${n} selected`;
      for (const b of buttons) b.disabled = n === 0;
      if (n === 0) { confirm.hidden = true; confirm.replaceChildren(); }
    },
  };
}
