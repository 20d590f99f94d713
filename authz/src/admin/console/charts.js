// Usage charts as inline SVG, drawn here (no chart library): stacked bars per day, one segment
// per key, with a text title on every segment and a data table beside each chart for screen
// readers and exact numbers.

const SVG = 'http://www.w3.org/2000/svg';
const PALETTE = ['#1f5fa8', '#d2691e', '#2e8b57', '#8a2be2', '#b22222', '#008b8b', '#6b6b00', '#c71585'];

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

/** The color a key gets in every chart of the page. */
export function keyColor(index) {
  return PALETTE[index % PALETTE.length];
}

/** A small colored square for a legend (an SVG: the page's CSP allows no inline styles). */
export function swatch(color) {
  const root = svg('svg', { width: 12, height: 12, class: 'swatch', 'aria-hidden': 'true' });
  root.append(svg('rect', { width: 12, height: 12, fill: color }));
  return root;
}

/**
 * A stacked bar chart of `metric` ('requests' | 'tokens') per day: `series` is the usage
 * response ({ days, keys: [{ keyId, days }] }).
 */
export function stackedChart(series, metric, label) {
  const width = 640;
  const height = 220;
  const pad = { left: 56, right: 8, top: 12, bottom: 36 };
  const days = series.days.map((d) => d.day);
  const totals = series.days.map((d) => d[metric]);
  const max = niceMax(Math.max(...totals, 0));
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = plotW / Math.max(days.length, 1);
  const total = totals.reduce((a, b) => a + b, 0);
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${label}: ${total} in ${days.length} days`, class: 'chart' });
  for (const tick of [0, max / 2, max]) {
    const y = pad.top + plotH - (tick / max) * plotH;
    root.append(svg('line', { x1: pad.left, x2: width - pad.right, y1: y, y2: y, class: 'grid' }));
    root.append(svg('text', { x: pad.left - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, compact.format(tick)));
  }
  days.forEach((day, i) => {
    let base = 0;
    const x = pad.left + i * slot + slot * 0.15;
    series.keys.forEach((key, k) => {
      const value = key.days[i]?.[metric] ?? 0;
      if (value === 0) return;
      const h = (value / max) * plotH;
      const rect = svg('rect', { x, y: pad.top + plotH - base - h, width: slot * 0.7, height: h, fill: keyColor(k), 'data-key': key.keyId, 'data-day': day });
      rect.append(svg('title', {}, `${day} · key ${key.keyId}: ${value} ${metric}`));
      root.append(rect);
      base += h;
    });
    if (i % Math.ceil(days.length / 8) === 0 || i === days.length - 1) {
      root.append(svg('text', { x: x + slot * 0.35, y: height - pad.bottom + 16, 'text-anchor': 'middle', class: 'axis' }, day.slice(5)));
    }
  });
  return root;
}

/** The numbers behind the charts, as a table. */
export function usageTable(series) {
  const table = document.createElement('table');
  table.innerHTML = '<caption>Usage per day (UTC)</caption><thead><tr><th scope="col">Day</th><th scope="col">Requests</th><th scope="col">Tokens</th><th scope="col">By key (requests / tokens)</th></tr></thead>';
  const body = table.createTBody();
  series.days.forEach((day, i) => {
    const row = body.insertRow();
    const byKey = series.keys.map((k) => `${k.keyId}: ${k.days[i].requests} / ${k.days[i].tokens}`).filter((s) => !s.endsWith(': 0 / 0'));
    for (const text of [day.day, day.requests, day.tokens, byKey.join(', ') || '—']) row.insertCell().textContent = String(text);
  });
  return table;
}
