// The catalogue as a chosen principal (id and roles) would be listed it.
import { api } from "./api.js";
import { $, fill, roles, row } from "./console_dom.js";
import { visible } from "./text.js";

async function list(event) {
  event.preventDefault();
  const principal = $("catalogue-principal").value.trim();
  const query = new URLSearchParams({ principal, roles: roles($("catalogue-roles").value).join(",") });
  const answer = await api("/api/console/catalogue?" + query);
  $("catalogue-summary").textContent = visible(answer.principal) + " sees " + answer.items.length + " tools";
  fill("catalogue-list", answer.items.map((tool) => row(tool.name, [
    tool.title || "",
    tool.description,
    tool.flags.length ? "flags: " + tool.flags.join(", ") : "",
  ])));
}

export function initCatalogue(onError) {
  $("catalogue-form").addEventListener("submit", (event) => list(event).catch(onError));
}
