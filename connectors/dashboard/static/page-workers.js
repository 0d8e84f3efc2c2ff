// Workers: each one's types, capacity, running executions and last heartbeat; stale ones
// (no heartbeat for the API's JOBSTREAM_WORKER_STALE_AFTER, or stopped) marked.

import { get } from "./api.js";
import { duration, h, table, time } from "./dom.js";

export function render(root) {
  const load = async () => {
    const workers = (await get("/api/v1/workers")).workers;
    const rows = workers.map((w) => h("tr", { "data-worker": w.worker_id, class: w.stale ? "stale" : "" },
      h("td", { class: "mono" }, w.worker_id), h("td", { class: "mono" }, w.job_types.join(", ")),
      h("td", { class: "num" }, w.capacity), h("td", { class: "num" }, w.running),
      h("td", {}, w.state), h("td", {}, `${w.host} / ${w.pid}`), h("td", {}, time(w.at_ms)),
      h("td", { class: "num" }, duration(w.age_ms)), h("td", {}, w.stale ? "stale" : "")));
    root.replaceChildren(h("h1", {}, `Workers (${workers.filter((w) => !w.stale).length} live)`),
      table([["worker"], ["types"], ["capacity", "num"], ["running", "num"], ["state"], ["host / pid"],
        ["last heartbeat"], ["age", "num"], [""]], rows, { id: "workers" }));
  };
  const timer = setInterval(load, 5000);
  load();
  return { onStatus() {}, stop() { clearInterval(timer); } };
}
