// The approvals page: signing in and out, and what runs while signed in (the event stream,
// the clocks, a slow safety poll). The page's parts live in their own modules.
import { api, ApiError, forgetToken, keepToken, showError, token } from "./api.js";
import { applyFilters, clearFilters, forgetSeen, initFilters } from "./filters.js";
import { clearGrants, loadGrants, onGrantEvent, tickGrants } from "./grants.js";
import { clearInbox, loadHistory, onApprovalEvent, refreshLabels, sync, tick } from "./inbox.js";
import { initKeys } from "./keys.js";
import { setViewer, withRoles } from "./people.js";
import { clearPins, refreshPins } from "./pins.js";
import { follow } from "./stream.js";
import { visible } from "./text.js";

const $ = (id) => document.getElementById(id);
const SAFETY_POLL_MS = 30_000;  // events carry the news; this only repairs a missed one
const LABELS_MS = 10_000;       // "is the caller still waiting" has no event of its own
const CLOCK_MS = 1_000;

let session = null;  // { abort: AbortController, timers: [...] } while signed in

function quietly(promise) { promise.catch(() => {}); }

function onEvent(type, data, time) {
  if (type.startsWith("tool.approval.")) onApprovalEvent(type, data, time);
  else if (type.startsWith("tool.grant.")) onGrantEvent(type, data);
  else if (type.startsWith("tool.pin_")) quietly(refreshPins());
  else if (type === "lockgate.reset" || type === "lockgate.gap") catchUp();
}

// After a gap or a reconnection: what may have been missed.
function catchUp() {
  quietly(sync());
  quietly(refreshPins());
  quietly(loadGrants());
}

async function whoAmI() {
  const me = await api("/api/me");
  setViewer(me);
  $("status").textContent = "Signed in as " + visible(withRoles(me.id, me.roles))
    + (me.tenant ? " · tenant " + visible(me.tenant) : "");
}

async function load() {
  await whoAmI();
  await sync();
  await loadHistory();
  await refreshPins();
  await loadGrants();
  // A notification links to one card (#ap_...): show it once the cards are there.
  if (location.hash) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
}

async function start() {
  if (!token() || session) return;
  const current = { abort: new AbortController(), timers: [] };
  session = current;
  try {
    await load();
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) { signOut("Cannot load approvals: " + e.message); return; }
    showError("Cannot load approvals: " + e.message);
  }
  if (session !== current) return;
  current.timers.push(setInterval(() => { quietly(sync()); quietly(refreshPins()); quietly(loadGrants()); }, SAFETY_POLL_MS));
  current.timers.push(setInterval(() => quietly(refreshLabels()), LABELS_MS));
  current.timers.push(setInterval(() => { tick(); tickGrants(); }, CLOCK_MS));
  follow(current.abort.signal, () => session === current, {
    event: onEvent,
    connected: (again) => (again ? catchUp() : quietly(sync())),
    refused: () => signOut("Signed out: the token was refused (401)."),
  });
}

function signedIn(yes) {
  $("login").hidden = yes;
  $("who").hidden = !yes;
  $("filters").hidden = !yes;
}

function signOut(message) {
  if (session) {
    session.abort.abort();
    session.timers.forEach(clearInterval);
    session = null;
  }
  forgetToken();
  signedIn(false);
  showError(typeof message === "string" ? message : "");
  setViewer(null);
  clearInbox();
  clearPins();
  clearGrants();
  forgetSeen();
  clearFilters();
  $("status").textContent = "";
  $("live").textContent = "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    keepToken($("token").value);
    $("token").value = "";
    signedIn(true);
    start();
  });
  $("logout").addEventListener("click", () => signOut());
  initFilters();
  initKeys();
  applyFilters();
  signedIn(Boolean(token()));
  start();
});
