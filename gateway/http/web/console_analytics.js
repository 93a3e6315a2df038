// Approval analytics (/api/analytics/approvals, last 7 days): calls waiting now, outcomes and
// time to decision per rule, per tool and per approver, and grant suggestions as policy
// snippets (never applied here).
import { api } from "./api.js";
import { $, fill, row } from "./console_dom.js";

function seconds(value) { return value === null || value === undefined ? "–" : Math.round(value) + " s"; }

function figures(name, group) {
  const counts = Object.entries(group.counts).filter(([, n]) => n > 0).map(([o, n]) => o + " " + n);
  const wait = group.time_to_decision;
  return row(name, [
    group.held + " held · " + group.pending + " waiting · " + (counts.join(", ") || "none settled"),
    "time to decision p50 " + seconds(wait.p50) + " · p90 " + seconds(wait.p90),
  ]);
}

// One row of figures per name of a grouping (by_rule, by_tool, by_approver).
function table(groups) {
  return Object.entries(groups).map(([name, group]) => figures(name, group));
}

function suggestion(s) {
  const item = row(s.tool + ": approved " + s.approvals + " of " + s.approvals + " times", [
    "by " + s.approved_by.join(", ") + (s.principal ? " · for " + s.principal : ""),
  ], "suggestion");
  const snippet = document.createElement("pre");
  snippet.textContent = s.policy;
  item.append(snippet);
  return item;
}

export async function loadAnalytics() {
  const stats = await api("/api/analytics/approvals?since=7d");
  $("analytics-waiting").textContent = stats.waiting + " calls waiting now";
  fill("analytics-rules", table(stats.by_rule));
  fill("analytics-tools", table(stats.by_tool));
  fill("analytics-approvers", table(stats.by_approver), "analytics-no-approver");
  fill("analytics-suggestions", stats.suggestions.map(suggestion), "analytics-none");
}
