// Approvals: the wait steps that ask a person (docs/workflows.md, "Approvals"), with their
// prompt. Approve or Reject sends the step's signal, recorded as this token's command with
// the reason given; each row also has the step's one-time link, to send to whoever decides.

import { get, post } from "./api.js";
import { fill, h, jobLink, table, time } from "./dom.js";

export function render(root) {
  const message = h("p", { class: "message", id: "approvals-message", role: "status" });

  const decide = async (item, approve, reason, row) => {
    for (const button of row.querySelectorAll("button")) button.disabled = true;
    message.textContent = approve ? "approving…" : "rejecting…";
    try {
      await post(`/api/v1/approvals/${encodeURIComponent(item.job_id)}`, { approve, reason: reason || null });
      message.textContent = `${approve ? "approved" : "rejected"}: ${item.workflow_id} / ${item.step ?? item.job_id}`;
      row.dataset.decided = approve ? "approved" : "rejected";
    } catch (error) {
      message.textContent = error.message;
      for (const button of row.querySelectorAll("button")) button.disabled = false;
    }
  };

  const load = async () => {
    const items = (await get("/api/v1/approvals")).items;
    const rows = items.map((item) => {
      const reason = h("input", { name: "reason", placeholder: "reason", size: 18 });
      const row = h("tr", { "data-approval": item.job_id });
      const link = new URL(item.link, location.origin).href;
      row.append(
        h("td", {}, item.workflow_id), h("td", {}, item.step ?? ""), h("td", {}, jobLink(item.job_id)),
        h("td", { class: "prompt" }, item.prompt ?? `signal ${item.signal}`),
        h("td", {}, time(item.expires_at_ms)),
        h("td", {}, h("a", { href: link, class: "mono", "data-link": item.job_id }, "one-time link")),
        h("td", { class: "actions" }, reason,
          h("button", { type: "button", "data-approve": item.job_id,
            onclick: () => decide(item, true, reason.value, row) }, "Approve"),
          h("button", { type: "button", class: "danger", "data-reject": item.job_id,
            onclick: () => decide(item, false, reason.value, row) }, "Reject")));
      return row;
    });
    fill(root, h("h1", {}, `Approvals (${items.length})`),
      items.length ? table([["workflow"], ["step"], ["job"], ["prompt"], ["expires"], ["link"], [""]],
        rows, { id: "approvals" }) : h("p", { class: "message" }, "No step waits for a person."),
      message);
  };
  load();
  // A step that begins or ends waiting changes the list: drawn again on its status.
  return {
    onStatus(doc) { if (doc.job_type === "jobstream.wait") load(); },
    stop() {},
  };
}
