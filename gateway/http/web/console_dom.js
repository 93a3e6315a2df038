// Rows of the console: a title and lines of facts, all placed as text (never as markup),
// untrusted strings made visible.
import { visible } from "./text.js";

export const $ = (id) => document.getElementById(id);

// A list item: `title`, then one line per fact; `cls` adds classes to it.
export function row(title, facts = [], cls = "") {
  const item = document.createElement("li");
  item.className = ("row " + cls).trim();
  const head = document.createElement("h3");
  head.textContent = visible(title);
  item.append(head);
  for (const fact of facts) {
    if (fact === null || fact === undefined || fact === "") continue;
    const line = document.createElement("div");
    line.className = "facts";
    line.textContent = visible(fact);
    item.append(line);
  }
  return item;
}

// Replaces the items of list `id` with `items` (shows `emptyId` when there are none).
export function fill(id, items, emptyId) {
  $(id).replaceChildren(...items);
  if (emptyId) $(emptyId).hidden = items.length > 0;
}

export function roles(text) {
  return text.split(",").map((r) => r.trim()).filter(Boolean);
}

export function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}
