// Small DOM helpers shared by the pages: elements, times (in UTC or the browser's zone,
// with the zone printed) and durations, state badges.

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

// Times are shown in UTC or in the browser's zone, as the header's toggle chose
// (remembered in localStorage), always with the zone printed after them.
const ZONE_KEY = "jobstream-zone";

export function zoneMode() {
  return localStorage.getItem(ZONE_KEY) === "local" ? "local" : "utc";
}

export function setZoneMode(mode) {
  localStorage.setItem(ZONE_KEY, mode === "local" ? "local" : "utc");
}

// The zone a time is printed in: "UTC", or the browser's abbreviation at that instant
// ("CET", "GMT+9"), which follows its daylight-saving time.
export function zoneName(ms = Date.now()) {
  if (zoneMode() === "utc") return "UTC";
  const part = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" }).formatToParts(new Date(ms))
    .find((p) => p.type === "timeZoneName");
  return part?.value ?? offsetName(ms);
}

function offsetName(ms) {
  const minutes = -new Date(ms).getTimezoneOffset();
  const abs = Math.abs(minutes);
  return `UTC${minutes < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

// "2026-03-01 09:00:00.000" in the chosen zone, without the zone.
export function wallTime(ms) {
  const d = new Date(ms);
  if (zoneMode() === "utc") return d.toISOString().replace("T", " ").replace("Z", "");
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:`
    + `${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function time(ms) {
  if (ms === null || ms === undefined) return "";
  return `${wallTime(ms)} ${zoneName(ms)}`;
}

// To the minute, with the zone: a schedule's runs, which fall on whole minutes.
export function minuteTime(ms) {
  if (ms === null || ms === undefined) return "";
  return `${wallTime(ms).slice(0, 16)} ${zoneName(ms)}`;
}

// An instant typed in a <input type="datetime-local"> (wall time in the chosen zone) as
// epoch ms; null when empty.
export function parseWallTime(value) {
  if (!value) return null;
  const ms = zoneMode() === "utc" ? Date.parse(`${value}Z`) : new Date(value).getTime();
  return Number.isNaN(ms) ? null : ms;
}

// The value of a <input type="datetime-local"> showing ``ms`` in the chosen zone.
export function wallInput(ms) {
  if (ms === null || ms === undefined) return "";
  return wallTime(ms).replace(" ", "T").slice(0, 16);
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
