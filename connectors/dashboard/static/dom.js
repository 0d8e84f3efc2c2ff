// Small DOM helpers shared by the pages: elements, times and durations, state badges.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "text") el.textContent = value;
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function time(ms) {
  if (ms === null || ms === undefined) return "";
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

export function state(value) {
  return h("span", { class: `state ${value}`, "data-state": value, text: value });
}

// Beside a QUEUED job's state when no live worker serves its pool (the API's
// waiting_for_pool): it runs once a worker of the pool starts.
export function poolWait(job) {
  if (!job.waiting_for_pool) return null;
  return h("span", { class: "waiting", "data-waiting-pool": job.pool,
    title: `No live worker serves pool ${job.pool}: the job runs once one starts.` },
  `waiting for pool ${job.pool}`);
}

export function table(headers, rows, attrs = {}) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map(([label, cls]) => h("th", { class: cls }, label)))),
    h("tbody", {}, rows));
}

export function jobLink(id) {
  return h("a", { href: `#/jobs/${encodeURIComponent(id)}`, class: "mono" }, id);
}

// replaceChildren, leaving out null and undefined (which it would show as text).
export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined));
}
