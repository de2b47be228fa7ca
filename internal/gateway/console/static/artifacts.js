// Artifacts beside the chat: the documents a session's agent made with its
// artifact tool, each shown by its kind — markdown, code, CSV as a table,
// an image — with its versions and a download. HTML is shown as its
// source, never as a page: the console's origin runs only its own script.

import { h, icon, fill } from './dom.js';
import { get, path, query } from './api.js';
import { render as renderMarkdown } from './md.js';
import { show, choose, safeImage, language } from './render.js';
import { relTime, errorBox, spinner, empty } from './util.js';

// artifactView shows an artifact's content: by the renderer row that
// matches its kind, else by its kind — HTML always as its source.
export function artifactView(a, renderers) {
  const content = typeof a.content === 'string' ? a.content : '';
  const spec = choose(renderers, { artifact_kind: a.kind, content_type: a.media_type || undefined });
  if (spec && !(a.kind === 'html' && spec.view !== 'code')) return show(spec, content);
  switch (a.kind) {
    case 'markdown': {
      const box = h('div', { class: 'md' });
      box.append(renderMarkdown(content));
      return box;
    }
    case 'csv':
      return show({ view: 'table' }, content);
    case 'image': {
      const src = safeImage(content);
      return src ? h('img', { class: 'r-image', src, alt: a.title || a.name }) : h('p', { class: 'muted' }, 'This image cannot be shown here; download it.');
    }
    case 'html':
      return h('pre', { class: 'code r-code' }, h('code', { class: 'lang-html' }, content));
    default: {
      const l = language(a.language || (a.kind === 'code' ? '' : a.kind));
      return h('pre', { class: 'code r-code' }, h('code', { class: l ? 'lang-' + l : null }, content));
    }
  }
}

// downloadHref is where an artifact's version is downloaded from.
export function downloadHref(name, version) {
  return path('artifacts', name, 'download') + query({ version });
}

// ArtifactsPanel lists a session's artifacts and shows the one selected.
export class ArtifactsPanel {
  // onCount(n) hears how many there are; onClose() that the person closed the panel.
  constructor(session, onCount, onClose) {
    this.session = session;
    this.renderers = []; // the renderer rows, set by the chat
    this.onCount = onCount;
    this.list = [];
    this.selected = null; // {name, version}
    this.listEl = h('ul', { class: 'art-list', 'aria-label': 'Artifacts' });
    this.viewEl = h('div', { class: 'art-view' });
    const close = h('button', { class: 'icon-btn sm', type: 'button', 'aria-label': 'Close the artifacts', title: 'Close' }, icon('close'));
    close.addEventListener('click', () => onClose && onClose());
    this.el = h('aside', { class: 'art-panel', 'aria-label': 'Artifacts', id: 'artifacts' },
      h('div', { class: 'art-top' }, h('div', { class: 'side-title' }, 'Artifacts'), close), this.listEl, this.viewEl);
    this.seq = 0;
  }

  async refresh() {
    let r;
    try {
      r = await get(path('artifacts') + query({ session: this.session }));
    } catch (e) {
      // An agentd without artifacts has none to show.
      if (e.status === 404 || e.status === 501) r = null;
      else {
        fill(this.listEl, h('li', null, errorBox(e)));
        return;
      }
    }
    this.list = (r && r.artifacts) || [];
    if (this.onCount) this.onCount(this.list.length);
    if (!this.list.length) {
      fill(this.listEl, h('li', null, empty('No artifacts yet', 'Documents the agent makes with its artifact tool show here.')));
      fill(this.viewEl);
      return;
    }
    fill(this.listEl, this.list.map((a) => h('li', null, h('button', {
      type: 'button', class: ['art-item', this.selected && this.selected.name === a.name ? 'current' : null], 'data-name': a.name,
      onclick: () => this.select(a.name),
    }, h('span', { class: 'art-title' }, icon('file'), a.title || a.name),
    h('span', { class: 'muted small' }, a.kind, ' · v', String(a.version), a.updated_at ? ' · ' + relTime(a.updated_at) : '')))));
    // A new version of the one shown, or the first one: show the newest.
    const cur = this.selected && this.list.find((a) => a.name === this.selected.name);
    if (!cur) this.select(this.list[0].name);
    else if (this.selected.latest && cur.version !== this.selected.version) this.select(cur.name);
  }

  // select shows an artifact, at a version (the newest when left out).
  async select(name, version) {
    const seq = ++this.seq;
    for (const b of this.listEl.querySelectorAll('.art-item')) b.classList.toggle('current', b.dataset.name === name);
    fill(this.viewEl, spinner());
    let a;
    try {
      a = await get(path('artifacts', name) + query({ version }));
    } catch (e) {
      if (seq === this.seq) fill(this.viewEl, errorBox(e));
      return;
    }
    if (seq !== this.seq) return;
    const latest = (this.list.find((x) => x.name === name) || a).version;
    this.selected = { name, version: a.version, latest: !version || a.version === latest };
    const versions = h('select', { class: 'art-versions', 'aria-label': 'Version' },
      Array.from({ length: latest }, (_, i) => latest - i).map((v) => h('option', { value: String(v), selected: v === a.version }, 'version ' + v)));
    versions.addEventListener('change', () => this.select(name, +versions.value));
    fill(this.viewEl,
      h('div', { class: 'art-head' }, h('h3', null, a.title || a.name), versions,
        h('a', { class: 'btn btn-sm art-download', href: downloadHref(name, a.version), download: '' }, icon('download'), 'Download')),
      h('div', { class: ['art-body', 'art-' + String(a.kind || 'text').replace(/[^a-z]/g, '')] }, artifactView(a, this.renderers)));
  }
}
