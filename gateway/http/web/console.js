// The operator console: signing in (the approvals page's token, in this tab only), then each
// section loaded from its /api/console route and the live event stream followed. Read-only.
import { api, ApiError, forgetToken, keepToken, showError, token } from "./api.js";
import { loadAnalytics } from "./console_analytics.js";
import { loadAudit, verifyAudit } from "./console_audit.js";
import { initCatalogue } from "./console_catalogue.js";
import { $ } from "./console_dom.js";
import { followEvents, initEvents, stopEvents } from "./console_events.js";
import { loadConnections } from "./console_connections.js";
import { loadGrants } from "./console_grants.js";
import { initPolicies, loadPolicies } from "./console_policies.js";
import { loadSessions } from "./console_sessions.js";
import { loadUpstreams } from "./console_upstreams.js";
import { visible } from "./text.js";

function failed(e) {
  if (e instanceof ApiError && e.status === 401) { signOut("Signed out: the token was refused (401)."); return; }
  showError(e.message);
}

const SECTIONS = ["upstreams", "catalogue", "policies", "events", "audit", "sessions", "grants", "connections", "analytics"];

// One section at a time (the one the address names: #catalogue), so a phone shows it whole.
// Opened from the sections bar (`moved`), focus goes to its heading: Tab goes on into it.
function showSection(moved) {
  const wanted = location.hash.slice(1);
  const current = SECTIONS.includes(wanted) ? wanted : SECTIONS[0];
  for (const name of SECTIONS) $(name).classList.toggle("current", name === current);
  for (const link of $("sections").querySelectorAll("a")) {
    if (link.getAttribute("href") === "#" + current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (moved !== true || $("console").hidden) return;
  const heading = $(current).querySelector("h2");
  heading.tabIndex = -1;
  heading.focus();
}

function shown(yes) {
  $("login").hidden = yes;
  $("who").hidden = !yes;
  $("sections").hidden = !yes;
  $("console").hidden = !yes;
}

async function start() {
  if (!token()) return;
  showError("");
  try {
    const me = await api("/api/me");
    await loadUpstreams();  // 403 for a token that is not an operator's
    $("status").textContent = "Signed in as " + visible(me.id) + " (operator)";
  } catch (e) {
    shown(false);
    $("login").hidden = false;
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) forgetToken();
    showError("Cannot open the console: " + e.message);
    return;
  }
  shown(true);
  followEvents(() => signOut("Signed out: the token was refused (401)."));
  for (const load of [loadPolicies, loadAudit, loadSessions, loadGrants, loadConnections, loadAnalytics]) load().catch(failed);
}

function signOut(message) {
  stopEvents();
  forgetToken();
  shown(false);
  showError(typeof message === "string" ? message : "");
  $("status").textContent = "";
  $("live").textContent = "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    keepToken($("token").value);
    $("token").value = "";
    start();
  });
  $("logout").addEventListener("click", () => signOut());
  $("upstreams-refresh").addEventListener("click", () => loadUpstreams().catch(failed));
  $("audit-refresh").addEventListener("click", () => loadAudit().catch(failed));
  $("audit-verify").addEventListener("click", () => verifyAudit().catch(failed));
  $("sessions-refresh").addEventListener("click", () => loadSessions().catch(failed));
  $("grants-refresh").addEventListener("click", () => loadGrants().catch(failed));
  $("connections-refresh").addEventListener("click", () => loadConnections().catch(failed));
  $("analytics-refresh").addEventListener("click", () => loadAnalytics().catch(failed));
  initCatalogue(failed);
  initPolicies(failed);
  initEvents(() => signOut("Signed out: the token was refused (401)."));
  window.addEventListener("hashchange", () => showSection(true));
  showSection();
  shown(false);
  start();
});
