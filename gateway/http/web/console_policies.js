// Policies: the layered files, a call explained, a candidate replayed against recorded calls.
import { api, post } from "./api.js";
import { $, fill, roles, row } from "./console_dom.js";
import { visible } from "./text.js";

export async function loadPolicies() {
  const policy = await api("/api/console/policies");
  $("policy-version").textContent = policy.version;
  fill("policy-layers", policy.layers.map((layer) => row(layer.file, [
    "layer " + layer.layer + " · " + layer.rules + " rules · sha256 " + (layer.sha256 || "unreadable"),
  ])));
  const options = policy.layers.map((layer) => {
    const option = document.createElement("option");
    option.value = layer.layer;
    option.textContent = visible(layer.layer + ": " + layer.file);
    return option;
  });
  $("replay-layer").replaceChildren(...options);
  if (options.length) $("replay-layer").value = options[options.length - 1].value;
}

async function explain(event) {
  event.preventDefault();
  let args;
  try { args = JSON.parse($("explain-args").value || "{}"); } catch (e) { throw new Error("arguments: " + e.message); }
  const answer = await post("/api/console/explain", {
    tool: $("explain-tool").value.trim(),
    principal: $("explain-principal").value.trim(),
    roles: roles($("explain-roles").value),
    args,
  });
  $("explain-out").textContent = visible(answer.text);
  $("explain-out").hidden = false;
}

async function replay(event) {
  event.preventDefault();
  const layer = $("replay-layer").value;
  const body = { policy: $("replay-policy").value };
  if (layer !== "") body.layer = Number(layer);
  const report = await post("/api/console/replay", body);
  $("replay-summary").textContent = report.calls + " recorded calls, " + report.changed
    + " would be decided differently (version " + report.candidate_version + ")";
  fill("replay-rows", report.rows.map((r) => row(r.tool, [
    r.old_effect + " → " + r.new_effect + " by " + (r.new_rule_id || "(defaults)") + " · " + r.count + " calls",
  ], "changed")));
}

export function initPolicies(onError) {
  $("explain-form").addEventListener("submit", (event) => explain(event).catch(onError));
  $("replay-form").addEventListener("submit", (event) => replay(event).catch(onError));
}
