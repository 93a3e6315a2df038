"use strict";
// The approver's token stays in this tab (sessionStorage) and goes out only as a Bearer header
// to this gateway's API: no cookie, so no cross-site request can act with it.
//
// The page is an inbox: the pending list is loaded once, then followed through the event stream
// (/api/events). An item's DOM, and above all what the approver types into it, is created once
// and never rebuilt: updates add items, remove items, or change the text of a few labels.
const KEY = "lockgate.approverToken";
const $ = (id) => document.getElementById(id);
const SAFETY_POLL_MS = 30_000;
const CLOCK_MS = 30_000;
const HISTORY_STATES = "approved,denied,expired,cancelled,executing,done,failed";

function token() { return sessionStorage.getItem(KEY); }

// Upstream text is untrusted: only ever placed with textContent; invisible and bidi characters
// are shown as visible \uXXXX escapes (astral ones as a surrogate pair) so an approver sees
// exactly what would run. Applied to JSON text the result is still the same JSON value.
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}]/gu;

function visible(text) {
  return String(text).replace(INVISIBLE, (c) => Array.from({ length: c.length },
    (_, i) => "\\u" + c.charCodeAt(i).toString(16).padStart(4, "0")).join(""));
}

function json(value) { return visible(JSON.stringify(value, null, 2)); }

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

// ---- time labels -------------------------------------------------------------------------

function clock(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
}

function ago(seconds) {
  const s = Date.now() / 1000 - seconds;
  if (s < 60) return "less than a minute ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return new Date(seconds * 1000).toLocaleString();
}

function left(seconds) {
  const s = seconds - Date.now() / 1000;
  if (s <= 0) return "expired";
  if (s < 60) return "less than a minute left";
  if (s < 3600) return Math.floor(s / 60) + " min left";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min left";
}

// ---- the inbox ---------------------------------------------------------------------------

// id -> { node, call } for pending items; ids already in History.
const pending = new Map();
const decided = new Set();
let me = null;  // the approver's principal id, once a response names it

function setText(node, cls, text) { node.querySelector("." + cls).textContent = visible(text ?? ""); }

function fromTemplate(call) {
  const node = $("call-template").content.firstElementChild.cloneNode(true);
  node.dataset.id = call.id;
  node.id = call.id;  // a notification links to #ap_...
  node.dataset.search = (call.tool + " " + call.server + " " + call.principal).toLowerCase();
  setText(node, "tool", call.tool);
  node.querySelector(".tool").title = "tool pin " + call.tool_pin;
  setText(node, "server", "on " + call.server);
  setText(node, "principal", call.principal);
  setText(node, "reason", call.reason);
  setText(node, "rule", call.rule_id || "(default)");
  setText(node, "id", call.id);
  setText(node, "args", json(call.args));
  const requested = node.querySelector(".requested");
  requested.textContent = ago(call.created_at);
  requested.title = new Date(call.created_at * 1000).toLocaleString();
  const expires = node.querySelector(".expires");
  expires.textContent = left(call.expires_at);
  expires.title = new Date(call.expires_at * 1000).toLocaleString();
  setText(node, "offered", call.decisions.join(", "));
  return node;
}

function addPending(call) {
  if (pending.has(call.id) || decided.has(call.id) || call.state !== "pending") return;
  const node = fromTemplate(call);
  node.querySelector(".edit-args").value = json(call.args);
  for (const decision of ["approve", "deny", "respond", "edit"]) {
    const button = node.querySelector("." + decision);
    const offered = call.decisions.includes(decision);
    button.hidden = !offered;
    if (decision === "edit") node.querySelector(".edit-args").hidden = !offered;
    button.addEventListener("click", () => decide(node, call.id, decision));
  }
  if (!call.decisions.includes("deny") && !call.decisions.includes("respond")) {
    node.querySelector(".message").hidden = true;
  }
  pending.set(call.id, { node, call });
  filterOne(node);
  // Newest first, as the API lists them.
  const list = $("calls");
  const after = [...list.children].find((n) => pending.get(n.dataset.id)?.call.created_at < call.created_at);
  list.insertBefore(node, after || null);
  updateEmpty();
}

const LABELS = {
  approve: "Approved", deny: "Denied", edit: "Approved with edits", respond: "Answered",
  expire: "Expired", expired: "Expired", cancel: "Cancelled", cancelled: "Cancelled",
  result: "Result posted", error: "Failed",
};

function outcomeText(record, byMe) {
  const what = LABELS[record.decision] || LABELS[record.state] || record.state || record.decision || "Decided";
  const who = byMe ? "you" : (record.decided_by || "");
  return what + (who ? " by " + who : "") + " at " + clock(record.when)
    + (record.channel && !byMe ? " (" + record.channel + ")" : "");
}

// Moves an item to History with its outcome; a pending item keeps its node (now read-only).
// `record`: { decision, state, decided_by, channel, when } (unix seconds).
function toHistory(id, call, record, byMe) {
  if (decided.has(id)) return;
  decided.add(id);
  const entry = pending.get(id);
  pending.delete(id);
  const node = entry ? entry.node : fromTemplate(call);
  // A decided call is no longer a `call` of the inbox: it is a `past` item of History.
  node.classList.replace("call", "past");
  node.classList.remove("soon");
  node.querySelector(".actions")?.remove();
  for (const cls of ["expires-label", "expires"]) node.querySelector("." + cls)?.remove();
  const outcome = node.querySelector(".outcome");
  outcome.textContent = visible(outcomeText(record, byMe));
  outcome.hidden = false;
  outcome.dataset.decision = record.decision || record.state || "";
  if (record.message) setText(node, "said", "Message: " + record.message);
  filterOne(node);
  $("history-list").prepend(node);
  $("history").hidden = false;
  updateEmpty();
}

function recordOf(call) {
  return {
    decision: call.decision, state: call.state, decided_by: call.decided_by,
    channel: call.channel, message: call.message, when: call.updated_at,
  };
}

function updateEmpty() {
  $("empty").hidden = pending.size > 0;
  filterAll();
}

async function decide(node, id, decision) {
  const body = { decision };
  const message = node.querySelector(".message").value;
  if ((decision === "deny" || decision === "respond") && message) body.message = message;
  if (decision === "edit") {
    try { body.args = JSON.parse(node.querySelector(".edit-args").value); }
    catch (e) { showError("Edited arguments are not valid JSON: " + e.message); return; }
  }
  const buttons = node.querySelectorAll(".actions button");
  buttons.forEach((b) => { b.disabled = true; });
  try {
    const call = await api("/api/approvals/" + encodeURIComponent(id) + "/decision",
      { method: "POST", body: JSON.stringify(body) });
    showError("");
    if (call.decided_by) signedInAs(call.decided_by);
    decided.delete(id);  // the stream may have moved it first: this page took the decision
    toHistoryAgain(id, call);
  } catch (e) {
    buttons.forEach((b) => { b.disabled = false; });
    showError("Decision not taken: " + e.message);
    check(id);
  }
}

// Our own decision: (re)write the outcome line as "by you", wherever the item now is.
function toHistoryAgain(id, call) {
  const node = pending.get(id)?.node || $("history-list").querySelector(`[data-id="${CSS.escape(id)}"]`);
  if (node && !pending.has(id)) {
    decided.add(id);
    const outcome = node.querySelector(".outcome");
    outcome.textContent = visible(outcomeText(recordOf(call), true));
    return;
  }
  toHistory(id, call, recordOf(call), true);
}

// Looks one item up and moves it to History if it is no longer pending.
async function check(id) {
  try {
    const call = await api("/api/approvals/" + encodeURIComponent(id));
    if (call.state === "pending") addPending(call);
    else toHistory(id, call, recordOf(call), Boolean(me) && call.decided_by === me);
  } catch (e) {
    if (e.message.startsWith("404")) {
      const entry = pending.get(id);
      pending.delete(id);
      entry?.node.remove();
      updateEmpty();
    }
  }
}

// Adds what is missing and retires what is no longer pending; never rebuilds an item.
async function sync() {
  const data = await api("/api/approvals?state=pending");
  const listed = new Set();
  for (const call of data.items) { listed.add(call.id); addPending(call); }
  for (const id of [...pending.keys()]) if (!listed.has(id)) await check(id);
}

async function loadHistory() {
  const data = await api("/api/approvals?state=" + HISTORY_STATES + "&limit=20");
  // Oldest first, so prepending leaves the newest on top.
  const calls = [...data.items].sort((a, b) => a.updated_at - b.updated_at);
  for (const call of calls) if (!pending.has(call.id)) toHistory(call.id, call, recordOf(call), false);
}

function tick() {
  const now = Date.now() / 1000;
  for (const [id, { node, call }] of pending) {
    node.querySelector(".requested").textContent = ago(call.created_at);
    node.querySelector(".expires").textContent = left(call.expires_at);
    node.classList.toggle("soon", call.expires_at - now < 60);
    if (call.expires_at <= now) check(id);
  }
}

// ---- filter ------------------------------------------------------------------------------

function filterOne(node) {
  const words = $("filter").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  node.hidden = !words.every((w) => node.dataset.search.includes(w));
}

function filterAll() {
  const all = [...$("calls").children, ...$("history-list").children];
  all.forEach(filterOne);
  const hiddenCount = [...$("calls").children].filter((n) => n.hidden).length;
  $("filtered").textContent = hiddenCount ? hiddenCount + " waiting call(s) hidden by the filter" : "";
  $("filtered").hidden = !hiddenCount;
}

// ---- changed tool definitions (only approvers named by pins.approvers see any) ------------

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

// ---- the event stream (fetch + reader: EventSource cannot send an Authorization header) ---

let session = null;  // { abort: AbortController, timers: [...] } while signed in

async function follow(current) {
  let lastId = null;
  let backoff = 1;
  let dropped = false;
  while (session === current) {
    try {
      const headers = { "Authorization": "Bearer " + token() };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch("/api/events?types=tool.approval.*,tool.pin_*",
        { headers, cache: "no-store", signal: current.abort.signal });
      if (response.status === 401) { signOut("Signed out: the token was refused (401)."); return; }
      if (!response.ok || !response.body) throw new Error("event stream: " + response.status);
      backoff = 1;
      $("live").textContent = "live";
      // Subscribed now: catch up on anything missed before (or while) the stream was down.
      sync().then(() => (dropped ? refreshPins() : null)).catch(() => {});
      await readFrames(response.body, (frame) => {
        if (frame.id) lastId = frame.id;
        onEvent(frame);
      });
    } catch (e) {
      if (session !== current) return;
    }
    dropped = true;
    $("live").textContent = "reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, backoff * 1000));
    backoff = Math.min(backoff * 2, 10);
  }
}

async function readFrames(body, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let frame = { data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop();  // an unfinished line waits for the next chunk
    for (const line of lines) {
      if (line === "") {
        if (frame.data.length) onFrame({ ...frame, data: frame.data.join("\n") });
        frame = { data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;  // keep-alive comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) text = text.slice(1);
      if (field === "data") frame.data.push(text);
      else if (field === "id") frame.id = text;
      else if (field === "event") frame.event = text;
    }
  }
}

function onEvent(frame) {
  let event;
  try { event = JSON.parse(frame.data); } catch { return; }
  const type = event.type || frame.event || "";
  const data = event.data || {};
  if (type === "tool.approval.requested" && typeof data.approval_id === "string") {
    if (!pending.has(data.approval_id) && !decided.has(data.approval_id)) check(data.approval_id);
  } else if (type === "tool.approval.resolved" && typeof data.approval_id === "string") {
    const entry = pending.get(data.approval_id);
    if (!entry) return;
    const when = Date.parse(event.time) / 1000 || Date.now() / 1000;
    const record = { decision: data.decision, decided_by: data.decided_by, channel: data.channel,
      message: data.message, when };
    toHistory(data.approval_id, entry.call, record, Boolean(me) && data.decided_by === me);
  } else if (type.startsWith("tool.pin_")) {
    refreshPins().catch(() => {});
  } else if (type === "lockgate.reset" || type === "lockgate.gap") {
    sync().catch(() => {});
    refreshPins().catch(() => {});
  }
}

// ---- signing in and out --------------------------------------------------------------------

function signedInAs(principal) {
  me = principal;
  $("status").textContent = "Signed in as " + visible(principal);
}

function signedIn(yes) {
  $("login").hidden = yes;
  $("who").hidden = !yes;
  $("tools").hidden = !yes;
}

async function start() {
  if (!token() || session) return;
  const current = { abort: new AbortController(), timers: [] };
  session = current;
  try {
    await sync();
    await loadHistory();
    await refreshPins();
    // A notification links to one card (#ap_...): show it once the cards are there.
    if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  } catch (e) {
    if (e.message.startsWith("401")) { signOut("Cannot load approvals: " + e.message); return; }
    showError("Cannot load approvals: " + e.message);
  }
  if (session !== current) return;
  if (!me) $("status").textContent = "Signed in (approver token)";
  current.timers.push(setInterval(() => { sync().catch(() => {}); refreshPins().catch(() => {}); }, SAFETY_POLL_MS));
  current.timers.push(setInterval(tick, CLOCK_MS));
  follow(current);
}

function signOut(message) {
  if (session) {
    session.abort.abort();
    session.timers.forEach(clearInterval);
    session = null;
  }
  sessionStorage.removeItem(KEY);
  signedIn(false);
  showError(typeof message === "string" ? message : "");
  pending.clear();
  decided.clear();
  me = null;
  $("calls").replaceChildren();
  $("history-list").replaceChildren();
  $("history").hidden = true;
  $("pin-list").replaceChildren();
  $("pins").hidden = true;
  $("empty").hidden = true;
  $("live").textContent = "";
  shownPins = "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("token").value);
    $("token").value = "";
    signedIn(true);
    start();
  });
  $("logout").addEventListener("click", () => signOut());
  $("filter").addEventListener("input", filterAll);
  signedIn(Boolean(token()));
  start();
});
