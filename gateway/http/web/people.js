// Who is signed in, and what a held call says about who decides it: the approvers of its
// current stage, who else may decide, the stages that remain, the votes so far.
//
// Approver entries are principal ids (`user:bob`), roles (`role:security`) or `caller`.
import { clock } from "./text.js";

// The signed-in approver (GET /api/me).
export const viewer = { id: null, roles: [], tenant: null };

export function setViewer(me) {
  viewer.id = me?.id ?? null;
  viewer.roles = Array.isArray(me?.roles) ? me.roles : [];
  viewer.tenant = me?.tenant ?? null;
}

// "user:alice (security, oncall)".
export function withRoles(id, roles) {
  return roles && roles.length ? id + " (" + roles.join(", ") + ")" : id;
}

function isViewer(entry) {
  if (entry === viewer.id) return true;
  return entry.startsWith("role:") && viewer.roles.includes(entry.slice(5));
}

function stages(call) { return Array.isArray(call.stages) ? call.stages : []; }
function votes(call) { return Array.isArray(call.votes) ? call.votes : []; }

// The entries that may decide now: the current stage's, or the call's approvers.
function deciders(call) {
  const all = stages(call);
  const at = call.stage ?? 0;
  return all.length && at < all.length ? all[at].approvers || [] : call.approvers || [];
}

function group(entries) {
  const names = entries.filter((e) => e !== "caller").map((e) => (e.startsWith("role:") ? e.slice(5) : e));
  return names.length ? names.join(" or ") : "approver";
}

// Whether the viewer may decide the call now; `why` says why not.
export function mayDecideNow(call) {
  const named = deciders(call).filter((e) => e !== "caller");
  if (!named.length || named.some(isViewer)) return { ok: true, why: "" };
  const later = stages(call).findIndex((s, i) => i > (call.stage ?? 0) && (s.approvers || []).some(isViewer));
  const when = later >= 0 ? "you decide in stage " + (later + 1) : "you are not among them";
  return { ok: false, why: "Stage " + ((call.stage ?? 0) + 1) + " is for " + group(named) + "; " + when + "." };
}

export function hasVoted(call) { return votes(call).some((v) => v.by === viewer.id); }

export function mayBreakGlass(call) {
  return Array.isArray(call.break_glass) && call.break_glass.some(isViewer);
}

// Who may decide besides the viewer, from the current stage (voters of this stage left out).
export function othersText(call) {
  const entries = deciders(call);
  if (!entries.filter((e) => e !== "caller").length) {
    const anyone = "any other approver";
    return entries.includes("caller") ? anyone + "; the caller (" + call.principal + ")" : anyone;
  }
  const voted = new Set(votes(call).filter((v) => v.stage === (call.stage ?? 0)).map((v) => v.by));
  const others = [];
  for (const entry of entries) {
    if (entry === viewer.id || voted.has(entry)) continue;
    if (entry === "caller") others.push("the caller (" + call.principal + ")");
    else if (entry.startsWith("role:") && isViewer(entry)) others.push("other " + entry + " members");
    else others.push(entry);
  }
  return others.length ? others.join(", ") : "nobody else";
}

// "stage 1 of 2: 1 of 2 security votes; then user:cto" (empty for a single decision).
export function stagesText(call) {
  const all = stages(call);
  if (!all.length) return "";
  const at = call.stage ?? 0;
  if (at >= all.length) return "all " + all.length + " stages done";
  const cast = votes(call).filter((v) => v.stage === at).length;
  const now = plain(all[at]) ? "waiting for " + all[at].approvers[0] : cast + " of " + needed(all[at]);
  const parts = ["stage " + (at + 1) + " of " + all.length + ": " + now];
  for (const later of all.slice(at + 1)) parts.push("then " + (plain(later) ? later.approvers[0] : needed(later)));
  return parts.join("; ");
}

// One named person deciding alone.
function plain(stage) {
  const entries = stage.approvers || [];
  const one = entries.length === 1 ? entries[0] : "role:";
  return (stage.min ?? 1) === 1 && !one.startsWith("role:") && one !== "caller";
}

// "2 security votes".
function needed(stage) {
  const n = stage.min ?? 1;
  return n + " " + group(stage.approvers || []) + " vote" + (n === 1 ? "" : "s");
}

// "user:bob at 12:03 (web), you at 12:04 (web)".
export function votesText(call) {
  return votes(call).map((v) => (v.by === viewer.id ? "you" : v.by) + " at " + clock(v.at)
    + (v.channel ? " (" + v.channel + ")" : "")).join(", ");
}
