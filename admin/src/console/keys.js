// An organization's keys: create (shown once, focused for copying), search by name or id, hide
// revoked and expired keys, page through them, see when each was last used; rename, re-date,
// rotate with an overlap, revoke. Times in UTC.
import { api } from './api.js';
import { field, h, scroll, when } from './dom.js';
import { attempt, may, say } from './ui.js';

const PAGE = 10;

function oneTimeKey(created) {
  const value = h('input', {
    type: 'text',
    readonly: true,
    value: created.key,
    id: 'new-key',
    class: 'secret',
    'aria-describedby': 'new-key-hint',
  });
  const copy = h(
    'button',
    {
      type: 'button',
      onclick: () =>
        attempt(async () => {
          await navigator.clipboard.writeText(created.key);
          say('Key copied to the clipboard.');
        }),
    },
    'Copy key',
  );
  return h(
    'div',
    { class: 'card once', role: 'region', 'aria-labelledby': 'new-key-title' },
    h('h3', { id: 'new-key-title' }, `New key ${created.id}`),
    h('label', { for: 'new-key' }, 'Full key'),
    h('div', { class: 'row' }, value, copy),
    h('p', { id: 'new-key-hint' }, 'Shown once: store it now. The gateway keeps only a hash of it.'),
  );
}

// The expiry inputs are UTC: type="datetime-local" holds no zone, so the label says which.
const utcInput = (iso) => (iso ? iso.slice(0, 16) : '');
const fromUtcInput = (value) => (value ? new Date(`${value}:00Z`).toISOString() : null);

function keyEditor(key, reload) {
  const name = h('input', { type: 'text', maxlength: 200, value: key.name });
  const expires = h('input', { type: 'datetime-local', value: utcInput(key.expiresAt) });
  const form = h(
    'form',
    {
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          await api('PATCH', `/api/keys/${key.id}`, { name: name.value, expiresAt: fromUtcInput(expires.value) });
          await reload({ message: `Key ${key.id} saved.` });
        });
      },
    },
    field(`Name of key ${key.id}`, name),
    field(`Expiry of key ${key.id} (UTC; empty: never)`, expires),
    h('button', { type: 'submit' }, 'Save key'),
  );
  return h('details', { class: 'edit' }, h('summary', {}, 'Edit'), form);
}

function keyRow(key, reload) {
  const overlap = h(
    'select',
    { 'aria-label': `Overlap for rotating ${key.id}` },
    ...[
      ['3600', '1 hour'],
      ['86400', '1 day'],
      ['604800', '7 days'],
      ['0', 'none'],
    ].map(([v, t]) => h('option', { value: v }, `${t} overlap`)),
  );
  const rotate = h(
    'button',
    {
      type: 'button',
      onclick: () =>
        attempt(async () => {
          const result = await api('POST', `/api/keys/${key.id}/rotate`, { overlapSeconds: Number(overlap.value) });
          await reload({ created: result.new, message: `Key ${key.id} rotated; it stops working ${when(result.old.expiresAt)}.` });
        }),
    },
    'Rotate',
  );
  const revoke = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: () =>
        attempt(async () => {
          if (!confirm(`Revoke key ${key.id}? Requests with it will be refused.`)) return;
          await api('POST', `/api/keys/${key.id}/revoke`);
          await reload({ message: `Key ${key.id} revoked.` });
        }),
    },
    'Revoke',
  );
  const actions = key.status === 'active' && may('operator') ? [overlap, rotate, revoke, keyEditor(key, reload)] : '—';
  return h(
    'tr',
    { 'data-key': key.id },
    h('td', {}, key.name || '—'),
    h('th', { scope: 'row' }, h('code', {}, key.id)),
    h('td', {}, h('span', { class: `badge ${key.status}` }, key.status)),
    h('td', {}, when(key.lastUsedAt, 'not recently')),
    h('td', {}, when(key.createdAt)),
    h('td', {}, when(key.expiresAt)),
    h('td', { class: 'actions' }, actions),
  );
}

function createForm(org, reload) {
  const name = h('input', { type: 'text', name: 'key-name', maxlength: 200 });
  const expires = h('input', { type: 'datetime-local', name: 'expires', min: utcInput(new Date().toISOString()) });
  return h(
    'form',
    {
      class: 'row',
      'aria-labelledby': 'keys-title',
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          const body = { name: name.value };
          if (expires.value) body.expiresAt = fromUtcInput(expires.value);
          const made = await api('POST', `/api/orgs/${encodeURIComponent(org.id)}/keys`, body);
          await reload({ created: made, message: `Key ${made.id} created.` });
        });
      },
    },
    field('Key name', name),
    field('Expires (UTC, optional)', expires),
    h('button', { type: 'submit' }, 'Create key'),
  );
}

/** The keys card; `view` holds the search, the hide toggle and the page across reloads. */
export function keysSection(org, keys, reload, created, view) {
  const slot = h('div', { 'aria-live': 'polite' }, created ? oneTimeKey(created) : null);
  const body = h('tbody');
  const caption = h('caption');
  const pager = h('div', { class: 'row pager' });
  const search = h('input', { type: 'search', value: view.query, 'aria-controls': 'key-table' });
  const hide = h('input', { type: 'checkbox', id: 'hide-inactive', checked: view.hideInactive });
  const render = () => {
    const needle = view.query.trim().toLowerCase();
    const shown = keys.filter(
      (k) =>
        (!view.hideInactive || k.status === 'active') &&
        (!needle || k.name.toLowerCase().includes(needle) || k.id.toLowerCase().includes(needle)),
    );
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    view.page = Math.min(view.page, pages - 1);
    const page = shown.slice(view.page * PAGE, view.page * PAGE + PAGE);
    body.replaceChildren(...page.map((key) => keyRow(key, reload)));
    caption.textContent = `${shown.length} of ${keys.length} key${keys.length === 1 ? '' : 's'} shown${pages > 1 ? `, page ${view.page + 1} of ${pages}` : ''}`;
    if (shown.length === 0)
      body.append(
        h('tr', {}, h('td', { colspan: 7, class: 'empty' }, keys.length === 0 ? 'No keys yet: create one above.' : 'No key matches.')),
      );
    const step = (delta, label) =>
      h(
        'button',
        {
          type: 'button',
          disabled: view.page + delta < 0 || view.page + delta >= pages,
          onclick: () => {
            view.page += delta;
            render();
          },
        },
        label,
      );
    pager.replaceChildren(step(-1, 'Previous keys'), step(1, 'Next keys'));
  };
  search.addEventListener('input', () => {
    view.query = search.value;
    view.page = 0;
    render();
  });
  hide.addEventListener('change', () => {
    view.hideInactive = hide.checked;
    view.page = 0;
    render();
  });
  const table = h(
    'table',
    { id: 'key-table' },
    caption,
    h(
      'thead',
      {},
      h('tr', {}, ...['Name', 'Id', 'Status', 'Last used', 'Created', 'Expires', 'Actions'].map((c) => h('th', { scope: 'col' }, c))),
    ),
    body,
  );
  render();
  return h(
    'section',
    { class: 'card' },
    h('h3', { id: 'keys-title' }, 'Keys'),
    may('operator') && !org.disabled ? createForm(org, reload) : null,
    slot,
    h(
      'div',
      { class: 'row' },
      field('Search keys', search, 'By name or id'),
      h('div', { class: 'check' }, hide, h('label', { for: 'hide-inactive' }, 'Hide revoked and expired')),
    ),
    scroll(table),
    pager,
  );
}
