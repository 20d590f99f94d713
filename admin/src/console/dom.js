// A tiny DOM builder: every string becomes a text node, so nothing from the API is ever
// parsed as HTML.

/** Creates `tag` with attributes (on* names become listeners) and children. */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, '');
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A labelled form field: the label names the input for screen readers. */
export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  const hintNode = hint ? h('small', { id: `${id}-hint` }, hint) : null;
  if (hintNode) input.setAttribute('aria-describedby', hintNode.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hintNode);
}

/** Shows `node` as the whole main area and moves focus to its heading. */
export function show(main, node) {
  main.replaceChildren(node);
  const heading = main.querySelector('h2');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
}

/** A date-time in UTC, said so (the charts and counters are UTC days too). */
export function when(iso, none = 'never') {
  return iso ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : none;
}

/**
 * Fits a table to any width. On a desk a wide one scrolls inside its card rather than widening
 * the page; on a phone (the stylesheet's 640 px query) each row becomes a card of its own, every
 * cell labelled with its column (`data-label`, kept for rows rendered later), so no action and
 * no number is off to the side.
 */
export function scroll(table) {
  const label = () => {
    const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
    for (const row of table.querySelectorAll('tbody tr'))
      [...row.children].forEach((cell, i) => {
        if (heads[i] && !cell.hasAttribute('colspan') && cell.getAttribute('data-label') !== heads[i])
          cell.setAttribute('data-label', heads[i]);
      });
  };
  label();
  new MutationObserver(label).observe(table, { childList: true, subtree: true });
  table.classList.add('stack');
  return h(
    'div',
    { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': table.querySelector('caption')?.textContent ?? 'Table' },
    table,
  );
}

/** A whole number with thousands separators. */
export function count(value) {
  return new Intl.NumberFormat('en').format(value);
}
