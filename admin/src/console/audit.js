// The audit trail for an auditor: filters (who, what, which object, when, in UTC), pages newest
// first, export of what matches (named for what it holds; the JSON lines are what `audit verify
// --file` checks offline), verification of the signed, checkpointed chain, and the public key.
import { api } from './api.js';
import { field, h, scroll, show, when } from './dom.js';
import { attempt } from './ui.js';

const FILTERS = [
  ['actor', 'Who (contains)'],
  ['action', 'What (starts with, e.g. key.)'],
  ['target', 'Object (contains, e.g. org:acme)'],
];

function query(filter, extra = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...filter, ...extra }))
    if (value !== '' && value !== undefined && value !== null) params.set(name, String(value));
  return params.toString();
}

/** Renders the audit page; `state` keeps the filter and the cursors of the pages seen. */
export async function auditView(main, state = { filter: {}, cursors: [] }) {
  const before = state.cursors.at(-1);
  const [page, key] = await Promise.all([
    api('GET', `/api/audit?${query(state.filter, { limit: 50, before })}`),
    api('GET', '/api/audit/public-key'),
  ]);
  const verdict = h('p', { id: 'verdict', 'aria-live': 'polite' });
  const verify = h(
    'button',
    {
      type: 'button',
      onclick: () =>
        attempt(async () => {
          const result = await api('GET', '/api/audit/verify');
          verdict.className = result.ok ? 'ok' : 'broken';
          verdict.textContent = result.ok
            ? `Chain verified: ${result.records} records, ${result.checkpoints} signed checkpoints, head ${result.head.hash.slice(0, 16)}…`
            : `Chain BROKEN at record ${result.brokenAt}: ${result.reason}`;
        }),
    },
    'Verify the chain',
  );
  const inputs = Object.fromEntries(
    FILTERS.map(([name]) => [name, h('input', { type: 'search', value: state.filter[name] ?? '', maxlength: 200 })]),
  );
  const since = h('input', { type: 'date', value: state.filter.since?.slice(0, 10) ?? '' });
  const until = h('input', { type: 'date', value: state.filter.until?.slice(0, 10) ?? '' });
  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'audit-filter-title',
      onsubmit: (event) => {
        event.preventDefault();
        const filter = Object.fromEntries(Object.entries(inputs).map(([name, input]) => [name, input.value.trim()]));
        if (since.value) filter.since = `${since.value}T00:00:00Z`;
        if (until.value) filter.until = `${until.value}T23:59:59Z`;
        void attempt(() => auditView(main, { filter, cursors: [] }));
      },
    },
    h('h3', { id: 'audit-filter-title' }, 'Filter'),
    h(
      'div',
      { class: 'row' },
      ...FILTERS.map(([name, label]) => field(label, inputs[name])),
      field('From (UTC)', since),
      field('To (UTC)', until),
    ),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'submit' }, 'Apply filters'),
      ...['csv', 'jsonl'].map((format) =>
        h(
          'a',
          { class: 'button', href: `/api/audit/export?${query(state.filter, { format })}`, download: '' },
          `Export ${format.toUpperCase()}`,
        ),
      ),
    ),
  );
  const rows = page.records.map((r) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, String(r.seq)),
      h('td', {}, when(r.at)),
      h('td', {}, r.actor),
      h('td', {}, r.action),
      h('td', {}, r.target),
      h('td', {}, r.from),
      h('td', {}, h('code', {}, JSON.stringify(r.detail))),
      h('td', {}, h('code', { title: r.hash }, r.hash.slice(0, 12))),
    ),
  );
  const newer = h(
    'button',
    {
      type: 'button',
      disabled: state.cursors.length === 0,
      onclick: () => attempt(() => auditView(main, { ...state, cursors: state.cursors.slice(0, -1) })),
    },
    'Newer records',
  );
  const older = h(
    'button',
    {
      type: 'button',
      disabled: page.next === null,
      onclick: () => attempt(() => auditView(main, { ...state, cursors: [...state.cursors, page.next] })),
    },
    'Older records',
  );
  const table =
    page.records.length === 0
      ? h('p', { class: 'empty' }, 'No record matches these filters.')
      : scroll(
          h(
            'table',
            {},
            h('caption', {}, `${page.records.length} record${page.records.length === 1 ? '' : 's'}, newest first (times in UTC)`),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ...['#', 'When (UTC)', 'Who', 'What', 'Object', 'From', 'Detail', 'Hash'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h('tbody', {}, rows),
          ),
        );
  show(
    main,
    h(
      'section',
      {},
      h('h2', {}, 'Audit trail'),
      h(
        'p',
        {},
        `Every admin action and every refusal, append-only, chained by SHA-256, signed with the trail's key and checkpointed outside Redis. Head: record ${page.head.seq}, `,
        h('code', {}, page.head.hash.slice(0, 16)),
        '…',
      ),
      h(
        'p',
        {},
        'Public key ',
        h('a', { href: '/api/audit/public-key' }, h('code', {}, key.fingerprint)),
        ': an auditor checks a JSON-lines export with it and nothing else (npm run admin -- audit verify --file …).',
      ),
      h('div', { class: 'row' }, verify),
      verdict,
      form,
      table,
      h('div', { class: 'row pager' }, newer, older),
    ),
  );
}
