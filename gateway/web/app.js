"use strict";
// The approver's token stays in this tab (sessionStorage) and goes out only as a Bearer header
// to this gateway's API: no cookie, so no cross-site request can act with it.
const KEY = "lockgate.approverToken";
const $ = (id) => document.getElementById(id);

function token() { return sessionStorage.getItem(KEY); }

// Upstream text is untrusted: only ever placed with textContent; invisible and bidi characters
// are shown as visible escapes so an approver sees exactly what would run.
function visible(text) {
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

async function api(path, options = {}) {
  const headers = { "Authorization": "Bearer " + token(), "X-Lockgate-Channel": "web" };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { ...options, headers, cache: "no-store" });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(response.status + " " + (body.detail || body.error || ""));
  return body;
}

function showError(message) {
  $("error").textContent = message || "";
  $("error").hidden = !message;
}

function render(calls) {
  const list = $("calls");
  list.replaceChildren();
  $("empty").hidden = calls.length > 0;
  for (const call of calls) list.append(item(call));
}

function item(call) {
  const node = $("call-template").content.firstElementChild.cloneNode(true);
  node.dataset.id = call.id;
  const set = (cls, text) => { node.querySelector("." + cls).textContent = visible(text ?? ""); };
  set("tool", call.tool);
  set("server", "on " + call.server);
  set("id", call.id);
  set("principal", call.principal);
  set("reason", call.reason);
  set("rule", call.rule_id || "(default)");
  set("pin", call.tool_pin);
  set("expires", new Date(call.expires_at * 1000).toISOString());
  set("args", JSON.stringify(call.args, null, 2));
  node.querySelector(".edit-args").value = JSON.stringify(call.args, null, 2);
  for (const decision of ["approve", "deny", "respond", "edit"]) {
    const button = node.querySelector("." + decision);
    const offered = call.decisions.includes(decision);
    button.hidden = !offered;
    if (decision === "edit") node.querySelector(".edit-args").hidden = !offered;
    button.addEventListener("click", () => decide(node, call.id, decision));
  }
  return node;
}

async function decide(node, id, decision) {
  const body = { decision };
  const message = node.querySelector(".message").value;
  if ((decision === "deny" || decision === "respond") && message) body.message = message;
  if (decision === "edit") {
    try { body.args = JSON.parse(node.querySelector(".edit-args").value); }
    catch (e) { showError("Edited arguments are not valid JSON: " + e.message); return; }
  }
  try {
    await api("/api/approvals/" + encodeURIComponent(id) + "/decision",
      { method: "POST", body: JSON.stringify(body) });
    showError("");
    node.remove();
    $("empty").hidden = $("calls").children.length > 0;
  } catch (e) { showError("Decision not taken: " + e.message); }
}

// Changed tool definitions in quarantine (only approvers named by pins.approvers see any).
let shownPins = "";

async function refreshPins() {
  const data = await api("/api/pins");
  const key = data.items.map((p) => p.name + "@" + p.changed_pin).join(",");
  if (key === shownPins) return;
  const details = await Promise.all(
    data.items.map((p) => api("/api/pins/" + encodeURIComponent(p.name))));
  shownPins = key;
  $("pins").hidden = details.length === 0;
  $("pin-list").replaceChildren(...details.map(pinItem));
}

function pinItem(pin) {
  const node = $("pin-template").content.firstElementChild.cloneNode(true);
  node.dataset.name = pin.name;
  node.querySelector(".name").textContent = visible(pin.name);
  node.querySelector(".fields").textContent = "changed: " + pin.fields.join(", ");
  node.querySelector(".diff").textContent = visible(pin.diff);
  node.querySelector(".accept").addEventListener("click", async () => {
    try {
      await api("/api/pins/" + encodeURIComponent(pin.name) + "/accept",
        { method: "POST", body: JSON.stringify({ pin: pin.changed_pin }) });
      showError("");
      node.remove();
      $("pins").hidden = $("pin-list").children.length === 0;
    } catch (e) { showError("Definition not accepted: " + e.message); }
  });
  return node;
}

async function refresh() {
  if (!token()) return;
  try {
    const data = await api("/api/approvals?state=pending");
    render(data.items);
    await refreshPins();
    showError("");
    $("status").textContent = "Signed in";
  } catch (e) {
    showError("Cannot load approvals: " + e.message);
    if (e.message.startsWith("401")) signOut();
  }
}

function signedIn(yes) {
  $("login").hidden = yes;
  $("who").hidden = !yes;
}

function signOut() {
  sessionStorage.removeItem(KEY);
  signedIn(false);
  $("calls").replaceChildren();
  $("pin-list").replaceChildren();
  $("pins").hidden = true;
  shownPins = "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("token").value);
    $("token").value = "";
    signedIn(true);
    refresh();
  });
  $("logout").addEventListener("click", signOut);
  signedIn(Boolean(token()));
  refresh();
  setInterval(refresh, 2000);
});
