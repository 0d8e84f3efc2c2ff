// The log lines of one run, on the job page: a "logs" link per attempt that has ended
// opens a row below it with what GET .../executions/{execution id}/logs serves (time,
// level, logger, message, and a traceback under its line), and says how many lines the
// worker dropped past its bounds. The page draws itself again on every update of the job:
// the runs whose logs are open stay open (they are read again).

import { get } from "./api.js";
import { fill, h, time } from "./dom.js";

const ENDED = new Set(["SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"]);
const opened = new Set();  // execution ids whose logs are shown

function lineRow(line) {
  return h("tr", { class: `log-line level-${line.level ?? ""}` },
    h("td", { class: "mono" }, time(line.at_ms)),
    h("td", { class: "mono level" }, line.level ?? ""),
    h("td", { class: "mono" }, line.logger ?? ""),
    h("td", { class: "msg" }, line.msg, line.exc ? h("pre", { class: "exc" }, line.exc) : null));
}

async function show(jobId, run, cell) {
  fill(cell, h("span", { class: "message" }, "reading the log lines..."));
  try {
    const found = await get(`/api/v1/jobs/${encodeURIComponent(jobId)}/executions/${encodeURIComponent(run.execution_id)}/logs`);
    const lines = found.lines.length
      ? h("table", { class: "log" }, h("tbody", {}, found.lines.map(lineRow)))
      : h("p", { class: "message" }, "This run wrote no log lines.");
    const dropped = found.dropped_lines
      ? h("p", { class: "message", "data-dropped": found.dropped_lines },
        `${found.dropped_lines} more lines dropped: past the worker's bounds (JOBSTREAM_MAX_LOG_LINES, _BYTES)`)
      : null;
    fill(cell, h("div", { class: "log-title" }, `Logs of attempt ${run.attempt} (${found.lines.length} lines)`), lines, dropped);
  } catch (error) {
    fill(cell, h("p", { class: "error" }, error.message));
  }
}

// The cell of an attempt's row: its "logs" link (none while the run goes on).
export function logsLink(jobId, run) {
  if (!ENDED.has(run.outcome)) return "";
  let row = null;
  const toggle = (link) => {
    const attemptRow = link.closest("tr");
    if (row) {
      row.remove();
      row = null;
      opened.delete(run.execution_id);
      link.textContent = "logs";
      return;
    }
    const cell = h("td", { colspan: attemptRow.children.length });
    row = h("tr", { class: "logs", "data-logs-of": run.attempt }, cell);
    attemptRow.after(row);
    opened.add(run.execution_id);
    link.textContent = "hide logs";
    show(jobId, run, cell);
  };
  const link = h("a", { href: "#", "data-logs": run.attempt,
    onclick: (event) => { event.preventDefault(); toggle(event.target); } }, "logs");
  // Drawn again with the logs open: open them once the row is in its table.
  if (opened.has(run.execution_id)) queueMicrotask(() => { opened.delete(run.execution_id); toggle(link); });
  return link;
}
