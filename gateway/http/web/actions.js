// A card's controls: approve (once, for the session, for the tool for a while), deny,
// respond, edit (with the diff against the requested arguments) and break glass.
// Each posts one decision body (POST /api/approvals/{id}/decision).
import { post, showError } from "./api.js";
import { note } from "./cards.js";
import { showDiff } from "./diff.js";
import { hasVoted, mayBreakGlass, mayDecideNow } from "./people.js";
import { duration, json } from "./text.js";

const DURATIONS = [300, 900, 1800, 3600, 4 * 3600, 8 * 3600, 24 * 3600];
const APPROVING = [".approve", ".grant-session", ".grant-tool-go", ".edit"];

// The grant durations offered: common ones up to the rule's `grant_max`, and `grant_max`.
function durations(max) {
  if (typeof max !== "number" || max <= 0) return DURATIONS;
  const list = DURATIONS.filter((d) => d < max);
  return [...list, max];
}

function offers(call, scope) { return Array.isArray(call.grants) && call.grants.includes(scope); }

function show(node, selector, yes) {
  const element = node.querySelector(selector);
  if (element) element.hidden = !yes;
}

function setUpGrants(node, call) {
  const session = offers(call, "session") && Boolean(call.session_id);
  const tool = offers(call, "tool");
  show(node, ".grant-session", session);
  show(node, ".grant-tool", tool);
  if (session || tool) node.querySelector(".approve").textContent = "Approve once";
  const select = node.querySelector(".grant-duration");
  const choices = durations(call.grant_max);
  select.replaceChildren(...choices.map((seconds) => new Option(duration(seconds), String(seconds))));
  select.value = String(choices.includes(1800) ? 1800 : choices[choices.length - 1]);
}

// Enables what the viewer may do now (stage, vote already cast), and says why not.
export function updateControls(node, call) {
  if (!node.querySelector(".actions")) return;
  const now = mayDecideNow(call);
  const voted = hasVoted(call);
  for (const selector of APPROVING) node.querySelector(selector).disabled = !now.ok || voted;
  for (const selector of [".deny", ".deny-message", ".respond"]) node.querySelector(selector).disabled = !now.ok;
  show(node, ".break-glass-open", mayBreakGlass(call));
  node.querySelector(".blocked").textContent = now.why;
  node.querySelector(".blocked").hidden = now.ok;
  note(node, voted && now.ok ? "You voted for this call; it waits for the other votes." : "");
}

function setUpEdit(node, call) {
  const edits = node.querySelector(".edit-args");
  const box = node.querySelector(".edit-diff");
  edits.value = json(call.args);
  edits.addEventListener("input", () => {
    box.hidden = false;
    showDiff(box.querySelector("ul"), call.args, edits.value);
  });
}

function setUpBreakGlass(node, call, done) {
  const open = node.querySelector(".break-glass-open");
  const form = node.querySelector("form.break-glass");
  const reason = form.querySelector(".bg-reason");
  const close = () => { form.hidden = true; open.setAttribute("aria-expanded", "false"); open.focus(); };
  open.addEventListener("click", () => {
    form.hidden = false;
    open.setAttribute("aria-expanded", "true");
    reason.focus();
  });
  form.querySelector(".bg-cancel").addEventListener("click", close);
  form.addEventListener("keydown", (event) => { if (event.key === "Escape") { event.preventDefault(); close(); } });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = reason.value.trim();
    if (!text) { showError("Breaking glass needs a reason."); reason.focus(); return; }
    decide(node, call, { decision: "approve", break_glass: true, reason: text },
      { break_glass: true, reason: text }, done);
  });
}

function body(node, decision) {
  const out = { decision };
  const message = node.querySelector(".message").value;
  if ((decision === "deny" || decision === "respond") && message) out.message = message;
  return out;
}

function grantBody(node, scope) {
  if (scope === "session") return { decision: "approve", grant: { scope: "session" } };
  const seconds = Number(node.querySelector(".grant-duration").value);
  const principal = node.querySelector(".grant-principal").checked;
  return { decision: "approve", grant: { scope: "tool", duration: seconds, principal } };
}

// The message and edit boxes open on demand (a compact card): `which` is "message" or "edit".
export function openArea(node, which, open = true) {
  const area = node.querySelector("." + which + "-area");
  const toggle = node.querySelector(".open-" + which);
  if (!area || !toggle || toggle.hidden) return;
  area.hidden = !open;
  toggle.setAttribute("aria-expanded", String(open));
  if (open) area.querySelector(which === "edit" ? "textarea" : "input").focus();
  else toggle.focus();
}

function setUpAreas(node, call) {
  const offered = (d) => call.decisions.includes(d);
  show(node, ".open-message", offered("deny") || offered("respond"));
  show(node, ".open-edit", offered("edit"));
  show(node, ".deny-message", offered("deny"));
  for (const which of ["message", "edit"]) {
    node.querySelector(".open-" + which).addEventListener("click", () =>
      openArea(node, which, node.querySelector("." + which + "-area").hidden));
    node.querySelector("." + which + "-area").addEventListener("keydown", (event) => {
      if (event.key === "Escape") { event.preventDefault(); openArea(node, which, false); }
    });
  }
}

// Wires the card `node` of `call`; `done` is told the outcome:
// { decided(call, extra), voted(call), check(id) }.
export function wire(node, call, done) {
  for (const decision of ["approve", "deny", "respond", "edit"]) {
    const offered = call.decisions.includes(decision);
    show(node, "." + decision, offered);
    node.querySelector("." + decision).addEventListener("click", () => {
      if (decision !== "edit") { decide(node, call, body(node, decision), {}, done); return; }
      try {
        decide(node, call, { decision, args: JSON.parse(node.querySelector(".edit-args").value) }, {}, done);
      } catch (e) { showError("Edited arguments are not valid JSON: " + e.message); }
    });
  }
  node.querySelector(".deny-message").addEventListener("click",
    () => decide(node, call, body(node, "deny"), {}, done));
  setUpAreas(node, call);
  setUpGrants(node, call);
  node.querySelector(".grant-session").addEventListener("click",
    () => decide(node, call, grantBody(node, "session"), { grant_scope: "session" }, done));
  node.querySelector(".grant-tool-go").addEventListener("click",
    () => decide(node, call, grantBody(node, "tool"), { grant_scope: "tool" }, done));
  setUpEdit(node, call);
  setUpBreakGlass(node, call, done);
  updateControls(node, call);
}

async function decide(node, call, decision, extra, done) {
  const buttons = [...node.querySelectorAll(".actions button")];
  const before = buttons.map((b) => b.disabled);
  buttons.forEach((b) => { b.disabled = true; });
  try {
    const result = await post("/api/approvals/" + encodeURIComponent(call.id) + "/decision", decision);
    showError("");
    if (result.state === "pending") {  // a vote of a staged call: the card says so
      buttons.forEach((b, i) => { b.disabled = before[i]; });
      done.voted(result);
    } else {
      done.decided(result, extra);
    }
  } catch (e) {
    buttons.forEach((b, i) => { b.disabled = before[i]; });
    showError("Decision not taken: " + e.message);
    done.check(call.id);
  }
}
