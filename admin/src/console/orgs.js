// The organizations page: every organization with this month's tokens and budget, usage across
// organizations over a chosen range, and (operators) the form to create one.
import { api } from './api.js';
import { count, field, h, scroll, show } from './dom.js';
import { attempt, go, may, state } from './ui.js';

function limitInput(name, value) {
  return h('input', { type: 'number', name, min: 0, step: 1, inputmode: 'numeric', value: '', placeholder: `default (${value})` });
}

function createForm(route) {
  const { session } = state;
  const id = h('input', { type: 'text', name: 'id', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}', autocomplete: 'off' });
  const name = h('input', { type: 'text', name: 'name', maxlength: 200 });
  const model = h('input', { type: 'checkbox', name: 'model', id: 'new-org-model', checked: true });
  const rpm = limitInput('rpm', session.defaults.rpm);
  const tpm = limitInput('tpm', session.defaults.tpm);
  const value = (input) => (input.value === '' ? null : Number(input.value));
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'create-org-title',
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          const org = await api('POST', '/api/orgs', {
            id: id.value,
            name: name.value,
            models: model.checked ? [session.modelId] : [],
            rpm: value(rpm),
            tpm: value(tpm),
          });
          go(`#/orgs/${encodeURIComponent(org.id)}`, `Organization ${org.id} created.`, route);
        });
      },
    },
    h('h3', { id: 'create-org-title' }, 'Create an organization'),
    h(
      'div',
      { class: 'row' },
      field('Id', id, '1-64 of A-Z a-z 0-9 . _ -'),
      field('Name', name),
      field('Requests per minute', rpm, 'Empty: the default'),
      field('Tokens per minute', tpm, 'Empty: the default'),
    ),
    h('div', { class: 'check' }, model, h('label', { for: 'new-org-model' }, `May use ${session.modelId}`)),
    h('button', { type: 'submit' }, 'Create organization'),
  );
}

/** Renders the organizations page into `main`. */
export async function orgsView(main, route, days = 30) {
  const [{ orgs }, across, { budgets }] = await Promise.all([
    api('GET', '/api/orgs'),
    api('GET', `/api/usage?days=${days}`),
    api('GET', '/api/budgets'),
  ]);
  const usage = new Map(across.orgs.map((o) => [o.org, o]));
  const budget = new Map(budgets.map((b) => [b.org, b]));
  const period = h(
    'select',
    { id: 'across-days', onchange: () => attempt(() => orgsView(main, route, Number(period.value))) },
    ...[7, 30, 90].map((n) => h('option', { value: n, selected: n === days }, `Last ${n} days (UTC)`)),
  );
  const rows = orgs.map((org) => {
    const used = usage.get(org.id);
    const b = budget.get(org.id);
    return h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: `#/orgs/${encodeURIComponent(org.id)}` }, org.id)),
      h('td', {}, org.name || '—'),
      h('td', {}, org.disabled ? h('span', { class: 'badge revoked' }, 'disabled') : h('span', { class: 'badge active' }, 'active')),
      h('td', { class: 'num' }, count(used?.requests ?? 0)),
      h('td', { class: 'num' }, count(used?.tokens ?? 0)),
      h('td', {}, b ? `${b.percent}% of ${count(b.monthlyTokens)}${b.hardStop ? ' (hard stop)' : ''}` : '—'),
    );
  });
  const table =
    orgs.length === 0
      ? h('p', { class: 'empty' }, 'No organizations yet. Create the first one below; its keys and usage will show here.')
      : scroll(
          h(
            'table',
            {},
            h('caption', {}, `${orgs.length} organization${orgs.length === 1 ? '' : 's'}; usage ${across.since} to ${across.until} (UTC)`),
            h(
              'thead',
              {},
              h('tr', {}, ...['Id', 'Name', 'State', 'Requests', 'Tokens', 'Budget this month'].map((c) => h('th', { scope: 'col' }, c))),
            ),
            h('tbody', {}, rows),
          ),
        );
  show(
    main,
    h(
      'section',
      {},
      h('h2', {}, 'Organizations'),
      h('div', { class: 'row' }, field('Usage period', period)),
      table,
      may('operator') ? createForm(route) : null,
    ),
  );
}
