// The event stream (/api/events), read with fetch: EventSource cannot send an Authorization
// header. Reconnects with backoff and Last-Event-ID; each reconnection catches up first.
import { token } from "./api.js";

const $ = (id) => document.getElementById(id);
const TYPES = "tool.approval.*,tool.pin_*,tool.grant.*";

// Follows the stream while `isCurrent()`; `handlers`: { event(type, data, time),
// connected(again), refused() }; `source`: the stream's URL (the console reads its own).
export async function follow(signal, isCurrent, handlers, source = "/api/events?types=" + TYPES) {
  let lastId = null;
  let backoff = 1;
  let again = false;
  while (isCurrent()) {
    try {
      const headers = { "Authorization": "Bearer " + token() };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch(source, { headers, cache: "no-store", signal });
      if (response.status === 401) { handlers.refused(); return; }
      if (!response.ok || !response.body) throw new Error("event stream: " + response.status);
      backoff = 1;
      $("live").textContent = "live";
      handlers.connected(again);
      await readFrames(response.body, (frame) => {
        if (frame.id) lastId = frame.id;
        dispatch(frame, handlers);
      });
    } catch (e) {
      if (!isCurrent()) return;
    }
    again = true;
    $("live").textContent = "reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, backoff * 1000));
    backoff = Math.min(backoff * 2, 10);
  }
}

function dispatch(frame, handlers) {
  let event;
  try { event = JSON.parse(frame.data); } catch { return; }
  const data = event.data && typeof event.data === "object" ? event.data : {};
  handlers.event(event.type || frame.event || "", data, event.time);
}

async function readFrames(body, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let frame = { data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop();  // an unfinished line waits for the next chunk
    for (const line of lines) {
      if (line === "") {
        if (frame.data.length) onFrame({ ...frame, data: frame.data.join("\n") });
        frame = { data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;  // keep-alive comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) text = text.slice(1);
      if (field === "data") frame.data.push(text);
      else if (field === "id") frame.id = text;
      else if (field === "event") frame.event = text;
    }
  }
}
