// The Connectors page: every chat connector (Telegram, Discord, Slack)
// with its state, queue, failed replies and last error; the pending
// pairing codes with Approve and Deny; the group chats a connector
// refused, each with a button that copies its id for groups.allow. And,
// for the log screen, the Retry and Dismiss buttons of a reply a
// connector failed to deliver (a delivery event).
//
// The page reads /v1/connectors and /v1/pairings every 5 s while the tab
// is visible. Approve, Deny, Retry and Dismiss are admin routes: over TCP
// without gateway.remote_admin agentd refuses them, and the page says
// why.
//
// Route: #/connectors.

import { h, icon, fill } from './dom.js';
import { get, post, path } from './api.js';
import { badge, toast, empty, errorBox, spinner, copyButton, relTime, fmtDateTime } from './util.js';
import { relativeTo } from './jobs.js';

const EVERY = 5000; // ms between refreshes

// showCode is a pairing code as its user got it: XXXX-XXXX.
export function showCode(c) {
  c = String(c || '');
  return c.length === 8 ? c.slice(0, 4) + '-' + c.slice(4) : c;
}

// refusedWords says a connector's refusals in words: "mention 40, pairing 3".
export function refusedWords(m) {
  return Object.keys(m || {}).sort().map((k) => k + ' ' + m[k]).join(', ');
}

export function connectorsScreen(app, el) {
  app.setTitle('Connectors');
  let alive = true;
  let timer = 0;
  const problem = h('div', { class: 'conn-problem' });
  const conns = h('section', { class: 'connectors', 'aria-labelledby': 'conn-h' }, spinner('Reading the connectors'));
  const pairs = h('section', { class: 'pairings', 'aria-labelledby': 'pair-h' });
  fill(el, h('div', { class: 'page page-wide' },
    h('div', { class: 'page-head' }, h('div', null, h('h1', { id: 'conn-h' }, 'Connectors'),
      h('p', { class: 'muted' }, 'Chat platforms the agents answer on: integration rows with a platform (docs/connectors.md).'))),
    problem, conns, pairs));

  const fail = (what, e) => {
    const msg = what + ': ' + (e && e.message ? e.message : String(e));
    fill(problem, h('div', { class: 'error-box', role: 'alert' }, msg));
    toast(msg, 'error');
  };

  const drawConnectors = (list) => {
    if (!list.length) {
      fill(conns, empty('No connectors', 'A row of type integration with a platform (telegram, discord or slack) connects an agent to a chat: agentd ext put. docs/connectors.md walks through it.'));
      return;
    }
    fill(conns, h('div', { class: 'table-scroll' }, h('table', { class: 'table connectors-table' },
      h('thead', null, h('tr', null, ['Connector', 'Agent', 'State', 'Queue', 'Failed', 'Last error'].map((x) => h('th', { scope: 'col', class: ['Queue', 'Failed'].includes(x) ? 'num' : null }, x)))),
      h('tbody', null, list.map(connectorRow)))));
  };

  const decide = async (code, approve, buttons) => {
    for (const b of buttons) b.disabled = true;
    fill(problem);
    try {
      const p = await post(path('pairings', code, approve ? 'approve' : 'deny'));
      toast((approve ? 'Approved ' : 'Denied ') + showCode(code) + (p && p.name ? ' (' + p.name + ')' : ''));
      refresh();
    } catch (e) {
      fail((approve ? 'Approve' : 'Deny') + ' failed', e);
      for (const b of buttons) b.disabled = false;
    }
  };

  const drawPairings = (list) => {
    fill(pairs, h('h2', { id: 'pair-h' }, 'Pending pairings'),
      list.length ? h('div', { class: 'table-scroll' }, h('table', { class: 'table pairings-table' },
        h('thead', null, h('tr', null, ['Code', 'Connector', 'User', 'Expires', ''].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', null, list.map((p) => {
          const approve = h('button', { class: 'btn btn-primary btn-sm pair-approve', type: 'button', 'aria-label': 'Approve ' + showCode(p.code) }, icon('check'), 'Approve');
          const deny = h('button', { class: 'btn btn-sm pair-deny', type: 'button', 'aria-label': 'Deny ' + showCode(p.code) }, icon('x'), 'Deny');
          approve.addEventListener('click', () => decide(p.code, true, [approve, deny]));
          deny.addEventListener('click', () => decide(p.code, false, [approve, deny]));
          return h('tr', { 'data-code': p.code },
            h('td', { 'data-label': 'Code', class: 'mono' }, showCode(p.code)),
            h('td', { 'data-label': 'Connector' }, p.connector),
            h('td', { 'data-label': 'User' }, p.name ? [p.name, ' ', h('span', { class: 'muted mono small' }, p.user_id)] : h('span', { class: 'mono' }, p.user_id)),
            h('td', { 'data-label': 'Expires', title: fmtDateTime(p.expires_at) }, relativeTo(p.expires_at, Date.now())),
            h('td', { class: 'row-actions' }, approve, deny));
        }))))
        : h('p', { class: 'muted no-pairings' }, 'None. A stranger who writes to a bot under the pairing policy gets a code; it shows here for an hour.'));
  };

  const refresh = async () => {
    clearTimeout(timer);
    if (document.visibilityState === 'visible') {
      try {
        const [c, p] = await Promise.all([get('/v1/connectors'), get('/v1/pairings')]);
        if (!alive) return;
        drawConnectors((c && c.connectors) || []);
        drawPairings((p && p.pairings) || []);
      } catch (e) {
        if (!alive) return;
        fill(conns, errorBox(e));
      }
    }
    if (alive) timer = setTimeout(refresh, EVERY);
  };
  refresh();
  return { unmount() { alive = false; clearTimeout(timer); } };
}

// connectorRow is one connector's row of the table.
function connectorRow(c) {
  const limited = c.rate_limited_until && new Date(c.rate_limited_until) > new Date();
  const refused = c.refused && Object.keys(c.refused).length ? h('div', { class: 'muted small conn-refused' }, 'refused: ' + refusedWords(c.refused)) : null;
  const chats = (c.refused_chats || []).length
    ? h('div', { class: 'refused-chats' }, h('span', { class: 'muted small' }, 'refused group chats: '),
      c.refused_chats.map((id) => h('span', { class: 'chip refused-chat', 'data-chat': id }, h('span', { class: 'mono' }, id),
        copyButton(id, 'Copy chat id ' + id + ' for groups.allow'))))
    : null;
  const err = c.last_error
    ? [h('span', { class: 'run-error' }, c.last_error), c.last_error_at ? h('div', { class: 'muted small' }, relTime(c.last_error_at)) : null]
    : h('span', { class: 'muted' }, '\u2014');
  return h('tr', { 'data-connector': c.name, 'data-state': c.state },
    h('td', { 'data-label': 'Connector' }, h('span', { class: 'mono conn-name' }, c.name),
      h('div', { class: 'muted small' }, [c.platform, c.mode, c.bot].filter(Boolean).join(' \u00b7 '))),
    h('td', { 'data-label': 'Agent' }, c.agent || ''),
    h('td', { 'data-label': 'State' }, badge(c.state),
      c.since ? h('div', { class: 'muted small', title: fmtDateTime(c.since) }, 'since ' + relTime(c.since)) : null,
      limited ? h('div', { class: 'small' }, 'rate limited') : null),
    h('td', { 'data-label': 'Queue', class: 'num conn-queue' }, String(c.queue || 0)),
    h('td', { 'data-label': 'Failed', class: 'num conn-failed' }, String(c.failed || 0)),
    h('td', { 'data-label': 'Last error', class: 'conn-error' }, err, refused, chats));
}

// deliveryActions are the Retry and Dismiss buttons of a delivery event
// that says a reply failed (null for any other): each asks agentd once
// and says what became of it.
export function deliveryActions(ev) {
  const d = (ev && ev.data) || {};
  if (ev.kind !== 'delivery' || d.op !== 'failed' || !d.connector || !d.outbox) return null;
  const status = h('span', { class: 'muted small delivery-status', role: 'status' });
  const act = (verb) => {
    const b = h('button', { class: 'btn btn-sm delivery-' + verb, type: 'button', 'aria-label': (verb === 'retry' ? 'Retry' : 'Dismiss') + ' the reply of turn ' + d.turn },
      icon(verb === 'retry' ? 'retry' : 'x'), verb === 'retry' ? 'Retry' : 'Dismiss');
    b.addEventListener('click', async (e) => {
      e.preventDefault();
      retry.disabled = dismiss.disabled = true;
      try {
        await post(path('connectors', d.connector, 'outbox', d.outbox, verb));
        status.textContent = verb === 'retry' ? 'sent again to the connector' : 'dismissed';
      } catch (err) {
        status.textContent = (verb === 'retry' ? 'Retry' : 'Dismiss') + ' failed: ' + err.message;
        retry.disabled = dismiss.disabled = false;
      }
    });
    return b;
  };
  const retry = act('retry');
  const dismiss = act('dismiss');
  return h('div', { class: 'delivery-actions' }, retry, dismiss, status);
}

// deliverySentence says a delivery event in words.
export function deliverySentence(d) {
  d = d || {};
  const where = (d.connector || '?') + (d.platform ? ' (' + d.platform + ')' : '');
  switch (d.op) {
    case 'failed': return 'Not delivered to ' + where + ' after ' + (d.tries || 0) + ' tries' + (d.error ? ': ' + d.error : '');
    case 'in_doubt': return 'Sent again to ' + where + ' after a restart: it may show twice';
    case 'retried': return 'Retried on ' + where;
    default: return (d.op || 'delivery') + ' on ' + where;
  }
}
