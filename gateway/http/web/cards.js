// One held call as a card: built once from its template, then only its labels change (time,
// waiting, stages, votes); when decided it becomes a read-only History item.
import { hasVoted, othersText, stagesText, votesText, withRoles } from "./people.js";
import { ago, clock, fullTime, json, left, now, setText, visible } from "./text.js";

const $ = (id) => document.getElementById(id);

// Shows row `cls` (its <dt> is the previous sibling) with `text`, or hides it when empty.
function row(node, cls, text) {
  const dd = node.querySelector("." + cls);
  if (!dd) return;
  dd.textContent = visible(text || "");
  dd.hidden = !text;
  dd.previousElementSibling.hidden = !text;
}

function searchText(call) {
  return [call.tool, call.server, call.principal, ...(call.principal_roles || []), call.session_id,
    call.rule_id || "(default)", call.reason, call.id, JSON.stringify(call.args),
    call.decided_by, call.message].filter(Boolean).join(" ").toLowerCase();
}

export function buildCard(call) {
  const node = $("call-template").content.firstElementChild.cloneNode(true);
  node.dataset.id = call.id;
  node.id = call.id;  // a notification links to #ap_...
  Object.assign(node.dataset, {
    tool: call.tool, server: call.server, caller: call.principal,
    rule: call.rule_id || "(default)", state: "pending", search: searchText(call),
  });
  node.setAttribute("aria-labelledby", call.id + "-title");
  node.querySelector("h3").id = call.id + "-title";
  setText(node, "tool", call.tool);
  setText(node, "server", "on " + call.server);
  setText(node, "principal", withRoles(call.principal, call.principal_roles));
  setText(node, "session", call.session_id || "none (no session)");
  setText(node, "reason", call.reason || "(no reason given)");
  row(node, "why", (call.rule_id || "the policy's default") + ": " + (call.reason || "(no reason given)"));
  setText(node, "rule", call.rule_id || "(default)");
  setText(node, "id", call.id);
  setText(node, "args", json(call.args));
  setText(node, "offered", call.decisions.join(", "));
  node.querySelector(".requested").title = fullTime(call.created_at);
  node.querySelector(".expires").title = fullTime(call.expires_at);
  refreshCard(node, call);
  tickCard(node, call);
  return node;
}

function waitingText(call) {
  if (call.waiting === undefined) return "";
  return call.waiting ? "yes: its request is held open until a decision"
    : "no: it was answered \u201cpending\u201d and gets the outcome when it re-issues the call";
}

// The context pack (GET /api/approvals/{id}): what the tool does, why the call was held, the
// client asking and what the session did before. Untrusted text goes in as text, made visible.
export function fillContext(node, context) {
  if (!context) return;
  const tool = context.tool || {};
  const does = node.querySelector(".does");
  does.textContent = visible(tool.known
    ? (tool.title ? tool.title + ": " : "") + (tool.description || "(no description)")
    : "This tool is not served now (its server may be down, or its definition waits for review).");
  does.hidden = false;
  row(node, "why", context.rule?.text);
  const hints = Object.entries(tool.annotations || {}).map(([k, v]) => k + "=" + v).join(", ");
  row(node, "hints", tool.known ? (hints || "none") + " (" + tool.annotations_trust + ")" : "");
  row(node, "flags", (tool.flags || []).join(", "));
  const client = context.caller?.client;
  const said = client && ([client.name, client.version].filter(Boolean).join(" ") || "a client with no name");
  row(node, "client", client ? said + " (" + [client.transport, client.protocol_version].filter(Boolean).join(", ") + ")" : "");
  const session = context.session || {};
  row(node, "before", (session.recent || []).map((c) => c.tool + (c.ok ? "" : " (failed)")).join(", "));
  row(node, "labels", Object.entries(session.labels || {})
    .map(([label, tools]) => label + " (via " + tools.join(", ") + ")").join("; "));
  row(node, "digest", "sha256:" + (context.arguments?.sha256 || ""));
  const preview = context.preview;
  if (preview) {
    const box = node.querySelector(".preview");
    box.querySelector("summary").textContent = visible("Preview: " + preview.tool + " " + JSON.stringify(preview.args));
    box.querySelector("pre").textContent = visible(preview.text);
    box.classList.toggle("not-run", !preview.ran);
    box.hidden = false;
  }
  node.dataset.search += " " + [tool.description, context.rule?.text, client?.name].filter(Boolean).join(" ").toLowerCase();
}

// The labels that change while a call waits (refetched, or told by an event).
export function refreshCard(node, call) {
  row(node, "waiting", waitingText(call));
  node.classList.toggle("gone", call.waiting === false);
  row(node, "stages", stagesText(call));
  row(node, "votes", votesText(call));
  row(node, "others", node.classList.contains("past") ? "" : othersText(call));
  node.classList.toggle("voted", hasVoted(call));
}

// The clock labels, every second.
export function tickCard(node, call) {
  node.querySelector(".requested").textContent = ago(call.created_at) + " (at " + clock(call.created_at) + ")";
  node.querySelector(".expires").textContent = left(call.expires_at);
  node.classList.toggle("soon", call.expires_at - now() < 60);
}

const LABELS = {
  approve: "Approved", deny: "Denied", edit: "Approved with edits", respond: "Answered",
  expire: "Expired", expired: "Expired", cancel: "Cancelled", cancelled: "Cancelled",
  result: "Result posted", error: "Failed", approved: "Approved", denied: "Denied",
};
const GRANTS = { session: "Approved for this session", tool: "Approved for this tool" };
const STATES = {
  approve: "approved", edit: "approved", deny: "denied", respond: "answered", expire: "expired",
  cancel: "cancelled", approved: "approved", executing: "approved", done: "approved",
  failed: "approved", denied: "denied", expired: "expired", cancelled: "cancelled",
};

// A decided call as History shows it: { decision, state, decided_by, channel, message, when,
// grant_id, grant_scope, break_glass, reason }.
export function recordOf(call) {
  return {
    decision: call.decision, state: call.state, decided_by: call.decided_by, channel: call.channel,
    message: call.message, when: call.updated_at, grant_id: call.grant_id,
  };
}

function outcomeText(record, byMe) {
  let what = LABELS[record.decision] || LABELS[record.state] || record.state || record.decision || "Decided";
  if (record.break_glass) what = "Approved by breaking glass";
  else if (record.grant_scope) what = GRANTS[record.grant_scope] || what;
  const who = byMe ? "you" : (record.decided_by || "");
  return what + (who ? " by " + who : "") + " at " + clock(record.when)
    + (record.channel && !(byMe && record.channel === "web") ? " (" + record.channel + ")" : "")
    + (record.grant_id ? "; grant " + record.grant_id : "");
}

// Turns a card (or a new one for `call`) into a read-only History item.
export function retire(node, record, byMe) {
  node.classList.replace("call", "past");
  node.classList.remove("soon", "voted", "gone");
  node.querySelector(".actions")?.remove();
  for (const cls of ["expires", "waiting", "others"]) row(node, cls, "");
  const outcome = node.querySelector(".outcome");
  outcome.textContent = visible(outcomeText(record, byMe));
  outcome.hidden = false;
  outcome.dataset.decision = record.decision || record.state || "";
  const said = record.break_glass ? "Reason: " + (record.reason || "") : record.message ? "Message: " + record.message : "";
  if (said) setText(node, "said", said);
  node.dataset.state = STATES[record.decision] || STATES[record.state] || "decided";
  node.dataset.search += " " + [record.decided_by, record.message, record.reason, node.dataset.state]
    .filter(Boolean).join(" ").toLowerCase();
  return node;
}

// Says on a card what just happened to it (a vote, a refused decision...).
export function note(node, text) {
  const line = node.querySelector(".note");
  if (!line) return;
  line.textContent = visible(text || "");
  line.hidden = !text;
}
