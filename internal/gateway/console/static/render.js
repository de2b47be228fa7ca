// Renderers: data shown by a renderer spec (a row of type renderer, or a
// kind named by a widget) as a table, code, a diff, a chart, an image,
// JSON, markdown or key-value pairs. Declarative and never script: view()
// builds a tree of plain objects from a fixed set of tags and attributes
// whose text only ever goes into text nodes, and toDOM() builds it with
// the DOM; nothing here sets HTML or a style.
//
// A renderer spec: {kind, tools?, path?, columns?, language?, chart?, x?,
// y?, max_rows?}. kind is one of KINDS; path picks a part of the data
// ("items", "result.rows.0"); columns name a table's or key-value list's
// fields (strings or {key, label}); language names a code block's
// language; chart is "bar" or "line" over the fields x and y.
//
// A node is a string (text) or {t: tag, a: {attributes}, c: [children]};
// {t: 'md', text} is markdown, built by md.js.

import { h, s } from './dom.js';
import { render as renderMarkdown } from './md.js';
import { get, query } from './api.js';

export const KINDS = ['table', 'code', 'diff', 'chart', 'image', 'json', 'markdown', 'kv'];

const HTML_TAGS = new Set(['div', 'span', 'pre', 'code', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'dl', 'dt', 'dd', 'img', 'p', 'figure', 'figcaption']);
const SVG_TAGS = new Set(['svg', 'g', 'rect', 'line', 'polyline', 'circle', 'text', 'title']);
const ATTRS = new Set(['class', 'src', 'alt', 'viewBox', 'width', 'height', 'x', 'y', 'x1', 'x2', 'y1', 'y2', 'cx', 'cy', 'r', 'rx',
  'points', 'text-anchor', 'role', 'aria-label', 'title', 'preserveAspectRatio']);

export const MAX_ROWS = 500;    // rows of a table, entries of a list; the rest is counted
const MAX_TEXT = 200000;        // characters of code, JSON or a diff
const MAX_DIFF_LINES = 2000;    // lines of each side a diff compares line by line

// kindOf is the kind a spec names, or 'json' when it names none we know.
export function kindOf(spec) {
  const k = spec && (spec.kind || spec.type || spec.view);
  return KINDS.includes(k) ? k : 'json';
}

// pick follows a dotted path into data ("rows", "result.items.0").
export function pick(data, p) {
  if (!p) return data;
  let v = data;
  for (const part of String(p).split('.')) {
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
  const kind = kindOf(spec);
  const v = pick(kind === 'markdown' || kind === 'code' || kind === 'diff' ? data : parseMaybeJSON(data), spec.path);
  switch (kind) {
    case 'table': return tableView(v, spec);
    case 'code': return codeView(v, spec.language);
    case 'diff': return diffView(v);
    case 'chart': return chartView(v, spec);
    case 'image': return imageView(v, spec);
    case 'markdown': return { t: 'md', text: typeof v === 'string' ? v : JSON.stringify(v, null, 2) ?? '' };
    case 'kv': return kvView(v, spec);
    default: return jsonView(v);
  }
}

function cut(s) {
  s = String(s ?? '');
  return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '\n… (' + (s.length - MAX_TEXT) + ' more characters)' : s;
}

// text is how a cell shows a value.
export function text(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
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

// columnsOf names a table's columns: the spec's, else the keys of the rows
// in the order they first appear.
export function columnsOf(rows, spec) {
  if (Array.isArray(spec.columns) && spec.columns.length) {
    return spec.columns.map((c) => typeof c === 'string' ? { key: c, label: c } : { key: String(c.key ?? c.field ?? ''), label: String(c.label ?? c.key ?? c.field ?? '') });
  }
  const seen = new Map();
  for (const r of rows.slice(0, MAX_ROWS)) {
    if (r && typeof r === 'object' && !Array.isArray(r)) for (const k of Object.keys(r)) if (!seen.has(k)) seen.set(k, { key: k, label: k });
  }
  return [...seen.values()];
}

function more(n, total) {
  return total > n ? { t: 'p', a: { class: 'muted small r-more' }, c: [(total - n) + ' more not shown'] } : null;
}

function tableView(v, spec) {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    // {columns: [...], rows: [[...]]} or an object of rows.
    if (Array.isArray(v.rows)) return tableView(v.rows, Array.isArray(v.columns) && !spec.columns ? { ...spec, columns: v.columns } : spec);
    return kvView(v, spec);
  }
  if (!Array.isArray(v)) return jsonView(v);
  const limit = Math.min(MAX_ROWS, +spec.max_rows > 0 ? +spec.max_rows : MAX_ROWS);
  const rows = v.slice(0, limit);
  let head;
  let body;
  if (rows.length && rows.every(Array.isArray)) {
    const cols = Array.isArray(spec.columns) ? spec.columns.map((c) => typeof c === 'string' ? c : String(c.label ?? c.key ?? '')) : null;
    head = cols;
    body = rows.map((r) => r.map(text));
  } else {
    const cols = columnsOf(rows, spec);
    if (!cols.length) return { t: 'table', a: { class: 'r-table' }, c: [{ t: 'tbody', c: rows.map((r) => ({ t: 'tr', c: [{ t: 'td', c: [text(r)] }] })) }] };
    head = cols.map((c) => c.label);
    body = rows.map((r) => cols.map((c) => text(r && typeof r === 'object' ? r[c.key] : undefined)));
  }
  const table = { t: 'table', a: { class: 'r-table' }, c: [] };
  if (head) table.c.push({ t: 'thead', c: [{ t: 'tr', c: head.map((x) => ({ t: 'th', c: [x] })) }] });
  table.c.push({ t: 'tbody', c: body.map((r) => ({ t: 'tr', c: r.map((x) => ({ t: 'td', c: [x] })) })) });
  return { t: 'div', a: { class: 'r-scroll' }, c: [table, more(rows.length, v.length)].filter(Boolean) };
}

function kvView(v, spec) {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return jsonView(v);
  const keys = Array.isArray(spec.columns) && spec.columns.length ? columnsOf([], spec) : Object.keys(v).map((k) => ({ key: k, label: k }));
  const shown = keys.slice(0, MAX_ROWS);
  return { t: 'dl', a: { class: 'kv r-kv' }, c: shown.flatMap((k) => [{ t: 'dt', c: [k.label] }, { t: 'dd', c: [text(v[k.key])] }]) };
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

function imageView(v, spec) {
  const src = typeof v === 'string' ? v : v && (v.src || v.url || v.content);
  const ok = safeImage(src);
  if (!ok) return { t: 'p', a: { class: 'muted small' }, c: ['No image to show (only data: URLs of images and agentd\u2019s own paths are shown).'] };
  const alt = (v && typeof v === 'object' && (v.alt || v.title)) || spec.alt || 'image';
  return { t: 'img', a: { class: 'r-image', src: ok, alt: String(alt) } };
}

// points reads a chart's data: [{x, y}] by the spec's fields, [[x, y]],
// {labels, values}, or an object of numbers.
export function points(v, spec = {}) {
  const xk = spec.x || 'x';
  const yk = spec.y || 'y';
  let out = [];
  if (Array.isArray(v)) {
    out = v.map((r, i) => {
      if (Array.isArray(r)) return [text(r[0]), +r[1]];
      if (r && typeof r === 'object') return [text(r[xk] ?? r.label ?? r.name ?? i + 1), +(r[yk] ?? r.value)];
      return [String(i + 1), +r];
    });
  } else if (v && typeof v === 'object') {
    if (Array.isArray(v.labels) && Array.isArray(v.values)) out = v.labels.map((l, i) => [text(l), +v.values[i]]);
    else out = Object.entries(v).map(([k, n]) => [k, +n]);
  }
  return out.filter((p) => Number.isFinite(p[1])).slice(0, MAX_ROWS);
}

function chartView(v, spec) {
  const pts = points(v, spec);
  if (!pts.length) return { t: 'p', a: { class: 'muted small' }, c: ['No numbers to chart.'] };
  const W = 480;
  const H = 200;
  const padL = 44;
  const padB = 26;
  const padT = 10;
  const innerW = W - padL - 8;
  const innerH = H - padT - padB;
  const max = Math.max(0, ...pts.map((p) => p[1]));
  const min = Math.min(0, ...pts.map((p) => p[1]));
  const span = max - min || 1;
  const y = (n) => round(padT + innerH - ((n - min) / span) * innerH);
  const band = innerW / pts.length;
  const kids = [{ t: 'title', c: [spec.title || 'chart'] },
    { t: 'line', a: { class: 'axis', x1: padL, x2: W - 8, y1: y(0), y2: y(0) } },
    { t: 'text', a: { class: 'tick', x: padL - 6, y: y(max) + 4, 'text-anchor': 'end' }, c: [fmt(max)] },
    { t: 'text', a: { class: 'tick', x: padL - 6, y: y(min) + 4, 'text-anchor': 'end' }, c: [fmt(min)] }];
  const line = (spec.chart || spec.style) === 'line';
  if (line) {
    kids.push({ t: 'polyline', a: { class: 'r-line', points: pts.map((p, i) => round(padL + band * i + band / 2) + ',' + y(p[1])).join(' ') } });
  }
  pts.forEach(([label, n], i) => {
    const x = padL + band * i;
    const g = { t: 'g', a: { class: 'r-bar', role: 'img', 'aria-label': label + ': ' + n }, c: [{ t: 'title', c: [label + ': ' + n] }] };
    if (line) g.c.push({ t: 'circle', a: { class: 'r-dot', cx: round(x + band / 2), cy: y(n), r: 3 } });
    else g.c.push({ t: 'rect', a: { class: 'r-rect', x: round(x + band * 0.15), y: Math.min(y(n), y(0)), width: round(band * 0.7), height: Math.abs(y(0) - y(n)) } });
    kids.push(g);
    if (pts.length <= 12 || i % Math.ceil(pts.length / 12) === 0) {
      kids.push({ t: 'text', a: { class: 'tick', x: round(x + band / 2), y: H - 8, 'text-anchor': 'middle' }, c: [label.slice(0, 12)] });
    }
  });
  return { t: 'svg', a: { class: 'chart r-chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': spec.title || 'chart', preserveAspectRatio: 'xMidYMid meet' }, c: kids };
}

function round(n) { return Math.round(n * 10) / 10; }
function fmt(n) { return Math.abs(n) >= 1e4 ? (n / 1e3).toFixed(0) + 'k' : String(round(n)); }

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

// globMatch matches a tool's name against a pattern where * is any run of characters.
export function globMatch(pattern, name) {
  const re = new RegExp('^' + String(pattern).split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
  return re.test(String(name));
}

// forTool finds the renderer, among enabled renderer rows
// ({name, spec, enabled}), whose spec lists the tool: the first by name.
export function forTool(rows, tool) {
  for (const r of rows || []) {
    if (r.enabled === false || !r.spec) continue;
    const tools = r.spec.tools || (r.spec.match && r.spec.match.tools) || [];
    if (Array.isArray(tools) && tools.some((p) => globMatch(p, tool))) return r.spec;
  }
  return null;
}

// byName resolves what a widget names: a renderer row's spec, else a
// kind ({kind: name}), else JSON.
export function byName(rows, name) {
  const r = (rows || []).find((x) => x.name === name && x.enabled !== false);
  if (r && r.spec) return r.spec;
  return { kind: KINDS.includes(name) ? name : 'json' };
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
