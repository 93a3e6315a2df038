// Changed tool definitions (only approvers named by pins.approvers see any), each with its
// diff and an accept button.
import { api, post, showError } from "./api.js";
import { visible } from "./text.js";

const $ = (id) => document.getElementById(id);
let shownPins = "";

export async function refreshPins() {
  const data = await api("/api/pins");
  const key = data.items.map((p) => p.name + "@" + p.changed_pin).join(",");
  if (key === shownPins) return;
  const details = await Promise.all(
    data.items.map((p) => api("/api/pins/" + encodeURIComponent(p.name))));
  shownPins = key;
  $("pins").hidden = details.length === 0;
  $("pin-list").replaceChildren(...details.map(pinItem));
}

function pinItem(pin) {
  const node = $("pin-template").content.firstElementChild.cloneNode(true);
  node.dataset.name = pin.name;
  node.querySelector(".name").textContent = visible(pin.name);
  node.querySelector(".fields").textContent = "changed: " + pin.fields.join(", ");
  node.querySelector(".diff").textContent = visible(pin.diff);
  node.querySelector(".accept").addEventListener("click", async () => {
    try {
      await post("/api/pins/" + encodeURIComponent(pin.name) + "/accept", { pin: pin.changed_pin });
      showError("");
      node.remove();
      $("pins").hidden = $("pin-list").children.length === 0;
    } catch (e) { showError("Definition not accepted: " + e.message); }
  });
  return node;
}

export function clearPins() {
  $("pin-list").replaceChildren();
  $("pins").hidden = true;
  shownPins = "";
}
