// Calls to the server. Signed in with a session cookie, every request that
// changes state carries the session's CSRF token (X-CSRF-Token).
let csrfToken = '';
let onSignedOut = () => {};

export function setCsrf(token) { csrfToken = token || ''; }
export function whenSignedOut(fn) { onSignedOut = fn; }

// `param`: the request field the server named as wrong (OpenAI's error.param), or ''.
export class ApiError extends Error {
  constructor(status, message, param = '') {
    super(message);
    this.status = status;
    this.param = param;
  }
}

// The error message of an API error body ({"error":{"message"}} or {"error":"..."}).
export function errorMessage(status, body) {
  const e = body && body.error;
  const text = typeof e === 'string' ? e : e && e.message;
  return `${status}: ${text || 'request failed'}`;
}

// /admin/api/models/{id}/{action}: ids keep their '/' (org/Model), each part escaped.
export function modelPath(id, action = '') {
  const path = `/admin/api/models/${id.split('/').map(encodeURIComponent).join('/')}`;
  return action ? `${path}/${action}` : path;
}

// fetch() with the CSRF header; the response itself (for streams).
export async function request(path, { method = 'GET', body, signal } = {}) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const res = await fetch(path, {
    method, headers, signal, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) onSignedOut();
  return res;
}

// A JSON call: the parsed body, or an ApiError with the server's message.
export async function api(path, options) {
  const res = await request(path, options);
  const text = await res.text();
  let body = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  if (!res.ok) throw new ApiError(res.status, errorMessage(res.status, body), body?.error?.param || '');
  return body;
}
