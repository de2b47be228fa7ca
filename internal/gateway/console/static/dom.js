// DOM helpers. Text always goes into text nodes; nothing here sets HTML.

// h builds an element: h('div', {class: 'x', onclick: fn, 'aria-label': 'y'}, child, 'text', [more]).
// Attributes that are null, undefined or false are left out; true sets an empty attribute.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';

// s builds an SVG element.
export function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled') el[k] = !!v;
    else if (k === 'style' || k === 'innerHTML' || k === 'outerHTML' || k === 'srcdoc') throw new Error('dom: ' + k + ' is not set here');
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

export function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

// clear removes every child of el and appends kids.
export function fill(el, ...kids) {
  el.replaceChildren();
  return append(el, kids);
}

// Icons: 24×24 stroked paths.
const ICONS = {
  send: 'M4 12l16-8-6 16-2.5-6.5L4 12z',
  stop: 'M7 7h10v10H7z',
  menu: 'M4 7h16M4 12h16M4 17h16',
  close: 'M6 6l12 12M18 6L6 18',
  plus: 'M12 5v14M5 12h14',
  chat: 'M5 5h14v10H9l-4 4z',
  list: 'M8 6h12M8 12h12M8 18h12M4 6h.01M4 12h.01M4 18h.01',
  bot: 'M6 9h12v9H6zM12 5v4M9 13h.01M15 13h.01',
  plug: 'M9 3v5M15 3v5M6 8h12v3a6 6 0 01-12 0zM12 17v4',
  chart: 'M4 20V10M10 20V4M16 20v-7M22 20H2',
  tool: 'M14 6a4 4 0 00-5 5l-6 6 3 3 6-6a4 4 0 005-5l-3 3-3-3z',
  check: 'M5 12l5 5L20 7',
  x: 'M6 6l12 12M18 6L6 18',
  shield: 'M12 3l8 3v6c0 5-4 8-8 9-4-1-8-4-8-9V6z',
  search: 'M11 18a7 7 0 110-14 7 7 0 010 14zM21 21l-5-5',
  logout: 'M15 4h4v16h-4M10 8l-4 4 4 4M6 12h10',
  reset: 'M4 4v6h6M5 14a8 8 0 101-7l-2 3',
  log: 'M6 3h9l4 4v14H6zM9 11h7M9 15h7M9 7h3',
  chevron: 'M9 6l6 6-6 6',
  copy: 'M8 8h12v12H8zM4 16V4h12',
  bolt: 'M13 3L5 14h6l-1 7 8-11h-6z',
  clock: 'M12 21a9 9 0 110-18 9 9 0 010 18zM12 7v5l3 3',
  key: 'M8 15a4 4 0 110-8 4 4 0 010 8zM11 11h10M17 11v4M20 11v3',
  eye: 'M2 12s4-7 10-7 10 7 10 7-4 7-10 7S2 12 2 12zM12 15a3 3 0 110-6 3 3 0 010 6z',
  back: 'M15 6l-6 6 6 6',
  edit: 'M4 20h4L19 9l-4-4L4 16zM13 7l4 4',
  archive: 'M4 5h16v4H4zM6 9v10h12V9M10 13h4',
  retry: 'M20 11a8 8 0 10-2 6M20 5v6h-6',
  info: 'M12 21a9 9 0 110-18 9 9 0 010 18zM12 11v5M12 8h.01',
  warn: 'M12 4l9 16H3zM12 10v4M12 17h.01',
  home: 'M4 11l8-7 8 7v9h-5v-6H9v6H4z',
  blocks: 'M4 4h7v7H4zM13 4h7v7h-7zM4 13h7v7H4zM13 13h7v7h-7z',
  file: 'M6 3h9l4 4v14H6zM15 3v4h4',
  download: 'M12 4v11M7 10l5 5 5-5M5 20h14',
  trash: 'M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13',
  history: 'M3 12a9 9 0 109-9 9 9 0 00-7 3.3M3 4v4h4M12 8v4l3 2',
};

export function icon(name, cls) {
  return s('svg', { class: ['icon', cls], viewBox: '0 0 24 24', 'aria-hidden': 'true', focusable: 'false' },
    s('path', { d: ICONS[name] || ICONS.x }));
}
