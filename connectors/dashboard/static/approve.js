// The page of a one-time approval link (/approve.html#<token>): the step's prompt and
// Approve / Reject, with no API token. The token is in the fragment, so it never reaches a
// server log or a Referer, and goes to the API in a header and the body, never in a path;
// the API completes the step once (connectors/api/links.py).

import { h } from "./dom.js";

const token = location.hash.slice(1);
const path = "/api/v1/approvals/link";
const root = document.getElementById("approval");
const status = document.getElementById("approval-status");

async function call(init) {
  const response = await fetch(path, { ...init, headers: { ...(init.headers ?? {}), "X-Jobstream-Link": token } });
  const body = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Error(body?.detail ?? `HTTP ${response.status}`);
  return body;
}

async function show() {
  let step;
  try {
    step = await call({});
  } catch (error) {
    status.textContent = error.message;
    return;
  }
  status.textContent = "";
  const reason = h("input", { id: "reason", name: "reason", placeholder: "reason (kept in the history)", size: 40 });
  const decide = async (approve) => {
    for (const button of root.querySelectorAll("button")) button.disabled = true;
    try {
      await call({ method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ token, approve, reason: reason.value || null }) });
      status.textContent = approve ? "Approved. Thank you." : "Rejected. Thank you.";
      status.dataset.decided = approve ? "approved" : "rejected";
    } catch (error) {
      status.textContent = error.message;
    }
  };
  root.append(
    h("p", { class: "prompt", id: "prompt" }, step.prompt ?? `Signal ${step.signal}`),
    h("p", { class: "message" }, `Workflow ${step.workflow_id}, step ${step.step ?? step.job_id}`),
    h("div", { class: "actions" }, reason,
      h("button", { type: "button", id: "approve", onclick: () => decide(true) }, "Approve"),
      h("button", { type: "button", id: "reject", class: "danger", onclick: () => decide(false) }, "Reject")));
  root.append(status);
}

show();
