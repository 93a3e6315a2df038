// What an edit changes: the edited arguments against the requested ones, key by key
// (nested objects by path), every value made visible like everywhere else on the page.
import { visible } from "./text.js";

function isObject(value) { return value !== null && typeof value === "object" && !Array.isArray(value); }

// JSON text with object keys sorted, so key order is not a change.
function canonical(value) {
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
  }
  return JSON.stringify(value);
}

function join(at, key) {
  const name = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  if (!at) return name;
  return name.startsWith('"') ? at + "[" + name + "]" : at + "." + name;
}

// [{ kind: "added" | "removed" | "changed", path, before, after }], sorted by key.
export function changes(before, after, at = "") {
  if (!isObject(before) || !isObject(after)) {
    return canonical(before) === canonical(after) ? [] : [{ kind: "changed", path: at, before, after }];
  }
  const out = [];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  for (const key of keys) {
    const path = join(at, key);
    if (!Object.hasOwn(after, key)) out.push({ kind: "removed", path, before: before[key] });
    else if (!Object.hasOwn(before, key)) out.push({ kind: "added", path, after: after[key] });
    else out.push(...changes(before[key], after[key], path));
  }
  return out;
}

function item(cls, ...parts) {
  const node = document.createElement("li");
  node.className = cls;
  for (const [tag, kind, text] of parts) {
    const part = document.createElement(tag);
    part.className = kind;
    part.textContent = visible(text);
    node.append(part, " ");
  }
  return node;
}

function value(v) { return JSON.stringify(v); }

// Fills the list `box` with the changes `text` (the edit box) makes to `requested`.
export function showDiff(box, requested, text) {
  let edited;
  try {
    edited = JSON.parse(text);
  } catch (e) {
    box.replaceChildren(item("invalid", ["span", "note", "Not valid JSON yet: " + e.message]));
    return null;
  }
  if (!isObject(edited)) {
    box.replaceChildren(item("invalid", ["span", "note", "The arguments must be a JSON object."]));
    return null;
  }
  const found = changes(requested, edited);
  if (!found.length) {
    box.replaceChildren(item("same", ["span", "note", "No changes: the requested arguments would run."]));
    return found;
  }
  box.replaceChildren(...found.map((c) => {
    const path = ["code", "path", c.path || "(arguments)"];
    if (c.kind === "added") return item("added", ["span", "kind", "added"], path, ["span", "after", value(c.after)]);
    if (c.kind === "removed") return item("removed", ["span", "kind", "removed"], path, ["del", "before", value(c.before)]);
    return item("changed", ["span", "kind", "changed"], path, ["del", "before", value(c.before)],
      ["span", "arrow", "→"], ["ins", "after", value(c.after)]);
  }));
  return found;
}
