// One job: its fields and schedule, its workflow as a graph, every attempt, and the
// commands it takes (none once it has ended; pause and resume for a recurring job only;
// trigger while it can run now, as POST .../trigger allows). Cancel takes an optional
// reason and stops a queued or running job too; a job of a workflow also offers to
// cancel the whole workflow. A cancel cannot be undone, so it is sent only once confirmed
// in the bar it opens. A cancelled job shows who cancelled it and why; below its attempts,
// a job lists the commands people gave it (the API's `commands`): when, which, who asked
// and why. A result too large to be inline (or bytes) is on jobs.results: its link fetches
// it from the API with the tab's token (a plain link would carry none) and saves it
// through a blob URL; a JSON one can be shown on the page instead. Each ended attempt's
// "logs" link shows the lines it wrote (run-logs.js). A run's progress (the API's
// `progress`, from the handler's ctx.progress) is a bar with its message, redrawn in place
// when a status event changes nothing else. Below the attempts, its event timeline
// (timeline.js); above them, a re-run with edited parameters (rerun.js). A change of
// another job of its workflow (a map's items can be thousands) redraws the graph alone,
// at most four times a second.

import { download, get, post } from "./api.js";
import { duration, fill, h, jobLink, poolWait, state, table, time } from "./dom.js";
import { rerunner } from "./rerun.js";
import { logsLink } from "./run-logs.js";
import { timelineSection } from "./timeline.js";
import { workflowGraph } from "./workflow-graph.js";

const ENDED = new Set(["SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "EXPIRED"]);
const NOT_FIRED = new Set(["SCHEDULED", "SUBMITTED"]);
const GRAPH_EVERY_MS = 250;

// Whether "run now" applies: a recurring job neither paused nor blocked, a one-off job
// that has not fired yet (connectors/api/commands.py refuses the rest with 409).
function triggerable(job) {
  if (ENDED.has(job.state) || job.state === "BLOCKED" || job.state === "PAUSED") return false;
  return Boolean(job.schedule?.cron) || NOT_FIRED.has(job.state);
}

async function workflow(job) {
  if (!job.workflow_id) return null;
  try {
    // A workflow id is its owner's: the owner named makes an admin's read unambiguous.
    const found = await get(`/api/v1/workflows/${encodeURIComponent(job.workflow_id)}?owner=${encodeURIComponent(job.owner)}`);
    return [h("h2", {}, `Workflow (${found.steps.length} steps)`), workflowGraph(found.steps, job.job_id, job.step)];
  } catch (error) {
    return [h("h2", {}, "Workflow"), h("p", { class: "message" }, error.message)];
  }
}

function schedule(job) {
  const s = job.schedule;
  if (!s) return "now";
  if (s.cron) return `cron ${s.cron.expression ?? JSON.stringify(s.cron)}${s.cron.timezone ? ` (${s.cron.timezone})` : ""}`;
  return s.run_at_ms ? `at ${time(s.run_at_ms)}` : "now";
}

const EXTENSIONS = { "application/json": "json", "text/html": "html", "text/plain": "txt",
  "text/csv": "csv", "image/png": "png", "application/pdf": "pdf" };

// A link that fetches the result at `path` and saves it as a file; for JSON, a second
// link shows it in `shown` (a <pre>) instead.
function resultLink(path, name) {
  const message = h("span", { class: "message" });
  const shown = h("pre", { class: "result", hidden: true });
  const fetchIt = async () => {
    message.textContent = "";
    try {
      return await download(path);
    } catch (error) {
      message.textContent = error.message;
      return null;
    }
  };
  const save = async (event) => {
    event.preventDefault();
    const blob = await fetchIt();
    if (!blob) return;
    const url = URL.createObjectURL(blob);
    const type = blob.type.split(";")[0].trim();
    const link = h("a", { href: url, download: `${name}.${EXTENSIONS[type] ?? "bin"}` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  };
  const show = async (event) => {
    event.preventDefault();
    const blob = await fetchIt();
    if (!blob) return;
    if (!/json|^text\//.test(blob.type)) {
      message.textContent = `${blob.size} bytes of ${blob.type || "binary"}: download it`;
      return;
    }
    const text = await blob.text();
    try {
      shown.textContent = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      shown.textContent = text;
    }
    shown.hidden = false;
  };
  return h("span", { class: "result-link" },
    h("a", { href: "#", "data-result": "download", onclick: save }, "download"), " ",
    h("a", { href: "#", "data-result": "show", onclick: show }, "show"), " ", message, shown);
}

// How far the current (or last) run has got: a bar, the percentage, the handler's message.
function progressOf(p) {
  return h("span", { id: "job-progress", "data-fraction": p.fraction, "data-at-ms": p.at_ms },
    h("progress", { max: "1", value: String(p.fraction) }), ` ${Math.floor(p.fraction * 100)}%`,
    p.message ? h("span", { class: "progress-message" }, ` ${p.message}`) : null,
    h("span", { class: "message" }, ` (${time(p.at_ms)})`));
}

// A status event that changes a job's progress and nothing else (the body of GET
// /api/v1/jobs/{id} but its parameters and commands): the bar alone is redrawn.
const OWN_OF_GET = new Set(["progress", "updated_at_ms", "params", "params_uri", "commands"]);
const rest = (job) => JSON.stringify(Object.entries(job).filter(([k]) => !OWN_OF_GET.has(k)));

function fields(job) {
  const rows = [
    ["id", h("span", { class: "mono" }, job.job_id)], ["type", job.job_type], ["owner", job.owner],
    ["state", [state(job.state), poolWait(job)]], ["priority", job.priority],
    ["created", time(job.created_at_ms)],
    ["requested", schedule(job)], ["due", time(job.scheduled_at_ms)],
    ["next due", time(job.next_fire_at_ms)], ["attempt", job.attempt], ["runs", job.runs],
    ["labels", Object.entries(job.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(", ")],
    ["parameters", job.params ? h("pre", {}, JSON.stringify(job.params, null, 2)) : `${job.params_bytes ?? 0} bytes`],
    ["result", job.result_uri
      ? resultLink(`/api/v1/jobs/${encodeURIComponent(job.job_id)}/result`, `${job.job_id}-result`)
      : (job.result ?? "")],
    ["last error", job.last_error ? `${job.last_error.error_type}: ${job.last_error.message}` : ""],
  ];
  if (job.cancellation) rows.push(["cancelled", h("span", { id: "cancellation" }, cancelledBy(job.cancellation))]);
  if (job.progress) rows.splice(4, 0, ["progress", progressOf(job.progress)]);
  if (job.queue_limit_ms) rows.splice(4, 0, ["queue limit", duration(job.queue_limit_ms)]);
  if (job.deadline_ms) rows.splice(4, 0, ["deadline", time(job.deadline_ms)]);
  if (job.pool) rows.splice(3, 0, ["pool", job.pool]);
  if (job.keys) rows.push(["keys", h("span", { id: "job-keys" }, keysOf(job.keys))]);
  const behind = (job.waiting_for ?? []).join(", ");
  if (job.held_by) rows.push(["held", h("span", { id: "job-held" },
    `on ${job.held_by}${behind ? `, behind ${behind}` : ""}`)]);
  if (job.joined_job_id) rows.push(["runs as", h("span", { id: "job-joined" }, jobLink(job.joined_job_id))]);
  if (job.workflow_id) rows.splice(1, 0, ["workflow", h("span", { class: "mono" }, job.workflow_id)],
    ["step", job.step ?? ""]);
  return h("dl", { class: "fields", id: "job-fields" }, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// A job's keys in a line, as `jobstream history` says them (docs/keys.md).
function keysOf(keys) {
  const said = {
    concurrency: (k) => `limit ${k.limit}`, rate: (k) => k.rate,
    debounce: (k) => `window ${duration(k.window_ms)}, keep ${k.keep.toLowerCase()}`,
    singleton: (k) => k.mode.toLowerCase(),
  };
  return Object.entries(keys).filter(([kind]) => said[kind])
    .map(([kind, k]) => `${kind} ${k.key} (${said[kind](k)})`).join(", ");
}

function cancelledBy(c) {
  const who = c.by ?? "jobstream";
  const where = c.worker_id ? ` (run stopped on ${c.worker_id})` : "";
  return `by ${who}${c.reason ? `: ${c.reason}` : ""}, at ${time(c.at_ms)}${where}`;
}

function attempt(run, jobId) {
  const took = run.started_at_ms && run.ended_at_ms ? duration(run.ended_at_ms - run.started_at_ms) : "";
  const error = run.outcome === "CANCELLED" ? (run.detail ?? "") : run.error ? h("div", {},
    h("span", { class: "error" }, `${run.error.error_type}: ${run.error.message ?? ""}`),
    run.error.traceback ? h("details", {}, h("summary", {}, "traceback"), h("pre", {}, run.error.traceback)) : null) : "";
  const result = run.result_uri
    ? resultLink(`/api/v1/jobs/${encodeURIComponent(jobId)}/executions/${encodeURIComponent(run.execution_id)}/result`,
      `${jobId}-attempt-${run.attempt}`)
    : (run.result ?? "");
  return h("tr", { "data-attempt": run.attempt },
    h("td", { class: "num" }, run.attempt), h("td", { class: "mono" }, run.worker_id ?? ""),
    h("td", {}, time(run.fired_at_ms)), h("td", {}, time(run.started_at_ms)),
    h("td", {}, time(run.ended_at_ms)), h("td", { class: "num" }, took),
    h("td", {}, state(run.outcome)), h("td", {}, error), h("td", { class: "mono" }, result),
    h("td", {}, logsLink(jobId, run)));
}

function given(c) {
  return h("tr", { "data-command-kind": c.kind },
    h("td", {}, time(c.at_ms)), h("td", {}, c.kind), h("td", { class: "mono" }, c.by),
    h("td", { class: "reason" }, c.reason ?? ""));
}

function commandsOf(job) {
  const found = job.commands ?? [];
  if (!found.length) return null;
  return [h("h2", {}, `Commands (${found.length})`),
    table([["when"], ["command"], ["by"], ["reason"]], found.map(given), { id: "commands" })];
}

export function render(root, { id }) {
  const message = h("span", { class: "message", id: "command-message" });
  const reason = h("input", { type: "text", id: "cancel-reason", placeholder: "reason (optional, kept in the history)" });
  const paths = {
    "cancel-workflow": () => `/api/v1/workflows/${encodeURIComponent(workflowId)}/cancel?owner=${encodeURIComponent(workflowOwner)}`,
  };
  const labels = { "cancel-workflow": "Cancel workflow" };
  const questions = {
    cancel: "Cancel this job? A running attempt is stopped; this cannot be undone.",
    "cancel-workflow": "Cancel every job of this workflow that has not ended? This cannot be undone.",
  };
  const send = async (name, button) => {
    button.disabled = true;
    try {
      const path = paths[name]?.() ?? `/api/v1/jobs/${encodeURIComponent(id)}/${name}`;
      await post(path, reason.value ? { reason: reason.value } : undefined);
      message.textContent = `${labels[name] ?? name} sent`;
    } catch (error) {
      message.textContent = error.message;
    } finally {
      button.disabled = false;
    }
  };
  const confirmBar = h("div", { class: "confirm", id: "confirm", role: "alertdialog", hidden: true });
  const ask = (name, button) => {
    const close = () => { confirmBar.hidden = true; confirmBar.replaceChildren(); };
    fill(confirmBar, h("span", {}, questions[name]),
      h("button", { type: "button", class: "danger", "data-confirm": name,
        onclick: () => { close(); send(name, button); } }, "Yes, cancel"),
      h("button", { type: "button", class: "secondary", "data-dismiss": name, onclick: close }, "No, keep it"));
    confirmBar.hidden = false;
  };
  const command = (name) => h("button", { type: "button", class: name.startsWith("cancel") ? "danger" : "secondary",
    "data-command": name,
    onclick: (event) => (questions[name] ? ask(name, event.target) : send(name, event.target)) },
  labels[name] ?? name[0].toUpperCase() + name.slice(1));

  let workflowId = null, workflowOwner = null, loads = 0, shown = null;
  const again = rerunner();
  const load = async () => {
    const turn = ++loads;  // a slower, older load must not overwrite a newer one
    let job;
    try {
      job = await get(`/api/v1/jobs/${encodeURIComponent(id)}`);
      workflowId = job.workflow_id;
      workflowOwner = job.owner;
      shown = job;
    } catch (error) {
      root.replaceChildren(h("h1", {}, "Job"), h("p", { class: "error" }, error.message));
      return;
    }
    const runs = (await get(`/api/v1/jobs/${encodeURIComponent(id)}/executions`)).executions;
    const history = table([["attempt", "num"], ["worker"], ["fired"], ["started"], ["ended"],
      ["duration", "num"], ["outcome"], ["error"], ["result"], ["logs"]], runs.map((run) => attempt(run, id)), { id: "attempts" });
    const graph = await workflow(job);
    const events = await get(`/api/v1/jobs/${encodeURIComponent(id)}/events`).catch(() => null);
    if (turn !== loads) return;
    again.setJob(job);
    const active = document.activeElement;  // a redraw keeps what is being typed in focus
    const selection = active && "selectionStart" in active ? [active.selectionStart, active.selectionEnd] : null;
    fill(root,
      h("h1", {}, `Job ${job.job_type}`), fields(job),
      h("div", { class: "actions" }, ENDED.has(job.state) ? null : [
        reason, command("cancel"), job.workflow_id ? command("cancel-workflow") : null,
        triggerable(job) ? command("trigger") : null,
        job.schedule?.cron ? [command("pause"), command("resume")] : null], message),
      ENDED.has(job.state) ? null : confirmBar,
      again.element,
      graph ? h("div", { id: "workflow-section" }, graph) : null,
      h("h2", {}, `Attempts (${runs.length})`),
      runs.length ? history : h("p", { class: "message" }, "No attempt yet."),
      timelineSection(events),
      commandsOf(job));
    if (active && active !== document.body && root.contains(active)) {
      active.focus();
      if (selection) active.setSelectionRange(...selection);
    }
  };
  // Another job of the workflow changed (a map's item, maybe one of thousands): only the
  // graph is drawn again, at most every GRAPH_EVERY_MS, the latest answer winning.
  let graphs = 0, pending = null;
  const redrawGraph = async () => {
    pending = null;
    const turn = ++graphs, loaded = loads;
    const graph = shown ? await workflow(shown) : null;
    const section = root.querySelector("#workflow-section");
    if (turn !== graphs || loaded !== loads || !graph || !section) return;
    section.replaceChildren(...graph);
  };
  load();
  return {
    onStatus(job) {
      const bar = root.querySelector("#job-progress");
      if (job.job_id === id && bar && job.progress && shown && rest(job) === rest(shown)
          && job.updated_at_ms >= shown.updated_at_ms
          && JSON.stringify(job.progress) !== JSON.stringify(shown.progress)) {
        shown = { ...shown, progress: job.progress, updated_at_ms: job.updated_at_ms };
        bar.replaceWith(progressOf(job.progress));
        return;
      }
      if (job.job_id === id) load();
      else if (workflowId && job.workflow_id === workflowId && job.owner === workflowOwner) {
        pending ??= setTimeout(redrawGraph, GRAPH_EVERY_MS);
      }
    },
    stop() { clearTimeout(pending); },
  };
}
