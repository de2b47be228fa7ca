// The sessions list and search, a session's log, MCP servers and the
// approvals waiting (the agents are agents.js's).

import { h, icon, fill } from './dom.js';
import { get, del, path, query, APIError } from './api.js';
import { fmtDuration, fmtNum, fmtUSD, fmtTime, fmtDateTime, relTime, pretty, badge, copyButton, empty, errorBox, spinner, highlight, splitAddr, routeHash, problemsBox } from './util.js';
import { loadEvents, approvalPanel } from './chat.js';
import { deliveryActions, deliverySentence } from './connectors.js';

const STATES = ['created', 'active', 'idle', 'compacting', 'closed'];

export function pageHead(title, sub, ...actions) {
  return h('div', { class: 'page-head' }, h('div', null, h('h1', null, title), sub ? h('p', { class: 'muted' }, sub) : null),
    actions.length ? h('div', { class: 'page-actions' }, actions) : null);
}

// ---- sessions --------------------------------------------------------------

export function sessionsScreen(app, el) {
  app.setTitle('Sessions');
  let alive = true;
  let timer = 0;
  let seq = 0;
  const search = h('input', { type: 'search', id: 'sess-search', placeholder: 'Search conversations…', 'aria-label': 'Search conversations', autocomplete: 'off' });
  const agentSel = h('select', { 'aria-label': 'Filter by agent' }, h('option', { value: '' }, 'All agents'));
  const stateSel = h('select', { 'aria-label': 'Filter by state' }, h('option', { value: '' }, 'Any state'), STATES.map((s) => h('option', { value: s }, s)));
  const body = h('div', { class: 'sess-body' }, spinner());
  const bar = h('div', { class: 'toolbar' },
    h('div', { class: 'search-box' }, icon('search'), search), agentSel, stateSel);
  fill(el, h('div', { class: 'page' }, pageHead('Sessions', 'Every conversation, most recently active first.'), bar, body));

  app.getAgents().then((as) => {
    for (const a of as || []) agentSel.append(h('option', { value: a.id }, a.id));
  }).catch(() => {});

  const load = async () => {
    const my = ++seq;
    const q = search.value.trim();
    try {
      if (q) {
        const res = await get('/v1/history/search' + query({ q, agent: agentSel.value, limit: 50 }));
        if (!alive || my !== seq) return;
        showHits(res.hits || [], q);
      } else {
        const list = await get('/v1/sessions' + query({ agent: agentSel.value, state: stateSel.value, limit: 200 }));
        if (!alive || my !== seq) return;
        showList(list || []);
      }
    } catch (e) {
      if (alive && my === seq) fill(body, errorBox(e.status === 400 ? new Error('Nothing to search for in that: try other words.') : e));
    }
  };

  const showList = (list) => {
    if (!list.length) {
      fill(body, empty('No sessions', agentSel.value || stateSel.value ? 'Nothing matches these filters.' : 'Start a chat and it appears here.'));
      return;
    }
    fill(body, h('table', { class: 'table sess-table' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col', class: 'num' }, 'Events'), h('th', { scope: 'col' }, 'Last active'), h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Open')))),
      h('tbody', null, list.map((s) => h('tr', null,
        h('td', { 'data-label': 'Session' }, h('a', { href: routeHash('chat', s.agent, s.key), class: 'sess-link' },
          s.title ? h('span', { class: 'sess-title' }, s.title) : null,
          h('span', { class: 'sess-addr' }, h('span', { class: 'muted' }, s.agent + '/'), h('span', { class: 'mono' }, s.key)))),
        h('td', { 'data-label': 'State' }, badge(s.state)),
        h('td', { 'data-label': 'Events', class: 'num' }, fmtNum(s.last_seq)),
        h('td', { 'data-label': 'Last active', title: fmtDateTime(s.updated_at) }, relTime(s.updated_at)),
        h('td', { class: 'row-actions' }, h('a', { href: routeHash('log', s.agent, s.key), class: 'btn btn-sm' }, icon('log'), 'Log')))))));
  };

  const showHits = (hits, q) => {
    if (!hits.length) {
      fill(body, empty('No matches', 'Nothing in the conversations matches “' + q + '”.'));
      return;
    }
    fill(body, h('ol', { class: 'hits', 'aria-label': 'Search results' }, hits.map((x) => {
      const [a, k] = splitAddr(x.session);
      return h('li', null, h('a', { href: routeHash('log', a, k, x.seq), class: 'hit' },
        h('div', { class: 'hit-head' }, h('span', { class: 'mono' }, x.session), h('span', { class: 'kind k-' + x.kind }, x.kind), h('span', { class: 'muted' }, relTime(x.time))),
        h('p', { class: 'hit-snip' }, highlight(x.snippet || ''))));
    })));
  };

  const later = () => { clearTimeout(timer); timer = setTimeout(load, 250); };
  search.addEventListener('input', later);
  search.addEventListener('keydown', (e) => { if (e.key === 'Enter') { clearTimeout(timer); load(); } });
  agentSel.addEventListener('change', load);
  stateSel.addEventListener('change', () => { if (search.value.trim()) search.value = ''; load(); });
  load();
  const poll = setInterval(() => { if (!search.value.trim() && document.visibilityState === 'visible') load(); }, 15000);
  return { unmount() { alive = false; clearTimeout(timer); clearInterval(poll); } };
}

// ---- a session's log -------------------------------------------------------

// summary is the one line shown for an event.
export function summary(ev) {
  const d = ev.data || {};
  const cut = (s, n = 160) => { s = String(s ?? '').replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n - 1) + '…' : s; };
  switch (ev.kind) {
    case 'input': case 'system_message':
      return (d.silent ? '(silent) ' : '') + (d.origin ? d.origin + ': ' : '') + cut(d.text);
    case 'text': case 'thought':
      return cut(d.text);
    case 'tool_call':
      return `${d.name}(${cut(typeof d.args === 'string' ? d.args : JSON.stringify(d.args ?? {}), 120)})`;
    case 'tool_result':
      return `${d.name} → ${d.is_error ? 'error: ' : ''}${cut(d.output, 120)} · ${fmtDuration(d.duration_ms)}`;
    case 'model_call':
      return [`${d.provider || ''} ${d.model || ''}`.trim(), d.step ? 'step ' + d.step : '', d.attempt > 1 ? 'attempt ' + d.attempt : '',
        `${fmtNum(d.input_tokens)} in / ${fmtNum(d.output_tokens)} out`, fmtDuration(d.latency_ms), d.cost_usd ? fmtUSD(d.cost_usd) : '', d.error ? 'error: ' + cut(d.error, 80) : '']
        .filter(Boolean).join(' · ');
    case 'turn_end':
      return `${d.status}${d.reason ? ' (' + cut(d.reason, 60) + ')' : ''} · ${cut(d.reply, 100)}`;
    case 'approval_requested':
      return `${d.tool} · ${cut(d.reason, 100)}`;
    case 'approval_resolved':
      return `${d.tool} ${d.expired ? 'expired' : d.granted ? 'granted' : 'denied'}${d.by ? ' by ' + d.by : ''}${d.reason ? ': ' + cut(d.reason, 80) : ''}`;
    case 'reset': case 'marker':
      return `${d.name || ev.kind}${d.reason ? ': ' + cut(d.reason) : ''}`;
    case 'error':
      return `${d.kind || 'error'}: ${cut(d.message)}`;
    case 'summary':
      return `folded ${d.folded ?? '?'} events (${fmtNum(d.folded_tokens)} → ${fmtNum(d.tokens)} tokens)`;
    case 'lifecycle':
      return [d.phase, d.tool, d.target, d.is_error ? 'error' : '', d.duration_ms ? fmtDuration(d.duration_ms) : ''].filter(Boolean).join(' · ');
    case 'context_warning':
      return `${fmtNum(d.tokens)} of ${fmtNum(d.window)} tokens · ${d.action || ''}`;
    case 'delivery':
      return deliverySentence(d);
    case 'working_memory':
      return d.deleted ? `${d.key} deleted` : `${d.key} = ${cut(JSON.stringify(d.value), 100)}`;
    default:
      return cut(JSON.stringify(d), 140);
  }
}

export function logScreen(app, el, args) {
  const [agent, key, seqArg] = args;
  if (!agent || !key) { location.hash = routeHash('sessions'); return {}; }
  const addr = agent + '/' + key;
  app.setTitle('Log · ' + addr);
  let alive = true;
  let follow = null;
  const want = parseInt(seqArg, 10) || 0;
  const kinds = new Set();
  const kindSel = h('select', { 'aria-label': 'Show kind' }, h('option', { value: '' }, 'All kinds'));
  const stateEl = h('span');
  const count = h('span', { class: 'muted' });
  const list = h('ol', { class: 'events', 'aria-label': 'Events of ' + addr });
  const expand = h('button', { class: 'btn btn-sm', type: 'button' }, 'Expand all');
  expand.addEventListener('click', () => {
    const open = expand.textContent === 'Expand all';
    for (const d of list.querySelectorAll('details')) if (!d.parentNode.hidden) d.open = open;
    expand.textContent = open ? 'Collapse all' : 'Expand all';
  });
  fill(el, h('div', { class: 'page page-wide' },
    h('a', { href: routeHash('sessions'), class: 'back' }, icon('back'), 'Sessions'),
    pageHead(h('span', { class: 'mono' }, addr), null, h('a', { href: routeHash('chat', agent, key), class: 'btn btn-sm' }, icon('chat'), 'Open chat')),
    h('div', { class: 'toolbar' }, stateEl, count, kindSel, expand),
    list));

  const row = (ev) => {
    if (!kinds.has(ev.kind)) {
      kinds.add(ev.kind);
      kindSel.append(h('option', { value: ev.kind }, ev.kind));
    }
    const json = pretty({ seq: ev.seq, turn: ev.turn, kind: ev.kind, time: ev.time, data: ev.data });
    const li = h('li', { class: 'ev k-' + ev.kind, id: 'ev-' + ev.seq, 'data-kind': ev.kind },
      h('details', null,
        h('summary', null,
          h('span', { class: 'ev-seq mono' }, ev.seq),
          h('span', { class: 'ev-time muted', title: fmtDateTime(ev.time) }, fmtTime(ev.time)),
          h('span', { class: 'kind k-' + ev.kind }, ev.kind),
          ev.turn ? h('span', { class: 'ev-turn muted' }, 'turn ' + ev.turn) : null,
          h('span', { class: 'ev-sum' }, summary(ev))),
        h('div', { class: 'ev-body' }, copyButton(json, 'Copy event'), h('pre', { class: 'code' }, json))));
    // A reply a connector failed to deliver is a red line a person acts on.
    const acts = deliveryActions(ev);
    if (acts) {
      li.classList.add('delivery-failed');
      li.append(acts);
    }
    if (kindSel.value && kindSel.value !== ev.kind) li.hidden = true;
    return li;
  };
  kindSel.addEventListener('change', () => {
    for (const li of list.children) li.hidden = !!kindSel.value && li.dataset.kind !== kindSel.value;
  });

  list.append(spinner('Reading the log'));
  (async () => {
    let hist;
    try {
      hist = await loadEvents(agent, key);
    } catch (e) {
      fill(list, errorBox(e));
      return;
    }
    if (!alive) return;
    list.replaceChildren();
    if (!hist.session) {
      fill(list, empty('No such session', addr + ' has no events yet.'));
      return;
    }
    fill(stateEl, badge(hist.session.state));
    let last = 0;
    const frag = document.createDocumentFragment();
    for (const ev of hist.events) { frag.append(row(ev)); last = ev.seq; }
    list.append(frag);
    count.textContent = hist.events.length + ' events';
    if (want) {
      const target = document.getElementById('ev-' + want);
      if (target) {
        target.classList.add('target');
        target.querySelector('details').open = true;
        target.scrollIntoView({ block: 'center' });
      }
    }
    const handler = (ev) => {
      if (ev.seq <= last) return; // live-only kinds and replays are not the log
      last = ev.seq;
      const sc = app.main;
      const stick = sc && sc.scrollHeight - sc.scrollTop - sc.clientHeight < 80;
      list.append(row(ev));
      count.textContent = list.children.length + ' events';
      if (stick) sc.scrollTop = sc.scrollHeight;
    };
    follow = app.follow({ session: addr, after: last }, handler);
    if (!alive) follow.stop();
  })();
  return { unmount() { alive = false; if (follow) follow.stop(); } };
}

// ---- shared by the screens ----------------------------------------------

export function chips(list, cls) {
  if (!list || !list.length) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'chips' }, list.map((x) => h('span', { class: ['chip', cls] }, String(x))));
}

export function dl(rows) {
  return h('dl', { class: 'kv' }, rows.filter((r) => r && r[1] !== undefined && r[1] !== null && r[1] !== '').map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

// ---- MCP servers ---------------------------------------------------------

export function mcpScreen(app, el) {
  app.setTitle('MCP servers');
  let alive = true;
  const box = h('div', { class: 'cards' }, spinner());
  const refresh = h('button', { class: 'btn btn-sm', type: 'button' }, icon('reset'), 'Refresh');
  fill(el, h('div', { class: 'page' }, pageHead('MCP servers', 'The tool servers agentd connects to.', refresh), box));
  const load = async () => {
    let list;
    try { list = await get('/v1/mcp/servers'); } catch (e) { if (alive) fill(box, errorBox(e)); return; }
    if (!alive) return;
    if (!list.length) {
      fill(box, empty('No MCP servers', 'Add one with agentd mcp add NAME -- COMMAND, or under mcp_servers: in agentd.yaml.'));
      return;
    }
    const open = new Set([...box.querySelectorAll('details[open]')].map((d) => d.dataset.name));
    fill(box, list.map((s) => {
      const tools = h('div', { class: 'tools-list' });
      const det = h('details', { class: 'srv-tools', 'data-name': s.name, open: open.has(s.name) || null },
        h('summary', null, fmtNum(s.tools) + (s.tools === 1 ? ' tool' : ' tools')), tools);
      const loadTools = async () => {
        if (tools.dataset.loaded) return;
        tools.dataset.loaded = '1';
        fill(tools, spinner());
        try {
          const ts = await get(path('mcp', 'servers', s.name, 'tools'));
          fill(tools, ts.length ? h('ul', null, ts.map((t) => h('li', null, h('span', { class: 'mono' }, t.name),
            t.kind && t.kind !== 'model' ? h('span', { class: 'chip' }, t.kind) : null,
            t.destructive ? h('span', { class: 'chip chip-bad' }, 'destructive') : null,
            t.read_only ? h('span', { class: 'chip chip-ok' }, 'read-only') : null,
            t.description ? h('div', { class: 'muted small' }, t.description) : null))) : h('p', { class: 'muted' }, 'No tools.'));
        } catch (e) {
          delete tools.dataset.loaded;
          fill(tools, errorBox(e));
        }
      };
      det.addEventListener('toggle', () => { if (det.open) loadTools(); });
      if (det.open) loadTools();
      return h('article', { class: 'card srv' },
        h('div', { class: 'card-head' },
          h('div', { class: 'srv-name' }, h('span', { class: ['status-dot', 'sd-' + s.state], 'aria-hidden': 'true' }), h('h2', null, s.name)),
          badge(s.state)),
        dl([
          ['Transport', s.transport],
          ['Defined in', s.source],
          ['Server', s.server_name ? `${s.server_name} ${s.server_version || ''}`.trim() : null],
          ['Agents', s.agents && s.agents.length ? chips(s.agents) : h('span', { class: 'muted' }, 'all that use it')],
          ['Restarts', String(s.restarts || 0)],
          ['Since', s.since ? relTime(s.since) : null],
          ['PID', s.pid ? String(s.pid) : null],
        ]),
        s.last_error ? h('p', { class: 'error-box small' }, s.last_error) : null,
        det);
    }));
  };
  refresh.addEventListener('click', load);
  load();
  const poll = setInterval(() => { if (document.visibilityState === 'visible') load(); }, 10000);
  return { unmount() { alive = false; clearInterval(poll); } };
}

// ---- approvals -------------------------------------------------------------

export function approvalsScreen(app, el) {
  app.setTitle('Approvals');
  const box = h('div', { class: 'approvals' });
  const grantsBox = h('div', { class: 'grants' });
  fill(el, h('div', { class: 'page' }, pageHead('Approvals', 'Tool calls waiting for a person.'), box,
    h('h2', { id: 'grants-h' }, 'Grants'),
    h('p', { class: 'muted small' }, 'What people allowed for a session, or always for an exact call: such calls run without asking until the grant is revoked.'),
    grantsBox));
  let shown = null;
  const show = (list) => {
    const ids = list.map((r) => r.id).join(',');
    if (ids === shown) return; // keep what a person is typing
    shown = ids;
    loadGrants();
    if (!list.length) { fill(box, empty('Nothing waits', 'Calls to tools an agent\u2019s policy marks “ask” appear here.')); return; }
    fill(box, list.map((r) => {
      const [a, k] = splitAddr(r.session);
      return h('article', { class: 'card', 'data-approval': r.id },
        h('div', { class: 'card-head' }, h('div', null, h('h2', { class: 'mono' }, r.tool), h('div', { class: 'muted small' }, r.session, ' · ', relTime(r.created_at))),
          h('a', { href: routeHash('chat', a, k), class: 'btn btn-sm' }, icon('chat'), 'Open chat')),
        approvalPanel(app, { id: r.id, tool: r.tool, reason: r.reason, expires: r.expires_at, args: r.args, card: r.card, state: 'waiting' }, () => loadGrants()));
    }));
  };
  const loadGrants = async () => {
    let list;
    try { list = (await get('/v1/grants')) || []; } catch (e) { fill(grantsBox, errorBox(e)); return; }
    if (!list.length) { fill(grantsBox, h('p', { class: 'muted no-grants' }, 'No grants.')); return; }
    fill(grantsBox, h('table', { class: 'table' },
      h('thead', null, h('tr', null, ...['Agent', 'Tool', 'Session', 'Call', 'By', 'Since', ''].map((t) => h('th', null, t)))),
      h('tbody', null, list.map((g) => {
        const revoke = h('button', { class: 'btn btn-sm btn-danger grant-revoke', type: 'button', 'aria-label': 'Revoke grant ' + g.id }, 'Revoke');
        revoke.addEventListener('click', async () => {
          revoke.disabled = true;
          try { await del(path('grants', g.id)); } catch (e) { if (e.status !== 404) { revoke.disabled = false; revoke.title = 'Failed: ' + e.message; return; } }
          loadGrants();
        });
        return h('tr', { 'data-grant': g.id },
          h('td', null, g.agent), h('td', { class: 'mono' }, g.tool),
          h('td', { class: 'mono' }, g.session || h('span', { class: 'muted' }, 'every session')),
          h('td', { class: 'mono grant-call' }, g.exact ? g.exact.replaceAll('\u0000', ' ') : h('span', { class: 'muted' }, 'any call')),
          h('td', null, g.by || ''), h('td', { class: 'muted small' }, relTime(g.created_at)), h('td', null, revoke));
      }))));
  };
  show(app.approvals || []);
  loadGrants();
  app.refreshApprovals();
  return { onApprovals: show };
}
