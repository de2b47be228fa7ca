// Formatting and small shared pieces.

import { h, icon } from './dom.js';

export function fmtDuration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(+ms)) return '';
  ms = +ms;
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  const m = Math.floor(ms / 60000);
  return m + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
}

export function fmtNum(n) {
  n = +n || 0;
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + 'M';
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(n >= 1e5 ? 0 : 1) + 'k';
  return n.toLocaleString();
}

export function fmtUSD(n) {
  n = +n || 0;
  if (n === 0) return '$0';
  if (n < 0.01) return '$' + n.toFixed(4);
  if (n < 100) return '$' + n.toFixed(2);
  return '$' + Math.round(n).toLocaleString();
}

export function fmtTime(t) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function fmtDateTime(t) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

export function relTime(t) {
  const d = new Date(t).getTime();
  if (Number.isNaN(d)) return '';
  const s = Math.round((Date.now() - d) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return Math.round(s / 3600) + ' h ago';
  if (s < 86400 * 7) return Math.round(s / 86400) + ' d ago';
  return new Date(d).toLocaleDateString();
}

// pretty formats a JSON value, or a string holding JSON, for reading.
export function pretty(v) {
  if (typeof v === 'string') {
    const t = v.trim();
    if ((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'))) {
      try { return JSON.stringify(JSON.parse(t), null, 2); } catch { /* not JSON */ }
    }
    return v;
  }
  if (v === undefined) return '';
  return JSON.stringify(v, null, 2);
}

// splitAddr splits "agent/key" at the first slash.
export function splitAddr(a) {
  const i = String(a).indexOf('/');
  return i < 0 ? [a, ''] : [a.slice(0, i), a.slice(i + 1)];
}

// Preferences that are not secrets (the last agent and session opened).
const PREFS = 'agentd.console.prefs';
export function prefs() {
  try { return JSON.parse(localStorage.getItem(PREFS) || '{}') || {}; } catch { return {}; }
}
export function setPref(k, v) {
  const p = prefs();
  p[k] = v;
  try { localStorage.setItem(PREFS, JSON.stringify(p)); } catch { /* storage off */ }
}

// Toasts: short messages in a live region.
let toastBox = null;
export function toast(msg, kind = 'info') {
  if (!toastBox) {
    toastBox = h('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.appendChild(toastBox);
  }
  const t = h('div', { class: ['toast', 'toast-' + kind] }, msg);
  toastBox.appendChild(t);
  setTimeout(() => { t.classList.add('gone'); setTimeout(() => t.remove(), 400); }, kind === 'error' ? 6000 : 3500);
}

// badge shows a state word with its colour.
export function badge(state, extra) {
  return h('span', { class: ['badge', 'st-' + String(state || 'unknown').replace(/[^a-z_-]/gi, '')], title: extra || null }, state || 'unknown');
}

// copyButton copies text() to the clipboard.
export function copyButton(text, label = 'Copy') {
  const b = h('button', { class: 'icon-btn copy', type: 'button', 'aria-label': label, title: label }, icon('copy'));
  b.addEventListener('click', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    try {
      await navigator.clipboard.writeText(typeof text === 'function' ? text() : text);
      b.classList.add('done');
      setTimeout(() => b.classList.remove('done'), 1200);
    } catch {
      toast('Copying needs a secure page (https or localhost).', 'error');
    }
  });
  return b;
}

// highlight renders a search snippet, where matches are wrapped in « », with <mark>.
export function highlight(snippet) {
  const out = [];
  const re = /«([^«»]*)»/g;
  let last = 0;
  let m;
  while ((m = re.exec(snippet))) {
    if (m.index > last) out.push(snippet.slice(last, m.index));
    out.push(h('mark', null, m[1]));
    last = m.index + m[0].length;
  }
  if (last < snippet.length) out.push(snippet.slice(last));
  return out;
}

// problemLine formats a problem of an agent file as agentd reports config
// errors: file:line: field: message.
export function problemLine(p) {
  const where = p.file ? p.file + (p.line ? ':' + p.line : '') + ': ' : '';
  return where + (p.field ? p.field + ': ' : '') + (p.message || '');
}

// problemsBox lists an agent file's problems under a heading.
export function problemsBox(title, problems) {
  return h('div', { class: 'error-box small problems', role: 'note' }, h('p', null, title),
    h('ul', null, (problems || []).map((p) => h('li', { class: 'mono' }, problemLine(p)))));
}

// FAILURES say why a turn failed, by the kind of its error event.
const FAILURES = {
  rate_limited: 'The model\u2019s provider is limiting requests right now. Wait a little, then retry.',
  overloaded: 'The model\u2019s provider is overloaded or failed. Retry in a moment.',
  auth: 'The model\u2019s provider refused the API key. Check the key the agent\u2019s model uses (model.api_key_env), then retry.',
  context_overflow: 'The conversation is too long for the model. Reset the chat (the log keeps everything), then retry.',
  bad_request: 'The model\u2019s provider refused the request.',
  protocol: 'The model\u2019s answer broke off or could not be read.',
  transport: 'agentd could not reach the model\u2019s provider.',
};

// failureSentence says in words why a turn failed, from its error's kind.
export function failureSentence(kind) {
  return Object.hasOwn(FAILURES, kind) ? FAILURES[kind] : 'The turn failed before the agent could answer.';
}

// empty is a placeholder for a list with nothing in it.
export function empty(title, text, ...actions) {
  return h('div', { class: 'empty' }, h('p', { class: 'empty-title' }, title), text ? h('p', null, text) : null, ...actions);
}

export function errorBox(err) {
  return h('div', { class: 'error-box', role: 'alert' }, err && err.message ? err.message : String(err));
}

export function spinner(label = 'Loading') {
  return h('div', { class: 'loading', role: 'status' }, h('span', { class: 'spin', 'aria-hidden': 'true' }), h('span', null, label + '…'));
}

// parseRoute reads the hash: "#/log/a/k" → {name: "log", args: ["a", "k"]}.
export function parseRoute(hash) {
  const parts = String(hash || '').replace(/^#\/?/, '').split('/').filter((p) => p !== '');
  const args = parts.slice(1).map((p) => { try { return decodeURIComponent(p); } catch { return p; } });
  return { name: parts[0] || '', args };
}

// routeHash builds a hash from a route name and arguments.
export function routeHash(name, ...args) {
  return '#/' + [name, ...args.filter((a) => a !== undefined && a !== null && a !== '').map((a) => encodeURIComponent(String(a)))].join('/');
}
