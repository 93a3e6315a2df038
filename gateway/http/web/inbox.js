// The inbox: the calls waiting for a decision, and History. The pending list is loaded once,
// then followed through the event stream. An item's DOM, and above all what the approver types
// into it, is created once and never rebuilt: updates add items, remove items, or change the
// text of a few labels.
import { updateControls, wire } from "./actions.js";
import { announce, api, ApiError } from "./api.js";
import { buildCard, fillContext, recordOf, refreshCard, retire, tickCard } from "./cards.js";
import { applyFilters, remember } from "./filters.js";
import { viewer } from "./people.js";
import { now } from "./text.js";

const $ = (id) => document.getElementById(id);
const HISTORY_STATES = "approved,denied,expired,cancelled,executing,done,failed";
const HISTORY_LOADED = 200;

// id -> { node, call } for pending items; ids already in History.
const pending = new Map();
const decided = new Set();

const path = (id) => "/api/approvals/" + encodeURIComponent(id);

function updateEmpty() {
  $("empty").hidden = pending.size > 0;
  document.title = (pending.size ? "(" + pending.size + ") " : "") + "lockgate approvals";
  applyFilters();
}

// Runs `change` (which adds or removes cards) without moving the card the approver is on: the
// one holding the focus, else the first one in view, stays where it was on the screen.
function steady(change) {
  const focused = document.activeElement?.closest("li.call, li.past");
  const anchor = focused || [...$("calls").children].find((n) => n.getBoundingClientRect().bottom > 0);
  const before = anchor?.getBoundingClientRect().top;
  change();
  if (!anchor?.isConnected || before === undefined) return;
  const shift = anchor.getBoundingClientRect().top - before;
  if (!shift) return;
  // A short page cannot scroll far enough: the spacer at its end makes the room.
  const room = document.documentElement.scrollHeight - window.innerHeight - window.scrollY;
  const spacer = $("spacer");
  if (shift > room) spacer.style.height = spacer.offsetHeight + shift - room + "px";
  window.scrollBy(0, shift);
}

function addPending(call) {
  if (pending.has(call.id) || decided.has(call.id) || call.state !== "pending") return;
  const node = buildCard(call);
  if (call.context) fillContext(node, call.context);  // looked up one by one: it came along
  pending.set(call.id, { node, call });
  wire(node, call, { decided: ownDecision, voted: updatePending, check });
  remember(call);
  // Newest first, as the API lists them.
  const list = $("calls");
  const after = [...list.children].find((n) => pending.get(n.dataset.id)?.call.created_at < call.created_at);
  steady(() => { list.insertBefore(node, after || null); updateEmpty(); });
  announce("New call waiting: " + call.tool + " for " + call.principal);
  if (!call.context) {
    api(path(call.id)).then((full) => steady(() => fillContext(node, full.context))).catch(() => {});
  }
}

// New facts about a pending call (a vote, waiting changed): labels only.
function updatePending(call) {
  const entry = pending.get(call.id);
  if (!entry || call.state !== "pending") return;
  entry.call = call;
  steady(() => { refreshCard(entry.node, call); updateControls(entry.node, call); });
}

// Moves an item to History with its outcome; a pending item keeps its node (now read-only).
function toHistory(id, call, record, byMe) {
  if (decided.has(id)) return;
  decided.add(id);
  const entry = pending.get(id);
  pending.delete(id);
  const node = retire(entry ? entry.node : buildCard(call), record, byMe);
  remember(call);
  $("history-list").prepend(node);
  $("history").hidden = false;
  if (entry) announce(node.querySelector(".outcome").textContent + ": " + call.tool);
  updateEmpty();
}

// This page's own decision: (re)write the outcome as "by you", wherever the item now is.
function ownDecision(call, extra) {
  const record = { ...recordOf(call), ...extra };
  const moved = $("history-list").querySelector(`[data-id="${CSS.escape(call.id)}"]`);
  if (moved && !pending.has(call.id)) moved.remove();
  decided.delete(call.id);
  toHistory(call.id, call, record, true);
  $("history-list").querySelector(`[data-id="${CSS.escape(call.id)}"] .outcome`)?.focus();
}

function isMine(record) { return Boolean(viewer.id) && record.decided_by === viewer.id; }

// Looks one item up: adds it, updates it, or moves it to History.
export async function check(id) {
  try {
    const call = await api(path(id));
    if (call.state === "pending") {
      if (pending.has(id)) updatePending(call);
      else addPending(call);
    } else {
      toHistory(id, call, recordOf(call), isMine(call));
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      pending.get(id)?.node.remove();
      pending.delete(id);
      updateEmpty();
    }
  }
}

// Adds what is missing and retires what is no longer pending; never rebuilds an item.
export async function sync() {
  const data = await api("/api/approvals?state=pending");
  const listed = new Set();
  for (const call of data.items) {
    listed.add(call.id);
    if (pending.has(call.id)) updatePending(call);
    else addPending(call);
  }
  for (const id of [...pending.keys()]) if (!listed.has(id)) await check(id);
}

// Refreshes the labels of the cards shown (is the caller still waiting?); adds nothing.
export async function refreshLabels() {
  if (!pending.size) return;
  const data = await api("/api/approvals?state=pending");
  for (const call of data.items) updatePending(call);
}

export async function loadHistory() {
  const data = await api("/api/approvals?state=" + HISTORY_STATES + "&limit=" + HISTORY_LOADED);
  // Oldest first, so prepending leaves the newest on top.
  const calls = [...data.items].sort((a, b) => a.updated_at - b.updated_at);
  for (const call of calls) if (!pending.has(call.id)) toHistory(call.id, call, recordOf(call), isMine(call));
}

export function tick() {
  for (const [id, { node, call }] of pending) {
    tickCard(node, call);
    if (call.expires_at <= now()) check(id);
  }
}

function eventRecord(type, data, time) {
  return {
    decision: data.decision || "approve", decided_by: data.decided_by || data.by,
    channel: data.channel, message: data.message, when: Date.parse(time) / 1000 || now(),
    grant_id: data.grant_id || data.grant, break_glass: type === "tool.approval.break_glass",
    reason: data.reason,
  };
}

// tool.approval.* events.
export function onApprovalEvent(type, data, time) {
  const id = data.approval_id;
  if (typeof id !== "string") return;
  if (type === "tool.approval.requested" || type === "tool.approval.vote") {
    // A vote may also open the next stage to this approver: look the call up either way.
    if (!decided.has(id)) check(id);
  } else if (type === "tool.approval.resolved" || type === "tool.approval.break_glass") {
    const record = eventRecord(type, data, time);
    const entry = pending.get(id);
    if (entry) { toHistory(id, entry.call, record, isMine(record)); return; }
    // Breaking glass also resolves the call: whichever event came first, History says so.
    const past = $("history-list").querySelector(`[data-id="${CSS.escape(id)}"]`);
    if (past && record.break_glass) retire(past, record, isMine(record));
  }
}

export function clearInbox() {
  $("spacer").style.height = "0";
  pending.clear();
  decided.clear();
  $("calls").replaceChildren();
  $("history-list").replaceChildren();
  $("history").hidden = true;
  $("empty").hidden = true;
}
