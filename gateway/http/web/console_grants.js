// Active grants (/api/grants): read here; revoked on the approvals page.
import { api } from "./api.js";
import { fill, row, when } from "./console_dom.js";

export async function loadGrants() {
  const { items } = await api("/api/grants");
  fill("grant-list", items.map((g) => row(g.tool + " (" + g.scope + ")", [
    "for " + (g.principal || "any caller") + (g.session_id ? " · session " + g.session_id : ""),
    "by " + g.created_by + " · " + (g.expires_at ? "until " + when(g.expires_at) : "no expiry"),
  ])), "grants-empty");
}
