// Administrators (owners only): who may manage the gateway and with which role, their tokens
// (created here and shown once, listed by id with their last use, revoked), disabling someone.
// People who sign in through single sign-on are added by their e-mail address.
import { api } from './api.js';
import { field, h, scroll, show, when } from './dom.js';
import { attempt, say } from './ui.js';

const ROLES = ['viewer', 'operator', 'owner'];

function oneTimeToken(made) {
  const value = h('input', { type: 'text', readonly: true, value: made.token, id: 'new-admin-token', class: 'secret' });
  return h(
    'div',
    { class: 'card once', role: 'region', 'aria-labelledby': 'new-admin-token-title' },
    h('h3', { id: 'new-admin-token-title' }, `New token ${made.id} for ${made.admin}`),
    h('label', { for: 'new-admin-token' }, 'Administrator token'),
    value,
    h('p', {}, 'Shown once: hand it over now. The gateway keeps only a hash of it.'),
  );
}

function adminRow(admin, reload) {
  const path = `/api/admins/${encodeURIComponent(admin.name)}`;
  const role = h(
    'select',
    { 'aria-label': `Role of ${admin.name}` },
    ...ROLES.map((r) => h('option', { value: r, selected: r === admin.role }, r)),
  );
  role.addEventListener('change', () =>
    attempt(async () => {
      await api('PATCH', path, { role: role.value });
      await reload({ message: `${admin.name} is now ${role.value === 'owner' ? 'an' : 'a'} ${role.value}.` });
    }),
  );
  const toggle = h(
    'button',
    {
      type: 'button',
      class: admin.disabled ? '' : 'danger',
      onclick: () =>
        attempt(async () => {
          await api('PATCH', path, { disabled: !admin.disabled });
          await reload({ message: `${admin.name} ${admin.disabled ? 'enabled' : 'disabled'}.` });
        }),
    },
    admin.disabled ? `Enable ${admin.name}` : `Disable ${admin.name}`,
  );
  const token = h(
    'button',
    {
      type: 'button',
      onclick: () =>
        attempt(async () => {
          const made = await api('POST', `${path}/tokens`);
          await reload({ made, message: `Token ${made.id} created for ${admin.name}.` });
        }),
    },
    `New token for ${admin.name}`,
  );
  const tokens =
    admin.tokens.length === 0
      ? h('span', { class: 'empty' }, 'none')
      : h(
          'ul',
          { class: 'plain' },
          admin.tokens.map((t) =>
            h(
              'li',
              {},
              h('code', {}, t.id),
              ` used ${when(t.lastUsedAt, 'never')} `,
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  onclick: () =>
                    attempt(async () => {
                      if (!confirm(`Revoke token ${t.id} of ${admin.name}?`)) return;
                      await api('DELETE', `${path}/tokens/${encodeURIComponent(t.id)}`);
                      await reload({ message: `Token ${t.id} revoked.` });
                    }),
                },
                `Revoke ${t.id}`,
              ),
            ),
          ),
        );
  return h(
    'tr',
    { 'data-admin': admin.name },
    h('th', { scope: 'row' }, admin.name),
    h('td', {}, role),
    h('td', {}, admin.disabled ? h('span', { class: 'badge revoked' }, 'disabled') : h('span', { class: 'badge active' }, 'active')),
    h('td', {}, tokens),
    h('td', { class: 'actions' }, token, toggle),
  );
}

/** Renders the administrators page (owners). */
export async function adminsView(main, options = {}) {
  const reload = (next = {}) => adminsView(main, next);
  const { admins } = await api('GET', '/api/admins');
  const name = h('input', { type: 'text', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9._@+\\-]{0,99}', autocomplete: 'off' });
  const role = h('select', {}, ...ROLES.map((r) => h('option', { value: r }, r)));
  const create = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'add-admin-title',
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          const made = await api('POST', '/api/admins', { name: name.value, role: role.value });
          await reload({ message: `${made.name} added as ${made.role}.` });
        });
      },
    },
    h('h3', { id: 'add-admin-title' }, 'Add an administrator'),
    h(
      'div',
      { class: 'row' },
      field('Name', name, 'Their e-mail address if they sign in with single sign-on'),
      field('Role', role),
      h('button', { type: 'submit' }, 'Add administrator'),
    ),
  );
  const table = scroll(
    h(
      'table',
      {},
      h('caption', {}, `${admins.length} administrator${admins.length === 1 ? '' : 's'}`),
      h(
        'thead',
        {},
        h('tr', {}, ...['Name', 'Role', 'State', 'Tokens (last used, UTC)', 'Actions'].map((c) => h('th', { scope: 'col' }, c))),
      ),
      h(
        'tbody',
        {},
        admins.map((a) => adminRow(a, reload)),
      ),
    ),
  );
  show(
    main,
    h(
      'section',
      {},
      h('h2', {}, 'Administrators'),
      h('p', {}, 'Viewers read everything; operators also change organizations, keys and budgets; owners also manage administrators.'),
      h('div', { 'aria-live': 'polite' }, options.made ? oneTimeToken(options.made) : null),
      table,
      create,
    ),
  );
  if (options.message) say(options.message);
  if (options.made) document.getElementById('new-admin-token').select();
}
