// Renderers: data shown by a renderer spec (a row of type renderer) as a
// table, code, a diff, a chart, an image, JSON, markdown or key-value
// pairs. Declarative and never script: view() builds a tree of plain
// objects from a fixed set of tags and attributes whose text only ever
// goes into text nodes, and toDOM() builds it with the DOM; nothing here
// sets HTML or a style.
//
// A renderer's spec (internal/webext/renderer.schema.json): {title,
// match: {content_type, tool, artifact_kind}, view, priority, options:
// {columns: [{field, title, format}], language, chart, x, y: [fields],
// path}}. view is one of KINDS; options.path is a JSON pointer to the
// part of the data shown.
//
// A node is a string (text) or {t: tag, a: {attributes}, c: [children]};
// {t: 'md', text} is markdown, built by md.js.

import { h, s } from './dom.js';
import { render as renderMarkdown } from './md.js';
import { get, query } from './api.js';

export const KINDS = ['table', 'code', 'diff', 'chart', 'image', 'json', 'markdown', 'kv'];

const HTML_TAGS = new Set(['div', 'span', 'pre', 'code', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'dl', 'dt', 'dd', 'img', 'p']);
const SVG_TAGS = new Set(['svg', 'g', 'rect', 'line', 'polyline', 'circle', 'text', 'title']);
const ATTRS = new Set(['class', 'src', 'alt', 'viewBox', 'width', 'height', 'x', 'y', 'x1', 'x2', 'y1', 'y2', 'cx', 'cy', 'r', 'rx',
  'points', 'text-anchor', 'role', 'aria-label', 'preserveAspectRatio']);

export const MAX_ROWS = 500;    // rows of a table, entries of a list; the rest is counted
const MAX_TEXT = 200000;        // characters of code, JSON or a diff
const MAX_DIFF_LINES = 2000;    // lines of each side a diff compares line by line
const MAX_SERIES = 8;           // fields a chart plots

// kindOf is the view a spec names, or 'json' when it names none we know.
export function kindOf(spec) {
  const k = spec && spec.view;
  return KINDS.includes(k) ? k : 'json';
}

// pick follows a JSON pointer into data ("/rows", "/result/items/0").
export function pick(data, pointer) {
  if (!pointer) return data;
  let v = data;
  for (const raw of String(pointer).split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, part)) return undefined;
    v = v[part];
  }
  return v;
}

// parseMaybeJSON turns a string holding JSON into its value; other values as they are.
export function parseMaybeJSON(v) {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!/^[[{"]/.test(t)) return v;
  try { return JSON.parse(t); } catch { return v; }
}

// view builds the tree that shows data by spec.
export function view(spec, data) {
  spec = spec && typeof spec === 'object' ? spec : {};
  const o = spec.options && typeof spec.options === 'object' ? spec.options : {};
  const kind = kindOf(spec);
  const raw = kind === 'markdown' || kind === 'code' || kind === 'diff' || kind === 'image';
  const v = pick(raw ? data : parseMaybeJSON(data), o.path);
  if ((Array.isArray(v) && v.length === 0) || v === undefined || v === null) return { t: 'p', a: { class: 'muted small r-empty' }, c: ['Nothing to show.'] };
  switch (kind) {
    case 'table': return tableView(v, o);
    case 'code': return codeView(v, o.language);
    case 'diff': return diffView(v);
    case 'chart': return chartView(v, o, spec.title);
    case 'image': return imageView(v, spec.title);
    case 'markdown': return { t: 'md', text: typeof v === 'string' ? v : JSON.stringify(v, null, 2) ?? '' };
    case 'kv': return kvView(v, o);
    default: return jsonView(v);
  }
}

function cut(s) {
  s = String(s ?? '');
  return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '\n… (' + (s.length - MAX_TEXT) + ' more characters)' : s;
}

// text is how a cell shows a value, in a column's format (text, number,
// money, time, bytes).
export function text(v, format) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  const n = Number(v);
  switch (format) {
    case 'number': return Number.isFinite(n) ? n.toLocaleString('en-US') : String(v);
    case 'money': return Number.isFinite(n) ? '$' + n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 4 : 2) : String(v);
    case 'bytes': {
      if (!Number.isFinite(n)) return String(v);
      const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let x = n;
      let i = 0;
      while (Math.abs(x) >= 1024 && i < units.length - 1) { x /= 1024; i++; }
      return (i ? x.toFixed(1) : String(x)) + ' ' + units[i];
    }
    case 'time': {
      const d = new Date(typeof v === 'number' ? v : String(v));
      return Number.isNaN(d.getTime()) ? String(v) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC');
    }
    default: return String(v);
  }
}

function jsonView(v) {
  const src = typeof v === 'string' ? v : JSON.stringify(v, null, 2) ?? '';
  return { t: 'pre', a: { class: 'code r-json' }, c: [cut(src)] };
}

// language is a code block's language as a class name may hold it.
export function language(l) { return String(l || '').toLowerCase().replace(/[^a-z0-9+#.-]/g, '').slice(0, 32); }

function codeView(v, lang) {
  const l = language(lang);
  return { t: 'pre', a: { class: 'code r-code' }, c: [{ t: 'code', a: { class: l ? 'lang-' + l : null }, c: [cut(typeof v === 'string' ? v : JSON.stringify(v, null, 2))] }] };
}

// columnsOf names a table's columns: the options', else the keys of the
// rows in the order they first appear. Each is {field, title, format}.
export function columnsOf(rows, o = {}) {
  if (Array.isArray(o.columns) && o.columns.length) {
    return o.columns.filter((c) => c && typeof c === 'object').map((c) => ({ field: String(c.field ?? ''), title: String(c.title || c.field || ''), format: c.format }));
  }
  const seen = new Map();
  for (const r of rows.slice(0, MAX_ROWS)) {
    if (r && typeof r === 'object' && !Array.isArray(r)) for (const k of Object.keys(r)) if (!seen.has(k)) seen.set(k, { field: k, title: k });
  }
  return [...seen.values()];
}

// parseCSV reads CSV (RFC 4180: quoted fields, "" inside quotes, CRLF or
// LF) into rows of fields.
export function parseCSV(src) {
  src = String(src ?? '').slice(0, MAX_TEXT * 5);
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (quoted) {
      if (c === '"' && src[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\n' || c === '\r') {
      if (c === '\r' && src[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}

function more(n, total) {
  return total > n ? { t: 'p', a: { class: 'muted small r-more' }, c: [(total - n) + ' more not shown'] } : null;
}

function tableView(v, o) {
  if (typeof v === 'string') {
    // Text that is not JSON: CSV, its first row the header.
    const rows = parseCSV(v);
    const head = rows.shift() || [];
    return tableView(rows.map((r) => Object.fromEntries(head.map((k, i) => [k, r[i] ?? '']))), o.columns ? o : { columns: head.map((k) => ({ field: k })) });
  }
  if (v && typeof v === 'object' && !Array.isArray(v)) return Array.isArray(v.rows) ? tableView(v.rows, o) : kvView(v, o);
  if (!Array.isArray(v)) return jsonView(v);
  const rows = v.slice(0, MAX_ROWS);
  let head;
  let body;
  if (rows.length && rows.every(Array.isArray)) {
    head = Array.isArray(o.columns) ? columnsOf(rows, o).map((c) => c.title) : null;
    body = rows.map((r) => r.map((x) => text(x)));
  } else {
    const cols = columnsOf(rows, o);
    if (!cols.length) return { t: 'table', a: { class: 'r-table' }, c: [{ t: 'tbody', c: rows.map((r) => ({ t: 'tr', c: [{ t: 'td', c: [text(r)] }] })) }] };
    head = cols.map((c) => c.title);
    body = rows.map((r) => cols.map((c) => text(r && typeof r === 'object' ? fieldOf(r, c.field) : undefined, c.format)));
  }
  const table = { t: 'table', a: { class: 'r-table' }, c: [] };
  if (head) table.c.push({ t: 'thead', c: [{ t: 'tr', c: head.map((x) => ({ t: 'th', c: [x] })) }] });
  table.c.push({ t: 'tbody', c: body.map((r) => ({ t: 'tr', c: r.map((x) => ({ t: 'td', c: [x] })) })) });
  return { t: 'div', a: { class: 'r-scroll' }, c: [table, more(rows.length, v.length)].filter(Boolean) };
}

// fieldOf reads a field of a row: its own key, or a dotted path into it.
function fieldOf(r, field) {
  if (r && typeof r === 'object' && Object.hasOwn(r, field)) return r[field];
  let v = r;
  for (const part of String(field).split('.')) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, part)) return undefined;
    v = v[part];
  }
  return v;
}

function kvView(v, o) {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return jsonView(v);
  const cols = Array.isArray(o.columns) && o.columns.length ? columnsOf([], o) : Object.keys(v).map((k) => ({ field: k, title: k }));
  return { t: 'dl', a: { class: 'kv r-kv' }, c: cols.slice(0, MAX_ROWS).flatMap((c) => [{ t: 'dt', c: [c.title] }, { t: 'dd', c: [text(fieldOf(v, c.field), c.format)] }]) };
}

// diffLines classifies the lines of a diff. A string is a unified diff;
// {before, after} (or {old, new}) is compared line by line.
export function diffLines(v) {
  if (typeof v === 'string') {
    return v.split('\n').slice(0, MAX_ROWS * 4).map((l) => {
      let cls = 'ctx';
      if (l.startsWith('+++') || l.startsWith('---') || l.startsWith('diff ') || l.startsWith('index ')) cls = 'file';
      else if (l.startsWith('@@')) cls = 'hunk';
      else if (l.startsWith('+')) cls = 'add';
      else if (l.startsWith('-')) cls = 'del';
      return [cls, l];
    });
  }
  if (v && typeof v === 'object') {
    const a = String(v.before ?? v.old ?? '').split('\n').slice(0, MAX_DIFF_LINES);
    const b = String(v.after ?? v.new ?? '').split('\n').slice(0, MAX_DIFF_LINES);
    return lineDiff(a, b);
  }
  return [['ctx', text(v)]];
}

// lineDiff compares two lists of lines (longest common subsequence).
export function lineDiff(a, b) {
  const n = a.length;
  const m = b.length;
  const w = m + 1;
  const L = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) L[i * w + j] = a[i] === b[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push(['ctx', ' ' + a[i]]); i++; j++; }
    else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) out.push(['del', '-' + a[i++]]);
    else out.push(['add', '+' + b[j++]]);
  }
  while (i < n) out.push(['del', '-' + a[i++]]);
  while (j < m) out.push(['add', '+' + b[j++]]);
  return out;
}

function diffView(v) {
  return { t: 'pre', a: { class: 'code r-diff' }, c: diffLines(v).map(([cls, l]) => ({ t: 'span', a: { class: 'd-' + cls }, c: [l + '\n'] })) };
}

// safeImage returns src when an image may be shown from it: a data: URL of
// an image, or a path of agentd's API (this origin); else null.
export function safeImage(src) {
  if (typeof src !== 'string') return null;
  if (/^data:image\/(png|jpeg|gif|webp|svg\+xml|avif);base64,[A-Za-z0-9+/=\s]+$/.test(src)) return src;
  if (/^\/v1\/[A-Za-z0-9._~%!$&'()*+,;=:@/?-]*$/.test(src) && !/\/\.{1,2}(\/|\?|$)/.test(src) && !src.startsWith('//')) return src;
  return null;
}

function imageView(v, title) {
  const src = typeof v === 'string' ? v.trim() : v && (v.src || v.url || v.content);
  const ok = safeImage(src);
  if (!ok) return { t: 'p', a: { class: 'muted small' }, c: ['No image to show (only data: URLs of images and agentd\u2019s own paths are shown).'] };
  return { t: 'img', a: { class: 'r-image', src: ok, alt: String((v && typeof v === 'object' && (v.alt || v.title)) || title || 'image') } };
}

// series reads a chart's data: rows of objects by the options' x and y
// fields (y: one field or several), [[x, y]], {labels, values}, or an
// object of numbers. It returns {labels, names, values: [[per label]…]}.
export function series(v, o = {}) {
  const ys = (Array.isArray(o.y) ? o.y : o.y ? [o.y] : []).slice(0, MAX_SERIES).map(String);
  let labels = [];
  let names = ys.length ? ys : ['value'];
  let values = names.map(() => []);
  if (Array.isArray(v)) {
    const rows = v.slice(0, MAX_ROWS);
    if (!ys.length && rows.every(Array.isArray)) {
      labels = rows.map((r) => text(r[0]));
      values = [rows.map((r) => +r[1])];
    } else if (!ys.length && rows.every((r) => typeof r === 'number')) {
      labels = rows.map((_, i) => String(i + 1));
      values = [rows];
    } else {
      const objs = rows.filter((r) => r && typeof r === 'object' && !Array.isArray(r));
      if (!ys.length) {
        const first = objs[0] || {};
        names = Object.keys(first).filter((k) => k !== o.x && typeof first[k] === 'number').slice(0, MAX_SERIES);
      }
      labels = objs.map((r, i) => text(o.x ? fieldOf(r, o.x) : r.label ?? r.key ?? r.name ?? i + 1));
      values = names.map((n) => objs.map((r) => +fieldOf(r, n)));
    }
  } else if (v && typeof v === 'object') {
    if (Array.isArray(v.labels) && Array.isArray(v.values)) {
      labels = v.labels.slice(0, MAX_ROWS).map((l) => text(l));
      values = [labels.map((_, i) => +v.values[i])];
    } else {
      const e = Object.entries(v).filter(([, n]) => typeof n === 'number').slice(0, MAX_ROWS);
      labels = e.map(([k]) => k);
      values = [e.map(([, n]) => n)];
    }
  }
  values = values.map((vs) => vs.map((n) => (Number.isFinite(n) ? n : 0)));
  return { labels, names, values };
}

function chartView(v, o, title) {
  const { labels, names, values } = series(v, o);
  if (!labels.length || !values.length) return { t: 'p', a: { class: 'muted small' }, c: ['No numbers to chart.'] };
  const W = 480;
  const H = 200;
  const padL = 44;
  const padB = 26;
  const padT = 10;
  const innerW = W - padL - 8;
  const innerH = H - padT - padB;
  const all = values.flat();
  const max = Math.max(0, ...all);
  const min = Math.min(0, ...all);
  const span = max - min || 1;
  const y = (n) => round(padT + innerH - ((n - min) / span) * innerH);
  const band = innerW / labels.length;
  const name = title || names.join(', ');
  const kids = [{ t: 'title', c: [name] },
    { t: 'line', a: { class: 'axis', x1: padL, x2: W - 8, y1: y(0), y2: y(0) } },
    { t: 'text', a: { class: 'tick', x: padL - 6, y: y(max) + 4, 'text-anchor': 'end' }, c: [fmt(max)] },
    { t: 'text', a: { class: 'tick', x: padL - 6, y: y(min) + 4, 'text-anchor': 'end' }, c: [fmt(min)] }];
  const line = o.chart === 'line';
  const bw = Math.min((band * 0.7) / values.length, 48);
  const inset = (band - bw * values.length) / 2;
  values.forEach((vs, si) => {
    if (line) kids.push({ t: 'polyline', a: { class: 'r-line r-s' + si, points: vs.map((n, i) => round(padL + band * i + band / 2) + ',' + y(n)).join(' ') } });
    vs.forEach((n, i) => {
      const x = padL + band * i;
      const label = labels[i] + (values.length > 1 ? ' · ' + names[si] : '') + ': ' + n;
      kids.push({ t: 'g', a: { class: 'r-bar', role: 'img', 'aria-label': label }, c: [{ t: 'title', c: [label] },
        line ? { t: 'circle', a: { class: 'r-dot r-s' + si, cx: round(x + band / 2), cy: y(n), r: 3 } }
          : { t: 'rect', a: { class: 'r-rect r-s' + si, x: round(x + inset + bw * si), y: Math.min(y(n), y(0)), width: round(bw), height: round(Math.abs(y(0) - y(n))) } }] });
    });
  });
  labels.forEach((l, i) => {
    if (labels.length <= 12 || i % Math.ceil(labels.length / 12) === 0) {
      kids.push({ t: 'text', a: { class: 'tick', x: round(padL + band * i + band / 2), y: H - 8, 'text-anchor': 'middle' }, c: [l.slice(0, 12)] });
    }
  });
  return { t: 'svg', a: { class: 'chart r-chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': name, preserveAspectRatio: 'xMidYMid meet' }, c: kids };
}

function round(n) { return Math.round(n * 10) / 10; }
// fmt writes an axis's number short, with the digits that tell small ones apart.
export function fmt(n) {
  const a = Math.abs(n);
  if (a >= 1e6) return +(n / 1e6).toPrecision(3) + 'M';
  if (a >= 1e4) return +(n / 1e3).toPrecision(3) + 'k';
  if (a >= 10 || n === 0) return String(Math.round(n));
  return String(+n.toPrecision(2));
}

// toDOM builds a tree from view(). Tags and attributes outside the lists
// are dropped (their text kept); an image's source is checked again.
export function toDOM(n) {
  if (typeof n === 'string' || typeof n === 'number') return document.createTextNode(String(n));
  if (!n || typeof n !== 'object') return document.createTextNode('');
  if (n.t === 'md') {
    const box = h('div', { class: 'md' });
    box.append(renderMarkdown(n.text || ''));
    return box;
  }
  const svg = SVG_TAGS.has(n.t);
  if (!svg && !HTML_TAGS.has(n.t)) return document.createTextNode((n.c || []).map((c) => (typeof c === 'string' ? c : '')).join(''));
  const attrs = {};
  for (const [k, v] of Object.entries(n.a || {})) {
    if (!ATTRS.has(k) || v === null || v === undefined) continue;
    if (k === 'src' && (n.t !== 'img' || !safeImage(v))) continue;
    attrs[k] = String(v);
  }
  return (svg ? s : h)(n.t, attrs, (n.c || []).map(toDOM));
}

// show renders data by spec, as DOM.
export function show(spec, data) { return toDOM(view(spec, data)); }

// globMatch matches a name against a glob as Go's path.Match does for
// names without slashes: * is any run of characters, ? one.
export function globMatch(pattern, name) {
  const re = new RegExp('^' + String(pattern).replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$', 's');
  return re.test(String(name));
}

// typeMatch matches a media type against a pattern (image/* matches every image).
function typeMatch(pattern, t) {
  const p = String(pattern).toLowerCase();
  const v = String(t || '').toLowerCase().split(';')[0].trim();
  return p.endsWith('/*') ? v.startsWith(p.slice(0, -1)) : p === v;
}

// matches reports whether a renderer's match fits what is shown: every
// field it gives must match, and it must give at least one that is asked
// about ({tool, content_type, artifact_kind}).
export function matches(m, what) {
  if (!m || typeof m !== 'object') return false;
  let any = false;
  for (const [k, want] of Object.entries(m)) {
    const got = what[k];
    if (got === undefined || got === '') return false;
    const ok = k === 'tool' ? globMatch(want, got) : k === 'content_type' ? typeMatch(want, got) : want === got;
    if (!ok) return false;
    any = true;
  }
  return any;
}

// choose finds the renderer among enabled renderer rows ({name, spec,
// enabled}) that shows what: the one of highest priority that matches,
// ties by name; null when none does.
export function choose(rows, what) {
  let best = null;
  for (const r of rows || []) {
    if (r.enabled === false || !r.spec || !matches(r.spec.match, what)) continue;
    const p = +r.spec.priority || 0;
    if (!best || p > best.p || (p === best.p && r.name < best.name)) best = { p, name: r.name, spec: r.spec };
  }
  return best && best.spec;
}

// forTool is the renderer of a tool's results: one whose match names the
// tool.
export function forTool(rows, tool) {
  return choose((rows || []).filter((r) => r.spec && r.spec.match && r.spec.match.tool), { tool });
}

// forWidget is how a widget ({renderer, content_type}) is shown: the
// renderer row it names, else one matching its content type, else JSON.
export function forWidget(rows, w) {
  if (w.renderer) {
    const r = (rows || []).find((x) => x.name === w.renderer && x.enabled !== false);
    if (r && r.spec) return r.spec;
  }
  return choose(rows, { content_type: w.content_type }) || { view: 'json' };
}

// loadRenderers lists the enabled renderer rows ([] when agentd has none
// or does not answer: data is then shown as JSON).
export async function loadRenderers() {
  try {
    const r = await get('/v1/extensions' + query({ type: 'renderer' }));
    return ((r && r.extensions) || []).filter((x) => x.enabled);
  } catch {
    return [];
  }
}
