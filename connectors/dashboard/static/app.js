// The dashboard's shell: token login, the hash router (#/overview, #/jobs, #/jobs/<id>,
// #/schedules, #/approvals, #/triggers, #/dlq, #/workers), the time zone toggle (UTC or the browser's zone: the
// page on screen is drawn again) and the live stream, whose status events go to the page
// on screen.

import { Refused, follow, get, setToken, token } from "./api.js";
import { setZoneMode, zoneMode, zoneName } from "./dom.js";
import * as approvals from "./page-approvals.js";
import * as dlq from "./page-dlq.js";
import * as job from "./page-job.js";
import * as jobs from "./page-jobs.js";
import * as overview from "./page-overview.js";
import * as schedules from "./page-schedules.js";
import * as triggers from "./page-triggers.js";
import * as workers from "./page-workers.js";

const $ = (id) => document.getElementById(id);
let me = null;
let page = null;
let session = 0;

function route() {
  if (!me) return;
  page?.stop();
  showZone();
  const [path, query] = (location.hash.slice(1) || "/overview").split("?");
  const params = new URLSearchParams(query ?? "");
  const parts = path.split("/").filter(Boolean);
  const name = parts[0] ?? "overview";
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("active", link.dataset.page === name);
  }
  // Each page draws into an element of its own: a page left while its request was out
  // draws into a detached element, never over the next page.
  const view = document.createElement("div");
  view.dataset.page = name;
  $("view").replaceChildren(view);
  if (name === "jobs" && parts[1]) page = job.render(view, { id: decodeURIComponent(parts[1]), me });
  else page = ({ jobs, schedules, approvals, triggers, dlq, workers }[name] ?? overview).render(view, { params, me });
}

function showLogin(error = "") {
  me = null;
  session += 1;
  page?.stop();
  page = null;
  $("view").replaceChildren();
  $("login").hidden = false;
  $("nav").hidden = $("logout").hidden = $("zone").hidden = true;
  $("who").textContent = "";
  $("login-error").textContent = error;
}

async function start() {
  try {
    me = await get("/api/v1/me");
  } catch (error) {
    setToken(null);
    showLogin(error instanceof Refused ? "That token was refused." : error.message);
    return;
  }
  $("login").hidden = true;
  $("nav").hidden = $("logout").hidden = $("zone").hidden = false;
  $("who").textContent = me.admin ? "admin" : `owner ${me.owner}`;
  route();
  const mine = ++session;
  follow((name, data) => { if (name === "status") page?.onStatus(data); },
    (on) => { $("live").textContent = on ? "live" : "offline"; $("live").classList.toggle("on", on); },
    () => mine === session).catch(() => showLogin("That token was refused."));
}

function showZone() {
  $("zone").textContent = zoneMode() === "utc" ? "Times: UTC" : `Times: local (${zoneName()})`;
  $("zone").dataset.zone = zoneMode();
}

window.addEventListener("hashchange", route);
// The zone chosen in another tab of this origin: this one follows.
window.addEventListener("storage", (event) => { if (event.key === "jobstream-zone") route(); });
$("zone").addEventListener("click", () => {
  setZoneMode(zoneMode() === "utc" ? "local" : "utc");
  showZone();
  route();
});
showZone();
// A page's request refused (the token was revoked, or the tab logged out meanwhile) ends
// the session; any other failure stays a visible error.
window.addEventListener("unhandledrejection", (event) => {
  if (event.reason instanceof Refused) {
    event.preventDefault();
    setToken(null);
    showLogin("That token was refused.");
  }
});
$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  setToken($("token").value.trim());
  $("token").value = "";
  start();
});
$("logout").addEventListener("click", () => { setToken(null); showLogin(); });

if (token()) start(); else showLogin();
