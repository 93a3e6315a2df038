// Text for the page: untrusted strings made visible, and time labels.
//
// Upstream text is untrusted: it is only ever placed with textContent, and invisible and bidi
// characters are shown as visible \uXXXX escapes (astral ones as a surrogate pair) so an
// approver sees exactly what would run. Applied to JSON text the result is still the same
// JSON value, so an edit box filled with it parses back to the requested arguments.
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}]/gu;

export function visible(text) {
  return String(text).replace(INVISIBLE, (c) => Array.from({ length: c.length },
    (_, i) => "\\u" + c.charCodeAt(i).toString(16).padStart(4, "0")).join(""));
}

export function json(value, indent = 2) { return visible(JSON.stringify(value, null, indent)); }

// Sets the text of the first `.cls` inside `node`, made visible.
export function setText(node, cls, text) {
  node.querySelector("." + cls).textContent = visible(text ?? "");
}

export function now() { return Date.now() / 1000; }

export function clock(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
}

export function fullTime(seconds) { return new Date(seconds * 1000).toLocaleString(); }

export function ago(seconds) {
  const s = now() - seconds;
  if (s < 60) return "less than a minute ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return fullTime(seconds);
}

// A live countdown: "4:07 left" under an hour, "2 h 05 min left" above.
export function left(seconds) {
  const s = Math.floor(seconds - now());
  if (s <= 0) return "expired";
  if (s < 3600) return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0") + " left";
  return Math.floor(s / 3600) + " h " + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + " min left";
}

// "30 min", "2 h", "1 h 30 min", "45 s" for a duration in seconds.
export function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return s + " s";
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (!h) return m + " min";
  return m ? h + " h " + m + " min" : h + " h";
}
