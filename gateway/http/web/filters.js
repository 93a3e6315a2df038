// Filters over the waiting calls and History: tool, server, caller, rule (each a part of the
// name, suggested from the calls seen), state, and a free-text search over everything a card
// shows. Filtering only hides items; nothing is rebuilt. History shows a page at a time.
const $ = (id) => document.getElementById(id);
const FIELDS = ["tool", "server", "caller", "rule"];
const PAGE = 20;
const seen = Object.fromEntries(FIELDS.map((f) => [f, new Set()]));
let historyShown = PAGE;

function values(call) {
  return { tool: call.tool, server: call.server, caller: call.principal, rule: call.rule_id || "(default)" };
}

// Offers the call's tool, server, caller and rule as suggestions in the filter boxes.
export function remember(call) {
  for (const [field, value] of Object.entries(values(call))) {
    if (typeof value !== "string" || seen[field].has(value)) continue;
    seen[field].add(value);
    $("f-" + field + "-list").append(new Option(value));
  }
}

function wanted() {
  const text = (id) => $(id).value.trim().toLowerCase();
  return {
    words: text("filter").split(/\s+/).filter(Boolean),
    fields: FIELDS.map((f) => [f, text("f-" + f)]).filter(([, v]) => v),
    state: $("f-state").value,
  };
}

function matches(node, want) {
  const search = node.dataset.search || "";
  if (!want.words.every((w) => search.includes(w))) return false;
  if (!want.fields.every(([f, v]) => (node.dataset[f] || "").toLowerCase().includes(v))) return false;
  const state = node.dataset.state;
  if (!want.state) return true;
  if (want.state === "decided") return state !== "pending";
  return state === want.state;
}

function active(want) { return want.words.length > 0 || want.fields.length > 0 || Boolean(want.state); }

export function applyFilters() {
  const want = wanted();
  const waiting = [...$("calls").children];
  for (const node of waiting) node.hidden = !matches(node, want);
  const hiddenCount = waiting.filter((n) => n.hidden).length;
  $("filtered").textContent = hiddenCount ? hiddenCount + " waiting call(s) hidden by the filter" : "";
  $("filtered").hidden = !hiddenCount;
  let matching = 0;
  for (const node of $("history-list").children) {
    const yes = matches(node, want);
    node.hidden = !yes || matching >= historyShown;
    if (yes) matching += 1;
  }
  const shown = Math.min(matching, historyShown);
  const total = $("history-list").children.length;
  $("history-count").textContent = active(want)
    ? "Showing " + shown + " of " + matching + " matching (of " + total + " decided calls loaded)"
    : "Showing " + shown + " of " + total + " decided calls";
  $("history-more").hidden = matching <= historyShown;
}

export function clearFilters() {
  $("filters").reset();
  historyShown = PAGE;
  applyFilters();
}

export function forgetSeen() {
  for (const field of FIELDS) {
    seen[field].clear();
    $("f-" + field + "-list").replaceChildren();
  }
}

export function initFilters() {
  const changed = () => { historyShown = PAGE; applyFilters(); };
  $("filters").addEventListener("input", changed);
  $("filters").addEventListener("submit", (event) => event.preventDefault());
  // A reset clears the boxes after this event: apply once they are empty.
  $("filters").addEventListener("reset", () => setTimeout(changed));
  $("history-more").addEventListener("click", () => { historyShown += PAGE; applyFilters(); });
}
