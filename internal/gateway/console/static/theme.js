// Themes: rows of type theme set the console's colours and fonts as CSS
// custom properties on the document, the light set or the dark set by the
// system's preference. A property is set through the CSSOM
// (style.setProperty), one validated name and value at a time: nothing
// from a theme is ever written as style text, and a value that could load
// something (url(), image()) or close a declaration is refused.
//
// A theme's spec (internal/webext/theme.schema.json): {title, light:
// {"--bg": "#fff", …}, dark: {…}}; light holds the properties of both
// schemes, dark those the dark scheme changes.

import { h } from './dom.js';
import { get, query } from './api.js';
import { prefs, setPref } from './util.js';

const NAME = /^--[a-z][a-z0-9-]{0,63}$/;
const VALUE = /^[A-Za-z0-9 #%.,()/'"+_-]{1,300}$/;
const FUNCS = new Set(['rgb', 'rgba', 'hsl', 'hsla', 'hwb', 'lab', 'lch', 'oklab', 'oklch', 'color', 'color-mix', 'light-dark', 'calc', 'min', 'max', 'clamp', 'var']);

// varName is the custom property a theme's key names, or null.
export function varName(k) {
  const n = String(k).startsWith('--') ? String(k) : '--' + k;
  return NAME.test(n) ? n : null;
}

// validValue reports whether v may be a custom property's value: colours,
// lengths, font lists and the colour functions, nothing that loads or
// escapes.
export function validValue(v) {
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v !== 'string' || !VALUE.test(v)) return false;
  let depth = 0;
  for (const c of v) {
    if (c === '(') depth++;
    if (c === ')' && --depth < 0) return false;
  }
  if (depth !== 0) return false;
  if ((v.match(/"/g) || []).length % 2 || (v.match(/'/g) || []).length % 2) return false;
  for (const m of v.matchAll(/([A-Za-z-]*)\(/g)) if (!FUNCS.has(m[1].toLowerCase())) return false;
  return true;
}

// themeVars lists a theme's properties for a scheme ("light" or "dark") as
// [name, value], and what it refused as ["key: why"].
export function themeVars(spec, scheme) {
  const by = new Map();
  const refused = [];
  if (!spec || typeof spec !== 'object') return { vars: [], refused };
  for (const part of scheme === 'dark' ? ['light', 'dark'] : ['light']) {
    const src = spec[part];
    if (!src || typeof src !== 'object' || Array.isArray(src)) continue;
    for (const [k, v] of Object.entries(src)) {
      const n = varName(k);
      if (!n) refused.push(k + ': not a custom property name');
      else if (!validValue(v)) refused.push(k + ': not a value a theme may set');
      else by.set(n, String(v));
    }
  }
  return { vars: [...by.entries()], refused };
}

// Themer applies a theme to a document and follows the system's light or
// dark preference.
export class Themer {
  constructor(doc = document) {
    this.doc = doc;
    this.spec = null;
    this.set = new Set();
    this.media = window.matchMedia('(prefers-color-scheme: dark)');
    this.media.addEventListener('change', () => this.apply(this.spec));
  }

  scheme() { return this.media.matches ? 'dark' : 'light'; }

  // apply sets spec's properties (null: the console's own colours).
  apply(spec) {
    this.spec = spec;
    const style = this.doc.documentElement.style;
    for (const n of this.set) style.removeProperty(n);
    this.set.clear();
    if (!spec) return;
    for (const [n, v] of themeVars(spec, this.scheme()).vars) {
      style.setProperty(n, v);
      this.set.add(n);
    }
  }

  // load reads the themes and applies the one remembered.
  async load() {
    const name = prefs().theme;
    if (!name) { this.apply(null); return []; }
    const rows = await themes();
    const row = rows.find((r) => r.name === name);
    this.apply(row ? row.spec : null);
    return rows;
  }

  // choose applies a theme by name ("" for none) and remembers it.
  choose(name, rows) {
    setPref('theme', name || '');
    const row = (rows || []).find((r) => r.name === name);
    this.apply(row ? row.spec : null);
  }
}

// themes lists the enabled theme rows.
export async function themes() {
  try {
    const r = await get('/v1/extensions' + query({ type: 'theme' }));
    return ((r && r.extensions) || []).filter((x) => x.enabled);
  } catch {
    return [];
  }
}

// themePicker is a select of the themes, applied as it changes.
export function themePicker(themer, rows) {
  const cur = prefs().theme || '';
  const sel = h('select', { id: 'theme-pick', 'aria-label': 'Theme' },
    h('option', { value: '' }, 'Console default'),
    rows.map((r) => h('option', { value: r.name, selected: r.name === cur }, (r.spec && r.spec.title) || r.name)));
  sel.addEventListener('change', () => themer.choose(sel.value, rows));
  return sel;
}
