// The console's only way to the admin API: same-origin fetches with the session cookie, the
// CSRF token on every state-changing request, and problem bodies turned into readable errors.

let csrfToken = '';

/** Remembers the session's CSRF token (from sign-in or GET /api/session). */
export function setCsrfToken(token) {
  csrfToken = token;
}

/** An API failure carrying the problem body's code and detail. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code ?? 'unknown';
  }
}

/** Calls the admin API; resolves to the JSON body (or null for 204). */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  if (response.status === 204) return null;
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}
