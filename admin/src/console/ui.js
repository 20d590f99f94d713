// What every view shares: the status and alert lines, running an action with its failure
// shown, navigation with a message for the next view, and the signed-in session.
import { ApiError } from './api.js';

const statusLine = document.getElementById('status');
const errorLine = document.getElementById('error');
let pending = '';
let onSignedOut = () => {};

/** The signed-in session (GET /api/session), or null. */
export const state = { session: null, refreshBanner: async () => {} };

/** Shows a status message. */
export function say(message) {
  errorLine.textContent = '';
  statusLine.textContent = message;
}

/** Shows a failure in the alert line; an expired session goes back to sign-in. */
export function fail(error) {
  statusLine.textContent = '';
  errorLine.textContent = error instanceof ApiError ? `${error.message} (${error.code})` : String(error.message ?? error);
  if (error instanceof ApiError && error.code === 'admin_unauthorized') onSignedOut();
}

/** Shows `text` in the alert line without a failure. */
export function alertText(text) {
  errorLine.textContent = text;
}

/** Runs an action, reporting failures in the alert line; never rejects, so callers may `void` it. */
export async function attempt(action) {
  try {
    await action();
  } catch (error) {
    fail(error);
  }
}

/** The message the next view shows (taken once). */
export function takePending() {
  const message = pending;
  pending = '';
  return message;
}

/** Navigates to `hash` and shows `message` there. */
export function go(hash, message, route) {
  pending = message;
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** What to do when the API says the session is gone. */
export function whenSignedOut(handler) {
  onSignedOut = handler;
}

/** True when the signed-in administrator's role includes `role`. */
export function may(role) {
  const rank = { viewer: 0, operator: 1, owner: 2 };
  return (rank[state.session?.role] ?? -1) >= rank[role];
}
