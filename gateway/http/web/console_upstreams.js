// Upstreams: status, transport, era, tools, reconnects, last error, quarantined pins.
import { api } from "./api.js";
import { fill, row, when } from "./console_dom.js";

export async function loadUpstreams() {
  const { items } = await api("/api/console/upstreams");
  fill("upstream-list", items.map((up) => row(up.name + " — " + up.status, [
    "transport " + up.transport + " · era " + (up.era || "none yet") + " · " + up.tools + " tools",
    "reconnects " + up.reconnects,
    up.last_error ? "last error: " + up.last_error + " (" + when(up.last_error_at) + ")" : "no error reported",
    up.quarantined.length ? "quarantined: " + up.quarantined.join(", ") : "no definition in quarantine",
    up.status !== "up" && up.detail ? up.detail : "",
  ], "status-" + up.status)));
}
