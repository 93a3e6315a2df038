// The audit log's last entries, and its hash chain verified on demand.
import { api } from "./api.js";
import { $ } from "./console_dom.js";
import { visible } from "./text.js";

export async function loadAudit() {
  const { items } = await api("/api/console/audit?limit=50");
  const rows = items.reverse().map((entry) => {
    const item = document.createElement("li");
    item.className = "audit-entry";
    item.textContent = visible("#" + entry.seq + " " + entry.ts.slice(0, 19) + " " + entry.kind
      + (entry.tool ? " " + entry.tool : "") + (entry.principal ? " · " + entry.principal : ""));
    return item;
  });
  $("audit-list").replaceChildren(...rows);
}

export async function verifyAudit() {
  const report = await api("/api/console/audit/verify");
  const verdict = $("audit-verdict");
  verdict.className = report.ok ? "ok" : "bad";
  verdict.textContent = report.ok
    ? "Chain verified: " + report.entries + " entries intact"
    : "Chain broken at entry " + report.first_bad_seq + ": " + visible(report.problem || "");
}
