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
  // An item being accepted, or saying what still hides its tool, stays (never moved, so it
  // keeps the focus) until the page is reloaded.
  const list = $("pin-list");
  for (const item of [...list.children]) if (!item.dataset.accepted) item.remove();
  list.prepend(...details.map(pinItem));
  $("pins").hidden = list.children.length === 0;
}

function pinItem(pin) {
  const node = $("pin-template").content.firstElementChild.cloneNode(true);
  node.dataset.name = pin.name;
  node.querySelector(".name").textContent = visible(pin.name);
  node.querySelector(".fields").textContent = "changed: " + pin.fields.join(", ");
  const review = pin.review || { flags: { changed: [], new: [] }, texts: {}, structure: [] };
  showFlags(node.querySelector(".flags"), review.flags);
  node.querySelector(".words").replaceChildren(
    ...Object.entries(review.texts).map(([field, runs]) => wordDiff(field, runs)));
  node.querySelector(".structure").replaceChildren(...review.structure.map(structureLine));
  node.querySelector(".diff").textContent = visible(pin.diff);
  node.querySelector(".hidden-after").textContent = hidingText(pin.hidden_after_accept || [], "Once accepted, still hidden: ");
  node.querySelector(".accept").addEventListener("click", async () => {
    node.dataset.accepted = "pending"; // a refresh meanwhile (the acceptance's own event) keeps it
    try {
      const accepted = await post("/api/pins/" + encodeURIComponent(pin.name) + "/accept", { pin: pin.changed_pin });
      showError("");
      const still = accepted.still_hidden || [];
      if (!still.length) { node.remove(); }
      else {
        // Accepted, yet not served: say so, and how to lift what hides it.
        node.dataset.accepted = "true";
        node.querySelector(".actions").remove();
        node.querySelector(".hidden-after").hidden = true;
        const said = node.querySelector(".still-hidden");
        said.textContent = hidingText(still, "Accepted. Agents still cannot see this tool: ");
        said.hidden = false;
        said.focus();
      }
    } catch (e) {
      delete node.dataset.accepted;
      const newer = $("pin-list").querySelectorAll(`li.pin-change[data-name="${CSS.escape(pin.name)}"]`);
      if (newer.length > 1) node.remove(); // the definition changed again: its new item is shown
      showError("Definition not accepted: " + e.message);
    }
    $("pins").hidden = $("pin-list").children.length === 0;
  });
  return node;
}

// The flags of the changed definition; those the change brings are marked new.
function showFlags(node, flags) {
  if (!flags.changed.length) { node.textContent = "Flags: none"; return; }
  node.replaceChildren("Flags: ", ...flags.changed.flatMap((flag, i) => {
    const item = document.createElement("span");
    item.textContent = flag + (flags.new.includes(flag) ? " (new)" : "");
    if (flags.new.includes(flag)) item.className = "new";
    return i ? [", ", item] : [item];
  }));
}

// One text field's word diff: kept words plain, added ones in <ins>, removed ones in <del>.
function wordDiff(field, runs) {
  const line = document.createElement("p");
  const label = document.createElement("strong");
  label.textContent = field + ": ";
  line.append(label, ...runs.map((run) => {
    if (run.op === "=") return visible(run.text);
    const mark = document.createElement(run.op === "+" ? "ins" : "del");
    mark.textContent = visible(run.text);
    return mark;
  }));
  return line;
}

function structureLine(change) {
  const item = document.createElement("li");
  const values = ["before", "after"].filter((k) => k in change).map((k) => JSON.stringify(change[k]));
  item.textContent = visible(change.change + " " + change.path + ": " + values.join(" → "));
  return item;
}

function hidingText(hiding, lead) {
  if (!hiding.length) return "";
  return lead + hiding.map((h) => h.text + " (to lift it, " + h.lift + ")").join("; ") + ".";
}

export function clearPins() {
  $("pin-list").replaceChildren();
  $("pins").hidden = true;
  shownPins = "";
}
