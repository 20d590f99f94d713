// Usage charts as inline SVG, drawn here (no chart library): stacked bars per UTC day, one
// segment per top key (by name) and one for all other keys, with a text title on every segment,
// a legend by name, and tables beside each chart for screen readers and exact numbers.
import { count } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const PALETTE = ['#1f5fa8', '#d2691e', '#2e8b57', '#8a2be2', '#b22222', '#008b8b', '#6b6b00', '#c71585'];
const OTHERS_COLOR = '#9aa4ae';

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value);
}

/** A key's label: its name, else its id. */
export function keyLabel(key) {
  return key.name ? `${key.name} (${key.keyId})` : key.keyId;
}

/** The chart's segments: the top keys, then "others" when some keys are summed. */
export function segments(series) {
  const top = series.keys.map((key, i) => ({ id: key.keyId, label: keyLabel(key), color: PALETTE[i % PALETTE.length], days: key.days }));
  if (series.others)
    top.push({
      id: 'others',
      label: `${series.others.keys} other key${series.others.keys === 1 ? '' : 's'}`,
      color: OTHERS_COLOR,
      days: series.others.days,
    });
  return top;
}

/** A small colored square for a legend (an SVG: the page's CSP allows no inline styles). */
export function swatch(color) {
  const root = svg('svg', { width: 12, height: 12, class: 'swatch', 'aria-hidden': 'true' });
  root.append(svg('rect', { width: 12, height: 12, fill: color }));
  return root;
}

/**
 * A stacked bar chart of `metric` ('requests' | 'tokens') per UTC day, one segment per entry of
 * `segments(series)`, drawn `width` user units wide: the width it will be shown at, so its
 * 12-unit axis text is 12 px on a phone as on a desk (a fixed viewBox shrank it to 6 px).
 */
export function stackedChart(series, metric, label, width = 640) {
  const height = 220;
  const pad = { left: 56, right: 8, top: 12, bottom: 36 };
  const parts = segments(series);
  const days = series.days.map((d) => d.day);
  const totals = series.days.map((d) => d[metric]);
  const max = niceMax(Math.max(...totals, 0));
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = plotW / Math.max(days.length, 1);
  const total = totals.reduce((a, b) => a + b, 0);
  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `${label}: ${count(total)} in ${days.length} UTC days`,
    class: 'chart',
  });
  for (const tick of [0, max / 2, max]) {
    const y = pad.top + plotH - (tick / max) * plotH;
    root.append(svg('line', { x1: pad.left, x2: width - pad.right, y1: y, y2: y, class: 'grid' }));
    root.append(svg('text', { x: pad.left - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, compact.format(tick)));
  }
  // A date label ("03-04") needs about 48 px: at most 7, fewer on a narrow chart, never overlapping.
  const every = Math.ceil(days.length / Math.max(2, Math.min(7, Math.floor(plotW / 48))));
  days.forEach((day, i) => {
    let base = 0;
    const x = pad.left + i * slot + slot * 0.15;
    for (const part of parts) {
      const value = part.days[i]?.[metric] ?? 0;
      if (value === 0) continue;
      const h = (value / max) * plotH;
      const rect = svg('rect', {
        x,
        y: pad.top + plotH - base - h,
        width: Math.max(slot * 0.7, 1),
        height: h,
        fill: part.color,
        'data-key': part.id,
        'data-day': day,
      });
      rect.append(svg('title', {}, `${day} UTC · ${part.label}: ${count(value)} ${metric}`));
      root.append(rect);
      base += h;
    }
    if ((days.length - 1 - i) % every === 0)
      root.append(svg('text', { x: x + slot * 0.35, y: height - pad.bottom + 16, 'text-anchor': 'middle', class: 'axis' }, day.slice(5)));
  });
  return root;
}

/** The legend: each segment's colour and name. */
export function legend(series) {
  const list = document.createElement('ul');
  list.className = 'legend';
  list.setAttribute('aria-label', 'Keys in the charts');
  for (const part of segments(series)) {
    const item = document.createElement('li');
    item.append(swatch(part.color), part.label);
    list.append(item);
  }
  return list;
}

function table(caption, head, rows) {
  const node = document.createElement('table');
  node.createCaption().textContent = caption;
  const headRow = node.createTHead().insertRow();
  for (const text of head) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = text;
    headRow.append(th);
  }
  const body = node.createTBody();
  for (const cells of rows) {
    const row = body.insertRow();
    for (const text of cells) row.insertCell().textContent = String(text);
  }
  return node;
}

/** The numbers behind the charts: per UTC day, then per key (and others) over the range. */
export function usageTables(series) {
  const perDay = table(
    'Usage per day (UTC)',
    ['Day (UTC)', 'Requests', 'Tokens'],
    series.days.map((d) => [d.day, count(d.requests), count(d.tokens)]),
  );
  const sum = (days, metric) => days.reduce((s, d) => s + d[metric], 0);
  const perKey = table(
    `Usage per key, ${series.since} to ${series.until} (UTC)`,
    ['Key', 'Requests', 'Tokens'],
    segments(series).map((part) => [part.label, count(sum(part.days, 'requests')), count(sum(part.days, 'tokens'))]),
  );
  const perModel = table(
    'Usage per model (UTC days)',
    ['Model', 'Requests', 'Tokens'],
    series.models.map((m) => [m.model, count(sum(m.days, 'requests')), count(sum(m.days, 'tokens'))]),
  );
  return [perDay, perKey, perModel];
}
