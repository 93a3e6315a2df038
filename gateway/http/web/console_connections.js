// Who is connected to which per-caller server (/api/connections/all): ids, servers, principals
// and times, never a secret. Users set and revoke their own (CLI, REST).
import { api } from "./api.js";
import { fill, row, when } from "./console_dom.js";

export async function loadConnections() {
  const { items } = await api("/api/connections/all");
  fill("connection-list", items.map((c) => row(c.server + " · " + c.principal, [
    "connected " + when(c.created_at) + (c.updated_at !== c.created_at ? " · secret set again " + when(c.updated_at) : ""),
    "connection " + c.id,
  ])), "connections-empty");
}
