// The console: sign-in, organizations, one organization (settings, keys, usage), audit trail.
// Hash routes (#/orgs, #/orgs/<id>, #/audit) so the back button and bookmarks work.
import { api, ApiError, setCsrfToken } from './api.js';
import { keyColor, stackedChart, swatch, usageTable } from './charts.js';
import { field, h, show, when } from './dom.js';

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const errorLine = document.getElementById('error');
let session = null;
// A message for the view a navigation is about to show (hash changes render asynchronously).
let pending = '';

function say(message) {
  errorLine.textContent = '';
  statusLine.textContent = message;
}

function fail(error) {
  statusLine.textContent = '';
  errorLine.textContent = error instanceof ApiError ? `${error.message} (${error.code})` : String(error.message ?? error);
  if (error instanceof ApiError && error.code === 'admin_unauthorized') signedOut();
}

/** Navigates to `hash` and shows `message` there. */
function go(hash, message) {
  pending = message;
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** Runs an action, reporting failures in the alert line. */
async function attempt(action) {
  try {
    await action();
  } catch (error) {
    fail(error);
  }
}

function signedIn(value) {
  session = value;
  setCsrfToken(value.csrfToken);
  document.getElementById('actor').textContent = `Signed in as ${value.actor}`;
  document.getElementById('nav').hidden = false;
  document.getElementById('who').hidden = false;
}

function signedOut() {
  session = null;
  document.getElementById('nav').hidden = true;
  document.getElementById('who').hidden = true;
  signInView();
}

function signInView() {
  const token = h('input', { type: 'password', name: 'token', required: true, autocomplete: 'current-password' });
  const name = h('input', { type: 'text', name: 'name', maxlength: 64, autocomplete: 'username' });
  const form = h('form', { class: 'card narrow', onsubmit: (event) => {
    event.preventDefault();
    attempt(async () => {
      signedIn(await api('POST', '/api/session', { token: token.value, name: name.value }));
      go('#/orgs', 'Signed in.');
    });
  } },
  h('h2', {}, 'Sign in'),
  field('Admin token', token, 'From the file ADMIN_TOKEN_FILE names. Behind SSO your proxy signs you in.'),
  field('Your name (recorded in the audit trail)', name),
  h('button', { type: 'submit' }, 'Sign in'));
  show(main, form);
}

function limitInput(name, value, isDefault) {
  return h('input', { type: 'number', name, min: 0, step: 1, inputmode: 'numeric', value: isDefault ? '' : value, placeholder: `default (${value})` });
}

function limitValue(input) {
  return input.value === '' ? null : Number(input.value);
}

async function orgsView() {
  const { orgs } = await api('GET', '/api/orgs');
  const id = h('input', { type: 'text', name: 'id', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}', autocomplete: 'off' });
  const name = h('input', { type: 'text', name: 'name', maxlength: 200 });
  const model = h('input', { type: 'checkbox', name: 'model', id: 'new-org-model', checked: true });
  const rpm = limitInput('rpm', session.defaults.rpm, true);
  const tpm = limitInput('tpm', session.defaults.tpm, true);
  const create = h('form', { class: 'card', 'aria-labelledby': 'create-org-title', onsubmit: (event) => {
    event.preventDefault();
    attempt(async () => {
      const org = await api('POST', '/api/orgs', { id: id.value, name: name.value, models: model.checked ? [session.modelId] : [], rpm: limitValue(rpm), tpm: limitValue(tpm) });
      go(`#/orgs/${encodeURIComponent(org.id)}`, `Organization ${org.id} created.`);
    });
  } },
  h('h3', { id: 'create-org-title' }, 'Create an organization'),
  h('div', { class: 'row' },
    field('Id', id, '1-64 of A-Z a-z 0-9 . _ -'),
    field('Name', name),
    field('Requests per minute', rpm, 'Empty: the default'),
    field('Tokens per minute', tpm, 'Empty: the default')),
  h('div', { class: 'check' }, model, h('label', { for: 'new-org-model' }, `May use ${session.modelId}`)),
  h('button', { type: 'submit' }, 'Create organization'));
  const rows = orgs.map((org) => h('tr', {},
    h('th', { scope: 'row' }, h('a', { href: `#/orgs/${encodeURIComponent(org.id)}` }, org.id)),
    h('td', {}, org.name || '—'),
    h('td', {}, org.models.join(', ') || 'none'),
    h('td', {}, `${org.rpm}${org.rpmIsDefault ? ' (default)' : ''}`),
    h('td', {}, `${org.tpm}${org.tpmIsDefault ? ' (default)' : ''}`)));
  const table = h('table', {}, h('caption', {}, `${orgs.length} organization${orgs.length === 1 ? '' : 's'}`),
    h('thead', {}, h('tr', {}, ...['Id', 'Name', 'Models', 'Requests / min', 'Tokens / min'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows));
  show(main, h('section', {}, h('h2', {}, 'Organizations'), table, create));
}

function settingsForm(org, reload) {
  const name = h('input', { type: 'text', name: 'name', maxlength: 200, value: org.name });
  const model = h('input', { type: 'checkbox', id: 'org-model', checked: org.models.includes(session.modelId) });
  const rpm = limitInput('rpm', org.rpm, org.rpmIsDefault);
  const tpm = limitInput('tpm', org.tpm, org.tpmIsDefault);
  const others = org.models.filter((m) => m !== session.modelId);
  return h('form', { class: 'card', 'aria-labelledby': 'settings-title', onsubmit: (event) => {
    event.preventDefault();
    attempt(async () => {
      const models = model.checked ? [session.modelId, ...others] : others;
      await api('PATCH', `/api/orgs/${encodeURIComponent(org.id)}`, { name: name.value, models, rpm: limitValue(rpm), tpm: limitValue(tpm) });
      await reload();
      say('Settings saved.');
    });
  } },
  h('h3', { id: 'settings-title' }, 'Settings'),
  h('div', { class: 'row' }, field('Name', name), field('Requests per minute', rpm, 'Empty: the default'), field('Tokens per minute', tpm, 'Empty: the default')),
  h('div', { class: 'check' }, model, h('label', { for: 'org-model' }, `May use ${session.modelId}`)),
  h('button', { type: 'submit' }, 'Save settings'));
}

function oneTimeKey(created) {
  const value = h('input', { type: 'text', readonly: true, value: created.key, id: 'new-key', class: 'secret', 'aria-describedby': 'new-key-hint' });
  const copy = h('button', { type: 'button', onclick: () => attempt(async () => {
    await navigator.clipboard.writeText(created.key);
    say('Key copied to the clipboard.');
  }) }, 'Copy key');
  return h('div', { class: 'card once', role: 'region', 'aria-labelledby': 'new-key-title' },
    h('h3', { id: 'new-key-title' }, `New key ${created.id}`),
    h('label', { for: 'new-key' }, 'Full key'),
    h('div', { class: 'row' }, value, copy),
    h('p', { id: 'new-key-hint' }, 'Shown once: store it now. The gateway keeps only a hash of it.'));
}

// datetime-local inputs speak local time without a zone.
function localInput(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

function keyEditor(key, reload) {
  const name = h('input', { type: 'text', maxlength: 200, value: key.name });
  const expires = h('input', { type: 'datetime-local', value: localInput(key.expiresAt) });
  const form = h('form', { onsubmit: (event) => {
    event.preventDefault();
    attempt(async () => {
      await api('PATCH', `/api/keys/${key.id}`, { name: name.value, expiresAt: expires.value ? new Date(expires.value).toISOString() : null });
      await reload();
      say(`Key ${key.id} saved.`);
    });
  } }, field(`Name of key ${key.id}`, name), field(`Expiry of key ${key.id} (empty: never)`, expires), h('button', { type: 'submit' }, 'Save key'));
  return h('details', { class: 'edit' }, h('summary', {}, 'Edit'), form);
}

function keyRow(org, key, reload) {
  const overlap = h('select', { 'aria-label': `Overlap for rotating ${key.id}` },
    ...[['3600', '1 hour'], ['86400', '1 day'], ['604800', '7 days'], ['0', 'none']].map(([v, t]) => h('option', { value: v }, `${t} overlap`)));
  const rotate = h('button', { type: 'button', onclick: () => attempt(async () => {
    const result = await api('POST', `/api/keys/${key.id}/rotate`, { overlapSeconds: Number(overlap.value) });
    await reload(undefined, result.new);
    say(`Key ${key.id} rotated; it stops working ${when(result.old.expiresAt)}.`);
  }) }, 'Rotate');
  const revoke = h('button', { type: 'button', class: 'danger', onclick: () => attempt(async () => {
    if (!confirm(`Revoke key ${key.id}? Requests with it will be refused.`)) return;
    await api('POST', `/api/keys/${key.id}/revoke`);
    await reload();
    say(`Key ${key.id} revoked.`);
  }) }, 'Revoke');
  const active = key.status === 'active';
  return h('tr', { 'data-key': key.id },
    h('th', { scope: 'row' }, h('code', {}, key.id)),
    h('td', {}, key.name || '—'),
    h('td', {}, h('span', { class: `badge ${key.status}` }, key.status)),
    h('td', {}, when(key.createdAt)),
    h('td', {}, when(key.expiresAt)),
    h('td', { class: 'actions' }, active ? [overlap, rotate, revoke, keyEditor(key, reload)] : '—'));
}

// `created`: a key just made, shown once in this rendering and never again.
function keysSection(org, keys, reload, created) {
  const slot = h('div', { 'aria-live': 'polite' }, created ? oneTimeKey(created) : null);
  const name = h('input', { type: 'text', name: 'key-name', maxlength: 200 });
  const expires = h('input', { type: 'datetime-local', name: 'expires' });
  const create = h('form', { class: 'row', 'aria-labelledby': 'keys-title', onsubmit: (event) => {
    event.preventDefault();
    attempt(async () => {
      const body = { name: name.value };
      if (expires.value) body.expiresAt = new Date(expires.value).toISOString();
      const made = await api('POST', `/api/orgs/${encodeURIComponent(org.id)}/keys`, body);
      await reload(undefined, made);
      say(`Key ${made.id} created.`);
    });
  } }, field('Key name', name), field('Expires (optional)', expires), h('button', { type: 'submit' }, 'Create key'));
  const table = h('table', {}, h('caption', {}, `${keys.length} key${keys.length === 1 ? '' : 's'}`),
    h('thead', {}, h('tr', {}, ...['Id', 'Name', 'Status', 'Created', 'Expires', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, keys.map((key) => keyRow(org, key, reload))));
  return h('section', { class: 'card' }, h('h3', { id: 'keys-title' }, 'Keys'), create, slot, table);
}

function usageSection(org, series, days, reload) {
  const select = h('select', { id: 'usage-days', onchange: () => attempt(() => reload(Number(select.value))) },
    ...[7, 14, 30, 90].map((n) => h('option', { value: n, selected: n === days }, `Last ${n} days`)));
  const legend = h('ul', { class: 'legend', 'aria-label': 'Keys' }, series.keys.map((k, i) => h('li', {}, swatch(keyColor(i)), k.keyId)));
  const exportLink = (format) => h('a', { class: 'button', href: `/api/usage/export?format=${format}&org=${encodeURIComponent(org.id)}`, download: `usage-${org.id}.${format}` }, `Export ${format.toUpperCase()}`);
  return h('section', { class: 'card', 'aria-labelledby': 'usage-title' },
    h('h3', { id: 'usage-title' }, 'Usage'),
    h('div', { class: 'row' }, field('Period', select), exportLink('csv'), exportLink('jsonl')),
    h('figure', {}, h('figcaption', {}, 'Requests per day, by key'), stackedChart(series, 'requests', 'Requests per day')),
    h('figure', {}, h('figcaption', {}, 'Tokens per day, by key'), stackedChart(series, 'tokens', 'Tokens per day')),
    legend,
    h('details', {}, h('summary', {}, 'Show the numbers as a table'), usageTable(series)));
}

async function orgView(id, days = 14, created = null) {
  const reload = (nextDays = days, made = null) => orgView(id, nextDays, made);
  const base = `/api/orgs/${encodeURIComponent(id)}`;
  const [org, { keys }, series] = await Promise.all([api('GET', base), api('GET', `${base}/keys`), api('GET', `${base}/usage?days=${days}`)]);
  show(main, h('section', {},
    h('p', {}, h('a', { href: '#/orgs' }, '← All organizations')),
    h('h2', {}, `Organization ${org.id}${org.name ? ` — ${org.name}` : ''}`),
    settingsForm(org, reload),
    keysSection(org, keys, reload, created),
    usageSection(org, series, days, reload)));
  if (created) {
    const secret = document.getElementById('new-key');
    secret.focus();
    secret.select();
  }
}

async function auditView() {
  const { records, head } = await api('GET', '/api/audit?limit=100');
  const verdict = h('p', { id: 'verdict', 'aria-live': 'polite' });
  const verify = h('button', { type: 'button', onclick: () => attempt(async () => {
    const result = await api('GET', '/api/audit/verify');
    verdict.className = result.ok ? 'ok' : 'broken';
    verdict.textContent = result.ok
      ? `Chain verified: ${result.records} records, head ${result.head.hash.slice(0, 16)}…`
      : `Chain BROKEN at record ${result.brokenAt}: ${result.reason}`;
  }) }, 'Verify the chain');
  const rows = records.map((r) => h('tr', {},
    h('th', { scope: 'row' }, String(r.seq)), h('td', {}, when(r.at)), h('td', {}, r.actor), h('td', {}, r.action),
    h('td', {}, r.target), h('td', {}, r.from), h('td', {}, h('code', {}, JSON.stringify(r.detail))), h('td', {}, h('code', { title: r.hash }, r.hash.slice(0, 12)))));
  show(main, h('section', {},
    h('h2', {}, 'Audit trail'),
    h('p', {}, `Every admin action, append-only and hash-chained. Head: record ${head.seq}, `, h('code', {}, head.hash.slice(0, 16)), '…'),
    h('div', { class: 'row' }, verify),
    verdict,
    h('table', {}, h('caption', {}, `The ${records.length} most recent records`),
      h('thead', {}, h('tr', {}, ...['#', 'When', 'Who', 'What', 'Target', 'From', 'Detail', 'Hash'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows))));
}

async function route() {
  statusLine.textContent = pending;
  errorLine.textContent = '';
  pending = '';
  if (!session) return signInView();
  const hash = location.hash || '#/orgs';
  await attempt(async () => {
    const org = /^#\/orgs\/(.+)$/.exec(hash);
    if (org) await orgView(decodeURIComponent(org[1]));
    else if (hash === '#/audit') await auditView();
    else await orgsView();
  });
}

document.getElementById('sign-out').addEventListener('click', () => attempt(async () => {
  await api('DELETE', '/api/session');
  say('Signed out.');
  signedOut();
}));
window.addEventListener('hashchange', route);

// An existing session, else the one an SSO proxy's credentials open without a typed token,
// else the sign-in form.
for (const attemptSession of [() => api('GET', '/api/session'), () => api('POST', '/api/session', {})]) {
  try {
    signedIn(await attemptSession());
    break;
  } catch {
    session = null;
  }
}
route();
