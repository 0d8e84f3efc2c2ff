// Re-run a job with edited parameters: its parameters (GET /api/v1/jobs/{id}/params) in
// an editable JSON box, checked as you type; "Submit" sends a new one-off job of the same
// type, owner, priority, pool, retry policy, timeout and labels (POST /api/v1/jobs), with
// the label rerun.of naming this one, then opens the new job's page.

import { get, post } from "./api.js";
import { h } from "./dom.js";

const MAX_LABELS = 32;
const ENGINE_LABELS = /^(jobstream|backfill)\./;  // the engine's own: not a new job's

// The parameters typed, or an error message saying what is wrong with them.
export function parseParams(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `Not valid JSON: ${error.message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "The parameters must be a JSON object ({...})." };
  }
  return { value };
}

export function rerunBody(job, params) {
  const labels = Object.fromEntries(Object.entries(job.labels ?? {}).filter(([k]) => !ENGINE_LABELS.test(k)));
  if (Object.keys(labels).length < MAX_LABELS) labels["rerun.of"] = job.job_id;
  const body = { job_type: job.job_type, owner: job.owner, params, priority: job.priority, labels };
  for (const name of ["pool", "retry", "timeout_ms"]) if (job[name] != null) body[name] = job[name];
  return body;
}

// The re-run button and its editor, made once per job page and kept across its redraws
// (the live stream redraws the page: what is typed stays); setJob gives it the job as
// last read.
export function rerunner() {
  let job = null;
  const message = h("p", { class: "message", id: "rerun-message", role: "status" });
  const box = h("textarea", { id: "rerun-params", rows: 10, spellcheck: "false", "aria-label": "parameters (JSON)" });
  const submit = h("button", { type: "button", id: "rerun-submit" }, "Submit re-run");
  const what = h("p", {});
  const panel = h("div", { class: "panel rerun", id: "rerun", hidden: true },
    what, box, h("div", { class: "actions" }, submit,
      h("button", { type: "button", class: "secondary", id: "rerun-close",
        onclick: () => { panel.hidden = true; } }, "Close")),
    message);
  const check = () => {
    const parsed = parseParams(box.value);
    box.classList.toggle("invalid", Boolean(parsed.error));
    box.setAttribute("aria-invalid", parsed.error ? "true" : "false");
    message.className = parsed.error ? "error" : "message";
    message.textContent = parsed.error ?? "";
    submit.disabled = Boolean(parsed.error);
    return parsed;
  };
  box.addEventListener("input", check);
  const open = async (event) => {
    const button = event.target;
    button.disabled = true;
    try {
      const params = await get(`/api/v1/jobs/${encodeURIComponent(job.job_id)}/params`);
      box.value = JSON.stringify(params, null, 2);
      panel.hidden = false;
      check();
      box.focus();
    } catch (error) {
      panel.hidden = false;
      message.className = "error";
      message.textContent = `Its parameters could not be read: ${error.message}`;
      submit.disabled = true;
    } finally {
      button.disabled = false;
    }
  };
  submit.addEventListener("click", async () => {
    const parsed = check();
    if (parsed.error) return;
    submit.disabled = true;
    try {
      const made = await post("/api/v1/jobs", rerunBody(job, parsed.value));
      location.hash = `#/jobs/${encodeURIComponent(made.job_id)}`;
    } catch (error) {
      message.className = "error";
      message.textContent = `Not submitted: ${error.message}`;
      submit.disabled = false;
    }
  });
  const element = [h("div", { class: "actions" },
    h("button", { type: "button", class: "secondary", id: "rerun-open", onclick: open },
      "Re-run with edited parameters")), panel];
  return {
    element,
    setJob(found) {
      job = found;
      what.textContent = `A new one-off ${job.job_type} job for ${job.owner}, priority ${job.priority}`
        + `${job.pool ? `, pool ${job.pool}` : ""}${job.retry ? ", the same retry policy" : ""}`
        + ", with these parameters:";
    },
  };
}
