// The Extensions page: every row of the extension substrate by type, with
// who wrote it, whether it runs and whether it drifted from its seed; a
// row's spec in an editor checked against its type's schema as it is typed
// (and by agentd on save); its history and revert; a new row; a reseed.
// Controls show as switches, selects and fields that save as they change.
//
// Routes: #/extensions, #/extensions/new[/TYPE], #/extensions/TYPE/NAME.

import { h, icon, fill } from './dom.js';
import { get, post, put, del, path, APIError } from './api.js';
import { compile } from './schema.js';
import { fmtDateTime, relTime, pretty, badge, toast, empty, errorBox, spinner, routeHash } from './util.js';

// NAME is what a row's name may be (extension.ValidName): letters, digits,
// '-', '_' and inner dots, at most 64 characters.
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;
export function validName(n) { return typeof n === 'string' && n.length <= 64 && NAME.test(n); }

// problem reads one error of agentd's 400 ("/spec/url: must be a string")
// or of schema.js ({pointer, message}) as {pointer, message}.
export function problem(x) {
  if (x && typeof x === 'object') return { pointer: String(x.pointer ?? ''), message: String(x.message ?? '') };
  const s = String(x);
  const m = /^(\/[^:\s]*|\/):\s(.*)$/s.exec(s);
  return m ? { pointer: m[1] === '/' ? '' : m[1], message: m[2] } : { pointer: '', message: s };
}

// parseSpec reads the editor's text as a spec: a JSON object.
export function parseSpec(text) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { errors: [{ pointer: '/spec', message: 'not valid JSON: ' + String(e.message).replace(/^JSON\.parse: /, '') }] };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { errors: [{ pointer: '/spec', message: 'must be an object' }] };
  return { spec: v, errors: [] };
}

const compiled = new WeakMap(); // schema → its validator, or null when the browser cannot read it

// validator compiles a schema once; null when schema.js does not take it
// (agentd checks on save all the same).
function validator(schema) {
  if (!schema || typeof schema !== 'object') return null;
  if (!compiled.has(schema)) {
    let v = null;
    try { v = compile(schema); } catch { v = null; }
    compiled.set(schema, v);
  }
  return compiled.get(schema);
}

// fits reports whether v is valid by schema, as far as the browser can tell.
function fits(schema, v) {
  const c = validator(schema);
  return !!c && c.validate(v).length === 0;
}

// checkSpec checks the editor's text against a type's schema: every
// problem with its pointer into the document ("/spec/…").
export function checkSpec(schema, text) {
  const r = parseSpec(text);
  if (r.errors.length) return r;
  const c = validator(schema);
  return { spec: r.spec, errors: c ? c.validate(r.spec).map((e) => ({ pointer: '/spec' + e.pointer, message: e.message })) : [] };
}

// example is a smallest document a schema accepts, as far as it can tell:
// the required fields with their example, default, first allowed value or
// an empty value of their type.
export function example(sc, depth = 0) {
  if (!sc || typeof sc !== 'object' || depth > 8) return {};
  if (Array.isArray(sc.examples) && sc.examples.length) return sc.examples[0];
  if (sc.example !== undefined) return sc.example;
  if (sc.default !== undefined) return sc.default;
  if (sc.const !== undefined) return sc.const;
  if (Array.isArray(sc.enum) && sc.enum.length) return sc.enum[0];
  if (Array.isArray(sc.oneOf) && sc.oneOf.length) return example(sc.oneOf[0], depth + 1);
  if (Array.isArray(sc.anyOf) && sc.anyOf.length) return example(sc.anyOf[0], depth + 1);
  const t = Array.isArray(sc.type) ? sc.type[0] : sc.type;
  switch (t) {
    case 'string': return sc.minLength > 0 ? 'x'.repeat(sc.minLength) : '';
    case 'integer': case 'number': return sc.minimum ?? (sc.exclusiveMinimum !== undefined ? sc.exclusiveMinimum + 1 : 0);
    case 'boolean': return false;
    case 'array': return sc.minItems > 0 && sc.items ? Array.from({ length: sc.minItems }, () => example(sc.items, depth + 1)) : [];
    case 'null': return null;
    default: {
      const out = {};
      for (const k of sc.required || []) out[k] = example((sc.properties || {})[k], depth + 1);
      // Conditions the example meets add what they require (a bool
      // control's value is a boolean).
      for (const c of Array.isArray(sc.allOf) ? sc.allOf : [sc]) {
        if (!c || !c.if || !c.then || !fits(c.if, out)) continue;
        const props = c.then.properties || {};
        for (const k of Object.keys(out)) if (props[k] && !fits(props[k], out[k])) out[k] = example(props[k], depth + 1);
        for (const k of c.then.required || []) if (!Object.hasOwn(out, k)) out[k] = example({ ...(sc.properties || {})[k], ...props[k] }, depth + 1);
      }
      return out;
    }
  }
}

// groups orders rows by type, then name.
export function groups(rows) {
  const by = new Map();
  for (const r of rows) {
    if (!by.has(r.type)) by.set(r.type, []);
    by.get(r.type).push(r);
  }
  return [...by.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([type, list]) => ({ type, rows: list.sort((a, b) => a.name.localeCompare(b.name)) }));
}

// ---- the shared pieces -------------------------------------------------------

const schemaCache = new Map(); // type → schema (they change only with agentd)

async function schemaOf(type) {
  if (!schemaCache.has(type)) schemaCache.set(type, get(path('extensions', 'schemas', type)).catch((e) => { schemaCache.delete(type); throw e; }));
  return schemaCache.get(type);
}

async function typesOf() {
  const r = await get('/v1/extensions/schemas');
  return (r && r.types) || [];
}

function pageHead(title, sub, ...actions) {
  return h('div', { class: 'page-head' }, h('div', null, h('h1', null, title), sub ? h('p', { class: 'muted' }, sub) : null),
    actions.length ? h('div', { class: 'page-actions' }, actions) : null);
}

// problemsList shows problems with their pointers.
export function problemsList(list, title) {
  if (!list.length) return null;
  return h('div', { class: 'error-box ext-problems', role: 'alert' }, title ? h('p', null, title) : null,
    h('ul', null, list.map(problem).map((p) => h('li', null, h('code', { class: 'ptr' }, p.pointer || '/'), ' ', p.message))));
}

function provenance(p) {
  const cls = p === 'user' ? 'chip-ok' : String(p).startsWith('agent:') ? 'chip-warn' : null;
  return h('span', { class: ['chip', 'prov', cls] }, p || '?');
}

function state(r) {
  if (!r.enabled) return badge('disabled');
  if (r.error) return badge('error', r.error);
  if (r.active_version && r.active_version !== r.version) return badge('stale', 'version ' + r.active_version + ' is active');
  return badge('active');
}

function driftMark(r) {
  if (!r.drift) return null;
  return h('span', { class: 'chip chip-warn drift', title: driftWhy(r) }, 'drift');
}

function driftWhy(r) {
  const from = r.seed === 'builtin' ? 'the document built into agentd' : 'its file under extensions/' + r.type + '/';
  return 'This row differs from ' + from + ': a person or an agent changed it, or the document changed since the last reseed. ' +
    'A reseed keeps the row as it is; a forced reseed replaces it with the document.';
}

// ---- controls ------------------------------------------------------------------

// controlInput shows a control's value as something to flip: a switch
// (bool), a select (enum), a number or a text field. Changing it saves the
// row's spec with the new value; saved(row) gets the row agentd answered.
export function controlInput(row, saved) {
  const spec = row.spec || {};
  const id = 'ctl-' + row.name;
  const label = spec.label || spec.title || row.name;
  let input;
  const read = () => {
    switch (spec.kind) {
      case 'bool': return input.checked;
      case 'number': return input.value === '' ? null : Number(input.value);
      default: return input.value;
    }
  };
  switch (spec.kind) {
    case 'bool':
      input = h('input', { type: 'checkbox', id, class: 'switch', role: 'switch', checked: !!spec.value, 'aria-label': label });
      break;
    case 'enum':
      input = h('select', { id, 'aria-label': label }, (spec.options || []).map((o) => {
        const v = o && typeof o === 'object' ? o.value : o;
        return h('option', { value: String(v), selected: String(v) === String(spec.value) }, String(o && typeof o === 'object' ? o.label ?? v : o));
      }));
      break;
    case 'number':
      input = h('input', { type: 'number', id, value: spec.value ?? '', min: spec.min ?? null, max: spec.max ?? null, step: spec.step ?? 'any', 'aria-label': label });
      break;
    default:
      input = h('input', { type: 'text', id, value: spec.value ?? '', 'aria-label': label });
  }
  input.addEventListener('change', async () => {
    const value = read();
    if (spec.kind === 'number' && (value === null || Number.isNaN(value))) return;
    input.disabled = true;
    try {
      const next = { ...spec, value };
      const got = await put(path('extensions', 'control', row.name), { type: 'control', name: row.name, spec: next }, { headers: { 'If-Match': String(row.version) } });
      Object.assign(row, got || { spec: next, version: row.version + 1 });
      Object.assign(spec, row.spec);
      if (saved) saved(row);
    } catch (e) {
      if (spec.kind === 'bool') input.checked = !!spec.value; else input.value = spec.value ?? '';
      const why = e.errors && e.errors.length ? e.errors.map((x) => { const p = problem(x); return p.pointer + ': ' + p.message; }).join('; ') : e.message;
      toast((e.status === 409 ? 'Changed meanwhile; reload to see it: ' : 'Not saved: ') + why, 'error');
    } finally {
      input.disabled = false;
    }
  });
  return input;
}

// controlRow is a control with its label and description.
export function controlRow(row, saved) {
  const spec = row.spec || {};
  return h('div', { class: ['control', row.enabled ? null : 'off'], 'data-name': row.name },
    h('div', { class: 'control-text' },
      h('label', { for: 'ctl-' + row.name, class: 'control-name' }, spec.label || spec.title || row.name),
      spec.description ? h('div', { class: 'muted small' }, spec.description) : null),
    controlInput(row, saved));
}

// ---- the list ------------------------------------------------------------------

export function extensionsScreen(app, el, args) {
  if (args[0] === 'new') return newScreen(app, el, args[1]);
  if (args.length >= 2) return rowScreen(app, el, args[0], args[1]);
  return listScreen(app, el, args[0]);
}

function listScreen(app, el, only) {
  app.setTitle('Extensions');
  let alive = true;
  const typeSel = h('select', { id: 'ext-type', 'aria-label': 'Filter by type' }, h('option', { value: '' }, 'All types'));
  const box = h('div', { class: 'ext-groups' }, spinner());
  const report = h('div', { class: 'reseed-report' });
  const force = h('input', { type: 'checkbox', id: 'reseed-force' });
  const reseed = h('button', { class: 'btn btn-sm', type: 'button', title: 'Sync the built-in documents and the files under extensions/ into rows' }, icon('reset'), 'Reseed');
  const newLink = h('a', { class: 'btn btn-sm btn-primary', href: routeHash('extensions', 'new') }, icon('plus'), 'New extension');
  fill(el, h('div', { class: 'page page-wide' },
    pageHead('Extensions', 'Agents, actions, commands, jobs, controls, themes and more: documents agentd runs, changed without a restart.', newLink),
    h('div', { class: 'toolbar' }, typeSel,
      h('span', { class: 'reseed' }, reseed, h('label', { class: 'check small', for: 'reseed-force', title: 'Replace rows a person or an agent changed too' }, force, ' force'))),
    report, box));

  let rows = [];
  const summaries = new Map();
  const show = () => {
    const want = typeSel.value;
    const list = rows.filter((r) => !want || r.type === want);
    if (!list.length) { fill(box, empty('No extensions' + (want ? ' of type ' + want : ''), 'Make one with New extension, or with agentd ext put FILE.')); return; }
    fill(box, groups(list).map((g) => h('section', { class: 'ext-group', 'data-type': g.type, 'aria-labelledby': 'ext-g-' + g.type },
      h('h2', { id: 'ext-g-' + g.type }, g.type, summaries.get(g.type) ? h('span', { class: 'muted small' }, ' · ' + summaries.get(g.type)) : null),
      g.type === 'control' ? h('div', { class: 'controls' }, g.rows.map((r) => controlRow(r, () => load()))) : null,
      h('div', { class: 'table-scroll' }, h('table', { class: 'table ext-table' },
        h('thead', null, h('tr', null, ['Name', 'Provenance', 'Enabled', 'Version', 'State', 'Drift', 'Updated'].map((x) => h('th', null, x)))),
        h('tbody', null, g.rows.map((r) => h('tr', { 'data-name': r.name },
          h('td', null, h('a', { href: routeHash('extensions', r.type, r.name), class: 'mono' }, r.name)),
          h('td', null, provenance(r.provenance)),
          h('td', null, r.enabled ? 'yes' : 'no'),
          h('td', { class: 'num' }, String(r.version)),
          h('td', null, state(r)),
          h('td', null, driftMark(r)),
          h('td', { class: 'muted small', title: fmtDateTime(r.updated_at) }, relTime(r.updated_at), r.updated_by ? ' · ' + r.updated_by : '')))))))));
  };
  typeSel.addEventListener('change', show);
  const load = async () => {
    try {
      const r = await get('/v1/extensions');
      rows = (r && r.extensions) || [];
    } catch (e) {
      if (alive) fill(box, errorBox(e));
      return;
    }
    if (alive) show();
  };
  reseed.addEventListener('click', async () => {
    reseed.disabled = true;
    try {
      const r = await post('/v1/extensions/reseed', { force: force.checked });
      fill(report, reseedReport(r, force.checked));
      await load();
    } catch (e) {
      fill(report, errorBox(e));
    } finally {
      reseed.disabled = false;
    }
  });
  (async () => {
    try {
      const types = await typesOf();
      for (const t of types) {
        summaries.set(t.name, t.summary || '');
        typeSel.append(h('option', { value: t.name, selected: t.name === only }, t.name));
      }
    } catch { /* the list still shows */ }
    await load();
  })();
  return { unmount() { alive = false; } };
}

// reseedReport says what a reseed did.
export function reseedReport(r, forced) {
  r = r || {};
  const part = (k) => (Array.isArray(r[k]) ? r[k] : []);
  const words = [['created', 'Created'], ['updated', 'Updated'], ['unchanged', 'Unchanged'],
    ['kept', forced ? 'Kept' : 'Kept (changed by a person or an agent; force replaces them)'], ['removed', 'Removed (their document is gone)']];
  const errs = part('errors');
  return h('div', { class: 'card reseed-card', role: 'status' }, h('h2', null, forced ? 'Forced reseed' : 'Reseed'),
    h('dl', { class: 'kv' }, words.map(([k, label]) => [h('dt', null, label), h('dd', { 'data-part': k }, part(k).length ? part(k).join(', ') : h('span', { class: 'muted' }, 'none'))])),
    errs.length ? problemsList(errs, 'Documents that did not load:') : null);
}

// ---- one row ---------------------------------------------------------------------

function rowScreen(app, el, type, name) {
  app.setTitle(type + '/' + name);
  let alive = true;
  const box = h('div', null, spinner());
  fill(el, h('div', { class: 'page page-wide ext-row' },
    h('a', { href: routeHash('extensions'), class: 'back' }, icon('back'), 'Extensions'), box));
  let row = null;
  let schema = null;
  const editor = h('textarea', { id: 'ext-spec', class: 'editor mono', spellcheck: 'false', rows: '8', 'aria-label': 'Spec (JSON)', autocomplete: 'off' });
  const local = h('div', { class: 'ext-check', 'aria-live': 'polite' });
  const server = h('div', { class: 'ext-server' });
  const save = h('button', { class: 'btn btn-primary', type: 'button' }, 'Save');
  const fmt = h('button', { class: 'btn', type: 'button', title: 'Format the JSON' }, 'Format');
  const hist = h('div', { class: 'ext-history' });
  const head = h('div');
  const recheck = () => {
    const r = checkSpec(schema, editor.value);
    fill(local, r.errors.length ? problemsList(r.errors, 'The spec does not fit the ' + type + ' schema:') : h('p', { class: 'ok small' }, icon('check'), ' Fits the schema.'));
    return r;
  };
  editor.addEventListener('input', () => { fill(server); recheck(); });
  editor.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 's') { e.preventDefault(); save.click(); }
  });
  fmt.addEventListener('click', () => { const r = parseSpec(editor.value); if (r.spec) editor.value = JSON.stringify(r.spec, null, 2); recheck(); });
  save.addEventListener('click', async () => {
    const r = recheck();
    if (!r.spec) return;
    save.disabled = true;
    fill(server);
    try {
      row = await put(path('extensions', type, name), { type, name, spec: r.spec }, { headers: { 'If-Match': String(row.version) } });
      toast('Saved ' + type + '/' + name + ' as version ' + row.version);
      showRow();
      loadHistory();
    } catch (e) {
      fill(server, saveError(e));
    } finally {
      save.disabled = false;
    }
  });
  const act = async (what, fn) => {
    try {
      row = await fn();
      toast(what);
      showRow();
      loadHistory();
    } catch (e) {
      toast(what + ' failed: ' + e.message, 'error');
    }
  };
  const showRow = () => {
    const toggle = h('button', { class: 'btn btn-sm', type: 'button' }, row.enabled ? 'Disable' : 'Enable');
    toggle.addEventListener('click', () => act(row.enabled ? 'Disabled' : 'Enabled', () => post(path('extensions', type, name, row.enabled ? 'disable' : 'enable'))));
    const remove = h('button', { class: 'btn btn-sm btn-danger', type: 'button' }, icon('trash'), 'Delete');
    remove.addEventListener('click', async () => {
      if (!confirm('Delete ' + type + '/' + name + '? It stops running; its history stays.')) return;
      try {
        await del(path('extensions', type, name), { headers: { 'If-Match': String(row.version) } });
        toast('Deleted ' + type + '/' + name);
        location.hash = routeHash('extensions');
      } catch (e) {
        toast('Delete failed: ' + e.message, 'error');
      }
    });
    fill(head,
      pageHead(h('span', { class: 'mono' }, type + '/' + name), null, toggle, remove),
      h('div', { class: 'ext-status' }, state(row), provenance(row.provenance), driftMark(row),
        h('span', { class: 'muted small' }, 'version ' + row.version,
          row.active_version && row.enabled ? ' · active ' + row.active_version : '',
          ' · updated ', relTime(row.updated_at), row.updated_by ? ' by ' + row.updated_by : '',
          row.seed ? ' · seeded from ' + row.seed : '')),
      row.error ? h('div', { class: 'error-box ext-error', role: 'alert' }, h('strong', null, 'Not active: '), row.error,
        row.active_version ? ' (version ' + row.active_version + ' stays active)' : '') : null,
      row.drift ? h('div', { class: 'banner banner-warn drift-box', role: 'note' }, icon('warn'), h('span', { class: 'banner-text' }, driftWhy(row))) : null,
      type === 'control' ? h('div', { class: 'card controls' }, controlRow(row, (r) => { row = r; showRow(); loadHistory(); })) : null);
    editor.value = JSON.stringify(row.spec ?? {}, null, 2);
    editor.rows = fitRows(editor.value);
    recheck();
  };
  const loadHistory = async () => {
    let list;
    try {
      const r = await get(path('extensions', type, name, 'history'));
      list = (r && r.history) || [];
    } catch (e) {
      fill(hist, errorBox(e));
      return;
    }
    if (!alive) return;
    fill(hist, h('div', { class: 'table-scroll' }, h('table', { class: 'table hist-table' },
      h('thead', null, h('tr', null, ['Version', 'Change', 'By', 'When', 'Enabled', ''].map((x) => h('th', null, x)))),
      h('tbody', null, [...list].reverse().map((c) => {
        const current = row && c.version === row.version;
        const revert = current || c.op === 'delete' ? null : h('button', { class: 'btn btn-sm', type: 'button', 'aria-label': 'Revert to version ' + c.version }, icon('history'), 'Revert');
        if (revert) {
          revert.addEventListener('click', () => {
            if (confirm('Set ' + type + '/' + name + ' back to version ' + c.version + '\u2019s spec?')) act('Reverted to version ' + c.version, () => post(path('extensions', type, name, 'revert'), { version: c.version }));
          });
        }
        return h('tr', { 'data-version': String(c.version), class: current ? 'current' : null },
          h('td', { class: 'num' }, String(c.version)),
          h('td', null, h('span', { class: 'kind' }, c.op)),
          h('td', { class: 'small' }, c.by || c.provenance || ''),
          h('td', { class: 'small', title: fmtDateTime(c.at) }, relTime(c.at)),
          h('td', null, c.enabled ? 'yes' : 'no'),
          h('td', { class: 'row-actions' }, h('details', { class: 'hist-spec' }, h('summary', null, 'Spec'), h('pre', { class: 'code' }, pretty(c.spec))), revert));
      })))));
  };
  (async () => {
    try {
      [row, schema] = await Promise.all([get(path('extensions', type, name)), schemaOf(type).catch(() => null)]);
    } catch (e) {
      if (alive) fill(box, e instanceof APIError && e.status === 404 ? empty('No such extension', type + '/' + name + ' does not exist (any more).') : errorBox(e));
      return;
    }
    if (!alive) return;
    fill(box, head,
      h('section', { class: 'card ext-edit' }, h('div', { class: 'card-head' }, h('h2', null, 'Spec'), h('div', { class: 'page-actions' }, fmt, save)),
        h('label', { class: 'field-label', for: 'ext-spec' }, 'JSON, checked against the ' + type + ' schema as you type; Ctrl+S saves'),
        editor, local, server),
      h('section', { class: 'ext-hist' }, h('h2', null, 'History'), hist));
    showRow();
    loadHistory();
  })();
  return { unmount() { alive = false; } };
}

// fitRows is how many rows an editor shows for text: all of it, within reason.
export function fitRows(text) { return Math.min(32, Math.max(6, String(text).split('\n').length + 1)); }

// exists reports whether a row exists (a row deleted meanwhile does not).
async function exists(type, name) {
  try {
    await get(path('extensions', type, name));
    return true;
  } catch (e) {
    if (e.status === 404) return false;
    throw e;
  }
}

// saveError shows why agentd refused a document: each problem with its pointer.
function saveError(e) {
  if (e.errors && e.errors.length) return problemsList(e.errors, 'agentd refused it; nothing was saved:');
  if (e.status === 409) return errorBox('Someone changed it meanwhile (or it exists already); nothing was saved. Reload to see it.');
  return errorBox(e);
}

// ---- a new row ---------------------------------------------------------------------

function newScreen(app, el, preset) {
  app.setTitle('New extension');
  let alive = true;
  let schema = null;
  let seeded = '';
  const typeSel = h('select', { id: 'new-type', 'aria-label': 'Type' });
  const nameIn = h('input', { type: 'text', id: 'new-name', 'aria-label': 'Name', placeholder: 'my-extension', maxlength: '64', autocomplete: 'off', spellcheck: 'false' });
  const editor = h('textarea', { id: 'ext-spec', class: 'editor mono', spellcheck: 'false', rows: '8', 'aria-label': 'Spec (JSON)', autocomplete: 'off' });
  const summary = h('p', { class: 'muted small' });
  const local = h('div', { class: 'ext-check', 'aria-live': 'polite' });
  const server = h('div', { class: 'ext-server' });
  const create = h('button', { class: 'btn btn-primary', type: 'submit' }, 'Create');
  const recheck = () => {
    const errs = [];
    if (nameIn.value && !validName(nameIn.value)) errs.push({ pointer: '/name', message: 'letters, digits, - and _ with inner dots, at most 64' });
    const r = checkSpec(schema, editor.value);
    errs.push(...r.errors);
    fill(local, errs.length ? problemsList(errs, 'Not yet a valid ' + typeSel.value + ':') : h('p', { class: 'ok small' }, icon('check'), ' Fits the schema.'));
    return r;
  };
  const pickType = async () => {
    const t = typeSel.value;
    schema = null;
    let got;
    try { got = await schemaOf(t); } catch (e) { if (t === typeSel.value) fill(local, errorBox(e)); return; }
    // Another type may have been picked while this one's schema came.
    if (!alive || t !== typeSel.value) return;
    schema = got;
    const seed = JSON.stringify(example(schema), null, 2);
    if (!editor.value.trim() || editor.value === seeded) {
      editor.value = seed;
      editor.rows = fitRows(seed);
    }
    seeded = seed;
    summary.textContent = (typeSel.selectedOptions[0] && typeSel.selectedOptions[0].dataset.summary) || '';
    recheck();
  };
  typeSel.addEventListener('change', pickType);
  editor.addEventListener('input', () => { fill(server); recheck(); });
  nameIn.addEventListener('input', () => { fill(server); recheck(); });
  const form = h('form', { class: 'card ext-new' },
    h('div', { class: 'form-row' },
      h('label', { class: 'field-label', for: 'new-type' }, 'Type'), typeSel, summary),
    h('div', { class: 'form-row' }, h('label', { class: 'field-label', for: 'new-name' }, 'Name'), nameIn),
    h('label', { class: 'field-label', for: 'ext-spec' }, 'Spec (JSON), started from a smallest example of the type'),
    editor, local, server, h('div', { class: 'page-actions' }, create));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = recheck();
    const type = typeSel.value;
    const name = nameIn.value.trim();
    if (!validName(name)) { nameIn.focus(); fill(server, problemsList([{ pointer: '/name', message: name ? 'not a valid name' : 'is required' }])); return; }
    if (!r.spec) return;
    create.disabled = true;
    fill(server);
    try {
      // A new row must not replace one of the same name.
      if (await exists(type, name)) {
        fill(server, h('div', { class: 'error-box', role: 'alert' }, type + '/' + name + ' exists already; nothing was saved. ', h('a', { href: routeHash('extensions', type, name) }, 'Open it')));
        return;
      }
      await put(path('extensions', type, name), { type, name, spec: r.spec });
      toast('Created ' + type + '/' + name);
      location.hash = routeHash('extensions', type, name);
    } catch (ex) {
      fill(server, saveError(ex));
    } finally {
      create.disabled = false;
    }
  });
  fill(el, h('div', { class: 'page' },
    h('a', { href: routeHash('extensions'), class: 'back' }, icon('back'), 'Extensions'),
    pageHead('New extension', 'Checked against its type\u2019s schema as you type, and by agentd when you create it.'), form));
  (async () => {
    let types;
    try { types = await typesOf(); } catch (e) { if (alive) fill(local, errorBox(e)); return; }
    if (!alive) return;
    fill(typeSel, types.map((t) => h('option', { value: t.name, selected: t.name === preset, 'data-summary': t.summary || '' }, t.name)));
    pickType();
  })();
  return { unmount() { alive = false; } };
}
