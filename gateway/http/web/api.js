// The gateway's REST API, as the signed-in approver.
//
// The approver's token stays in this tab (sessionStorage) and goes out only as a Bearer header
// to this gateway's API: no cookie, so no cross-site request can act with it.
const KEY = "lockgate.approverToken";
const $ = (id) => document.getElementById(id);

export function token() { return sessionStorage.getItem(KEY); }
export function keepToken(value) { sessionStorage.setItem(KEY, value); }
export function forgetToken() { sessionStorage.removeItem(KEY); }

// An API error: `status` is the HTTP status (0 when the gateway could not be reached).
export class ApiError extends Error {
  constructor(status, detail) {
    super(status + " " + detail);
    this.status = status;
  }
}

export async function api(path, options = {}) {
  const headers = { "Authorization": "Bearer " + token(), "X-Lockgate-Channel": "web" };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { ...options, headers, cache: "no-store" });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body.detail || body.error || "");
  return body;
}

export function post(path, body) {
  return api(path, { method: "POST", body: JSON.stringify(body) });
}

export function showError(message) {
  $("error").textContent = message || "";
  $("error").hidden = !message;
}

// Says `message` to screen readers (the cards themselves are not a live region: their
// countdowns tick every second).
export function announce(message) {
  $("announce").textContent = message;
}
