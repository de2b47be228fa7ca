// The home page: the widgets (tiles of agentd's data, each shown by its
// renderer), the controls to flip, and the theme.

import { h, icon, fill } from './dom.js';
import { get, query } from './api.js';
import { empty, errorBox, spinner } from './util.js';
import { show, forWidget, loadRenderers } from './render.js';
import { controlRow } from './ext.js';
import { themes, themePicker } from './theme.js';

const SIZES = new Set(['small', 'medium', 'large', 'wide']);

// tile is one widget: its title, and its data by its renderer, or its error.
export function tile(w, renderers) {
  const size = SIZES.has(w.size) ? w.size : 'medium';
  let body;
  if (w.error) body = h('div', { class: 'error-box small tile-error', role: 'alert' }, w.error);
  else {
    try {
      body = show(forWidget(renderers, w), w.data);
    } catch (e) {
      body = h('div', { class: 'error-box small tile-error', role: 'alert' }, 'Cannot show this: ' + e.message);
    }
  }
  return h('article', { class: ['card', 'tile', 'tile-' + size], 'data-name': w.name, 'aria-labelledby': 'tile-' + w.name },
    h('h2', { id: 'tile-' + w.name }, w.title || w.name), h('div', { class: 'tile-body' }, body));
}

export function homeScreen(app, el) {
  app.setTitle('Home');
  let alive = true;
  const tiles = h('div', { class: 'tiles' }, spinner('Loading the widgets'));
  const controls = h('div', { class: 'controls' });
  const look = h('div', { class: 'appearance' });
  const refresh = h('button', { class: 'btn btn-sm', type: 'button' }, icon('reset'), 'Refresh');
  fill(el, h('div', { class: 'page page-wide' },
    h('div', { class: 'page-head' }, h('div', null, h('h1', null, 'Home')), h('div', { class: 'page-actions' }, refresh)),
    tiles,
    h('section', { class: 'home-controls', 'aria-labelledby': 'home-ctl' }, h('h2', { id: 'home-ctl' }, 'Controls'), controls),
    h('section', { class: 'home-look', 'aria-labelledby': 'home-look' }, h('h2', { id: 'home-look' }, 'Appearance'), look)));

  const loadWidgets = async () => {
    let list;
    let renderers;
    try {
      [list, renderers] = await Promise.all([get('/v1/widgets'), loadRenderers()]);
    } catch (e) {
      if (alive) fill(tiles, errorBox(e));
      return;
    }
    if (!alive) return;
    const ws = (list && list.widgets) || [];
    fill(tiles, ws.length ? ws.map((w) => tile(w, renderers)) : empty('No widgets', 'A row of type widget puts a tile here: agentd ext put, or New extension.'));
  };
  const loadControls = async () => {
    let rows;
    try {
      const r = await get('/v1/extensions' + query({ type: 'control' }));
      rows = ((r && r.extensions) || []).filter((x) => x.enabled);
    } catch (e) {
      if (alive) fill(controls, errorBox(e));
      return;
    }
    if (!alive) return;
    fill(controls, rows.length ? h('div', { class: 'card' }, rows.map((r) => controlRow(r))) : h('p', { class: 'muted' }, 'No controls yet.'));
  };
  const loadLook = async () => {
    const rows = await themes();
    if (!alive) return;
    fill(look, h('div', { class: 'card controls' }, h('div', { class: 'control' }, h('div', { class: 'control-text' },
      h('label', { for: 'theme-pick', class: 'control-name' }, 'Theme'),
      h('div', { class: 'muted small' }, 'Colours and fonts from the rows of type theme; light or dark follows your system.')),
    themePicker(app.themer, rows))));
  };
  const all = () => { loadWidgets(); loadControls(); loadLook(); };
  refresh.addEventListener('click', all);
  all();
  const poll = setInterval(() => { if (document.visibilityState === 'visible') loadWidgets(); }, 30000);
  return { unmount() { alive = false; clearInterval(poll); } };
}
