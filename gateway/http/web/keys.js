// Keyboard-only flow over the waiting calls: j / k move to the next / previous card, a approves
// the card in focus, d denies it (with the message typed, if any), m and e open its message and
// edit boxes. Keys typed into a field are the field's own.
import { openArea } from "./actions.js";

const FIELDS = new Set(["INPUT", "TEXTAREA", "SELECT"]);

function cards() {
  return [...document.querySelectorAll("#calls > li.call")].filter((card) => card.offsetParent !== null);
}

function current() { return document.activeElement?.closest("#calls > li.call") || null; }

function move(step) {
  const list = cards();
  if (!list.length) return;
  const at = list.indexOf(current());
  const next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(Math.max(at + step, 0), list.length - 1);
  list[next].focus();
  list[next].scrollIntoView({ block: "nearest" });
}

function press(card, selector) {
  const button = card?.querySelector(selector);
  if (button && !button.hidden && !button.disabled) button.click();
}

const KEYS = {
  j: () => move(1),
  k: () => move(-1),
  a: () => press(current(), ".approve"),
  d: () => press(current(), ".deny"),
  m: () => { const card = current(); if (card) openArea(card, "message"); },
  e: () => { const card = current(); if (card) openArea(card, "edit"); },
};

export function initKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || FIELDS.has(event.target.tagName)) return;
    const action = KEYS[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });
}
