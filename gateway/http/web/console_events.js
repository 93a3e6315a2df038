// The live event stream (/api/console/events: every event of the operator's tenant), filtered
// by type patterns on the server and by text here; the newest 200 are kept.
import { follow } from "./stream.js";
import { $ } from "./console_dom.js";
import { visible } from "./text.js";

const KEEP = 200;
let following = null;  // { abort } while the stream is followed

function describe(type, data) {
  const parts = [data.tool, data.principal, data.server, data.status, data.decision, data.rule_id];
  return type + " " + parts.filter((p) => typeof p === "string").join(" · ");
}

function shows(item) {
  const text = $("events-text").value.trim().toLowerCase();
  return !text || item.textContent.toLowerCase().includes(text);
}

function onEvent(type, data, time) {
  if (type.startsWith("lockgate.")) return;
  const item = document.createElement("li");
  item.className = "event";
  item.textContent = visible((time || "").slice(11, 19) + " " + describe(type, data));
  item.hidden = !shows(item);
  const list = $("event-list");
  list.prepend(item);
  while (list.children.length > KEEP) list.lastChild.remove();
  count();
}

function count() {
  const items = [...$("event-list").children];
  $("events-count").textContent = items.filter((i) => !i.hidden).length + " of " + items.length + " events shown";
}

function refilter() {
  for (const item of $("event-list").children) item.hidden = !shows(item);
  count();
}

export function followEvents(onRefused) {
  stopEvents();
  const current = { abort: new AbortController() };
  following = current;
  const types = $("events-types").value.trim() || "*";
  follow(current.abort.signal, () => following === current, {
    event: onEvent,
    connected: () => {},
    refused: onRefused,
  }, "/api/console/events?types=" + encodeURIComponent(types));
}

export function stopEvents() {
  if (following) following.abort.abort();
  following = null;
}

export function initEvents(onRefused) {
  $("events-form").addEventListener("submit", (event) => { event.preventDefault(); followEvents(onRefused); });
  $("events-text").addEventListener("input", refilter);
}
