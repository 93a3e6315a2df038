// Sessions (every replica's with PostgreSQL): caller, calls, loaded groups, labels, gates, last calls.
import { api } from "./api.js";
import { fill, row } from "./console_dom.js";

function gate(g) {
  return g.tool + ": " + g.option + " " + (g.locked ? "locked" : "open") + " (" + g.detail + ")";
}

export async function loadSessions() {
  const { items } = await api("/api/console/sessions");
  fill("session-list", items.map((s) => row(s.principal + " · session " + s.session, [
    s.calls + " calls" + (s.groups.length ? " · groups " + s.groups.join(", ") : ""),
    s.labels.length ? "labels: " + s.labels.join(", ") : "no labels",
    ...s.gates.map(gate),
    s.history.length ? "last: " + s.history.map((h) => h.tool + (h.ok ? "" : " (failed)")).join(", ") : "",
  ])), "sessions-empty");
}
