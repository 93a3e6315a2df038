// The Grants panel: active grants (calls they match run without asking), each with a Revoke
// button; kept current by tool.grant.* events. Rows are added and removed, never rebuilt.
import { announce, api, ApiError, post, showError } from "./api.js";
import { clock, fullTime, left, now, setText } from "./text.js";

const $ = (id) => document.getElementById(id);
const shown = new Map();  // grant id -> { node, grant }

function describe(grant) {
  const who = grant.principal ? "for " + grant.principal : "for any caller";
  if (grant.scope === "session") {
    return "Session grant: " + grant.tool + " in session " + (grant.session_id || "?") + " " + who;
  }
  return "Tool grant: " + grant.tool + " on " + grant.server + " " + who;
}

function origin(grant) {
  return "granted by " + grant.created_by + " at " + clock(grant.created_at)
    + (grant.approval_id ? " (approval " + grant.approval_id + ")" : "")
    + (grant.rule_id ? "; rule " + grant.rule_id : "");
}

function expiry(grant) { return grant.expires_at ? left(grant.expires_at) : "no expiry"; }

function active(grant) {
  return !grant.revoked_at && (!grant.expires_at || grant.expires_at > now());
}

function add(grant) {
  const node = $("grant-template").content.firstElementChild.cloneNode(true);
  node.dataset.id = grant.id;
  setText(node, "what", describe(grant));
  setText(node, "origin", origin(grant));
  setText(node, "left", expiry(grant));
  node.querySelector(".left").title = grant.expires_at ? fullTime(grant.expires_at) : "";
  const button = node.querySelector(".revoke");
  button.setAttribute("aria-label", "Revoke " + describe(grant));
  button.addEventListener("click", () => revoke(grant, button));
  shown.set(grant.id, { node, grant });
  $("grant-list").prepend(node);
}

function remove(id) {
  shown.get(id)?.node.remove();
  shown.delete(id);
  $("grants-empty").hidden = shown.size > 0;
}

async function revoke(grant, button) {
  button.disabled = true;
  try {
    await post("/api/grants/" + encodeURIComponent(grant.id) + "/revoke", {});
    showError("");
    remove(grant.id);
    announce("Revoked: " + describe(grant));
  } catch (e) {
    button.disabled = false;
    showError("Grant not revoked: " + e.message);
  }
}

// Loads the active grants: adds new ones, drops those gone. A gateway without grants
// (404) hides the panel.
export async function loadGrants() {
  let data;
  try {
    data = await api("/api/grants");
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) { $("grants").hidden = true; return; }
    throw e;
  }
  $("grants").hidden = false;
  const listed = new Set();
  for (const grant of data.items.filter(active)) {
    listed.add(grant.id);
    if (!shown.has(grant.id)) add(grant);
  }
  for (const id of [...shown.keys()]) if (!listed.has(id)) remove(id);
  $("grants-empty").hidden = shown.size > 0;
}

// tool.grant.* events.
export function onGrantEvent(type, data) {
  const id = data.grant_id || data.id;
  if (type === "tool.grant.revoked" && typeof id === "string") remove(id);
  else loadGrants().catch(() => {});
}

export function tickGrants() {
  for (const [id, { node, grant }] of shown) {
    if (!active(grant)) { remove(id); continue; }
    setText(node, "left", expiry(grant));
  }
}

export function clearGrants() {
  shown.clear();
  $("grant-list").replaceChildren();
  $("grants").hidden = true;
}
