// One organization: its budget standing, settings, monthly token budget, keys, usage over a
// chosen UTC range (top keys by name plus others, per model, as tables too, exportable under
// names that say what they hold), and disabling or deleting it.
import { api } from './api.js';
import { legend, stackedChart, usageTables } from './charts.js';
import { count, field, h, scroll, show } from './dom.js';
import { keysSection } from './keys.js';
import { attempt, go, may, say, state } from './ui.js';

function limitInput(name, value, isDefault) {
  return h('input', {
    type: 'number',
    name,
    min: 0,
    step: 1,
    inputmode: 'numeric',
    value: isDefault ? '' : value,
    placeholder: `default (${value})`,
  });
}

function settingsForm(org, modelId, reload) {
  const name = h('input', { type: 'text', name: 'name', maxlength: 200, value: org.name });
  const model = h('input', { type: 'checkbox', id: 'org-model', checked: org.models.includes(modelId) });
  const rpm = limitInput('rpm', org.rpm, org.rpmIsDefault);
  const tpm = limitInput('tpm', org.tpm, org.tpmIsDefault);
  const value = (input) => (input.value === '' ? null : Number(input.value));
  const others = org.models.filter((m) => m !== modelId);
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'settings-title',
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          await api('PATCH', `/api/orgs/${encodeURIComponent(org.id)}`, {
            name: name.value,
            models: model.checked ? [modelId, ...others] : others,
            rpm: value(rpm),
            tpm: value(tpm),
          });
          await reload({ message: 'Settings saved.' });
        });
      },
    },
    h('h3', { id: 'settings-title' }, 'Settings'),
    h(
      'div',
      { class: 'row' },
      field('Name', name),
      field('Requests per minute', rpm, 'Empty: the default'),
      field('Tokens per minute', tpm, 'Empty: the default'),
    ),
    h('div', { class: 'check' }, model, h('label', { for: 'org-model' }, `May use ${modelId}`)),
    may('operator') ? h('button', { type: 'submit' }, 'Save settings') : null,
  );
}

function budgetCard(org, budget, reload) {
  const tokens = h('input', { type: 'number', min: 0, step: 1, inputmode: 'numeric', value: budget?.monthlyTokens ?? '' });
  const alerts = h('input', {
    type: 'text',
    value: (budget?.alertPercents ?? [80, 100]).join(', '),
    pattern: '\\s*\\d+(\\s*,\\s*\\d+)*\\s*',
  });
  const hardStop = h('input', { type: 'checkbox', id: 'hard-stop', checked: budget?.hardStop ?? false });
  const standing = budget
    ? h(
        'p',
        { class: budget.exhausted ? 'broken' : budget.alertPercent !== null ? 'warn' : '' },
        `${count(budget.usedTokens)} of ${count(budget.monthlyTokens)} tokens used this month (${budget.percent}%, UTC); resets ${budget.resetsAt.slice(0, 10)}.`,
      )
    : h('p', { class: 'empty' }, 'No budget: usage is limited only per minute.');
  return h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'budget-title',
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          const monthlyTokens = tokens.value === '' ? null : Number(tokens.value);
          const alertPercents = alerts.value
            .split(',')
            .map((p) => p.trim())
            .filter(Boolean)
            .map(Number);
          await api(
            'PUT',
            `/api/orgs/${encodeURIComponent(org.id)}/budget`,
            monthlyTokens === null ? { monthlyTokens } : { monthlyTokens, hardStop: hardStop.checked, alertPercents },
          );
          await reload({ message: monthlyTokens === null ? 'Budget removed.' : 'Budget saved.' });
          await state.refreshBanner();
        });
      },
    },
    h('h3', { id: 'budget-title' }, 'Monthly token budget'),
    standing,
    h(
      'div',
      { class: 'row' },
      field('Tokens per month (UTC)', tokens, 'Empty: no budget'),
      field('Alert at percent', alerts, 'For example 80, 100'),
    ),
    h('div', { class: 'check' }, hardStop, h('label', { for: 'hard-stop' }, 'Hard stop: refuse requests (429) once the budget is used')),
    may('operator') ? h('button', { type: 'submit' }, 'Save budget') : null,
  );
}

function stateCard(org, reload, route) {
  const base = `/api/orgs/${encodeURIComponent(org.id)}`;
  const toggle = h(
    'button',
    {
      type: 'button',
      class: org.disabled ? '' : 'danger',
      onclick: () =>
        attempt(async () => {
          if (!org.disabled && !confirm(`Disable ${org.id}? Every one of its keys will be refused until it is enabled.`)) return;
          await api('POST', `${base}/${org.disabled ? 'enable' : 'disable'}`);
          await reload({ message: `Organization ${org.id} ${org.disabled ? 'enabled' : 'disabled'}.` });
        }),
    },
    org.disabled ? 'Enable organization' : 'Disable organization',
  );
  const remove = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: () =>
        attempt(async () => {
          if (!confirm(`Delete ${org.id} and its keys? Its usage records and the audit trail stay.`)) return;
          await api('DELETE', base);
          go('#/orgs', `Organization ${org.id} deleted; its usage and audit records are kept.`, route);
        }),
    },
    'Delete organization',
  );
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'state-title' },
    h('h3', { id: 'state-title' }, 'Disable or delete'),
    h(
      'p',
      {},
      org.disabled
        ? 'Disabled: every key is refused. Enable it, or delete it (usage and audit records stay).'
        : 'Disabling refuses every key at once and can be undone; deleting needs a disabled organization.',
    ),
    h('div', { class: 'row' }, toggle, org.disabled ? remove : null),
  );
}

function rangeQuery(range) {
  return range.since ? `since=${range.since}&until=${range.until}` : `days=${range.days}`;
}

function usageSection(org, series, range, reload) {
  const preset = h(
    'select',
    { id: 'usage-days' },
    ...[7, 14, 30, 90].map((n) => h('option', { value: n, selected: !range.since && n === range.days }, `Last ${n} days`)),
    h('option', { value: 'custom', selected: Boolean(range.since) }, 'Custom range'),
  );
  const since = h('input', { type: 'date', value: series.since, max: series.until });
  const until = h('input', { type: 'date', value: series.until });
  const custom = h(
    'div',
    { class: 'row', hidden: !range.since },
    field('From (UTC)', since),
    field('To (UTC)', until),
    h(
      'button',
      { type: 'button', onclick: () => attempt(() => reload({ range: { since: since.value, until: until.value } })) },
      'Show range',
    ),
  );
  preset.addEventListener('change', () => {
    if (preset.value === 'custom') custom.hidden = false;
    else void attempt(() => reload({ range: { days: Number(preset.value) } }));
  });
  const exportLink = (format) =>
    h(
      'a',
      {
        class: 'button',
        href: `/api/usage/export?format=${format}&org=${encodeURIComponent(org.id)}&since=${series.since}T00:00:00Z&until=${series.until}T23:59:59Z`,
        download: `usage-${org.id}-${series.since}-to-${series.until}.${format}`,
      },
      `Export ${format.toUpperCase()}`,
    );
  const empty = series.days.every((d) => d.requests === 0);
  // The width the chart is shown at (main less its and the card's padding), so its text keeps its size.
  const width = Math.round(Math.min(760, Math.max(280, document.getElementById('main').clientWidth - 64)));
  const charts = empty
    ? [
        h(
          'p',
          { class: 'empty' },
          `No requests from ${series.since} to ${series.until} (UTC). Usage shows here within seconds of a key's first request.`,
        ),
      ]
    : [
        h('figure', {}, h('figcaption', {}, 'Requests per UTC day, by key'), stackedChart(series, 'requests', 'Requests per day', width)),
        h('figure', {}, h('figcaption', {}, 'Tokens per UTC day, by key'), stackedChart(series, 'tokens', 'Tokens per day', width)),
        legend(series),
      ];
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'usage-title' },
    h('h3', { id: 'usage-title' }, `Usage, ${series.since} to ${series.until} (UTC)`),
    h('div', { class: 'row' }, field('Period', preset), exportLink('csv'), exportLink('jsonl')),
    custom,
    ...charts,
    h('details', {}, h('summary', {}, 'Show the numbers as tables'), ...usageTables(series).map(scroll)),
  );
}

/** Renders one organization's page; `options`: range, a key just created, a message, the key list's view. */
export async function orgView(main, id, session, route, options = {}) {
  const range = options.range ?? { days: 14 };
  const keyView = options.keyView ?? { query: '', hideInactive: true, page: 0 };
  const reload = (next = {}) => orgView(main, id, session, route, { range, keyView, ...next });
  const base = `/api/orgs/${encodeURIComponent(id)}`;
  const [org, { keys }, series, { budget }] = await Promise.all([
    api('GET', base),
    api('GET', `${base}/keys`),
    api('GET', `${base}/usage?${rangeQuery(range)}`),
    api('GET', `${base}/budget`),
  ]);
  show(
    main,
    h(
      'section',
      {},
      h('p', {}, h('a', { href: '#/orgs' }, '← All organizations')),
      h('h2', {}, `Organization ${org.id}${org.name ? ` — ${org.name}` : ''}${org.disabled ? ' (disabled)' : ''}`),
      keysSection(org, keys, reload, options.created ?? null, keyView),
      usageSection(org, series, range, reload),
      budgetCard(org, budget, reload),
      settingsForm(org, session.modelId, reload),
      may('operator') ? stateCard(org, reload, route) : null,
    ),
  );
  if (options.message) say(options.message);
  if (options.created) {
    const secret = document.getElementById('new-key');
    secret.focus();
    secret.select();
  }
}
