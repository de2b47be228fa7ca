// The Agents screen: the agent definitions (their models, tools and
// budgets), then the tree of dynamic agents — the instances made at run
// time — with each one's type, live state, its own cost and its subtree's,
// a link to its log and a Stop button. The tree follows every session
// over one all-sessions subscription of the stream: an agent event,
// session_state and turn_end of an agent in the tree update it at once
// (turn_end's cost adds up the tree), and the tree is read again from
// GET /v1/agents/tree shortly after, and after a reconnect.

import { h, icon, fill } from './dom.js';
import { get, post, path, APIError } from './api.js';
import { fmtNum, fmtUSD, badge, empty, errorBox, spinner, routeHash, problemsBox, toast } from './util.js';
import { pageHead, chips, dl } from './screens.js';

// RELOAD_MS is how long the tree waits after an event before it reads
// itself again: a burst of events is one read.
const RELOAD_MS = 400;

// LIVE are the states of an agent that has not ended.
const LIVE = ['starting', 'running', 'idle'];

export function agentsScreen(app, el, args) {
  app.setTitle('Agents');
  let alive = true;
  const grid = h('div', { class: 'cards' }, spinner());
  const tree = new AgentTree(app);
  fill(el, h('div', { class: 'page' }, pageHead('Agents', 'Their models, what tools they may use, and their budgets; the agents they started.'), grid, tree.el));
  (async () => {
    let list;
    try { list = await app.getAgents(true); } catch (e) { fill(grid, errorBox(e)); return; }
    if (!alive) return;
    if (!list.length) { fill(grid, empty('No agents', 'Add an agent file to the data directory.')); return; }
    fill(grid, list.map((a) => definitionCard(a, args[0] === a.id)));
  })();
  tree.start();
  return {
    unmount() { alive = false; tree.stop(); },
    onConn(state) { if (state === 'connected') tree.reconnected(); },
  };
}

// definitionCard is an agent definition as a card: its model, then its
// tools and budgets once read.
function definitionCard(a, target) {
  const invalid = a.state === 'invalid';
  const detail = h('div', { class: 'agent-detail' }, invalid ? null : spinner('Loading details'));
  const card = h('article', { class: ['card', 'agent', invalid ? 'agent-invalid' : null, target ? 'target' : null], id: 'agent-' + a.id, 'aria-labelledby': 'agent-h-' + a.id },
    h('div', { class: 'card-head' },
      h('div', null, h('h2', { id: 'agent-h-' + a.id }, a.name || a.id), h('div', { class: 'muted mono small' }, invalid ? a.file || a.id : a.id, a.type ? ' · ' + a.type : '')),
      invalid ? badge('invalid') : h('a', { href: routeHash('chat', a.id), class: 'btn btn-sm' }, icon('chat'), 'Chat')),
    a.description ? h('p', { class: 'desc' }, a.description) : null,
    detail);
  if (invalid) {
    fill(detail, problemsBox('The agent file does not load, so this agent does not run until it is fixed:', a.problems));
    return card;
  }
  fill(detail, dl([['Model', h('span', { class: 'mono' }, [a.provider, a.model].filter(Boolean).join(' · ') || '—')]]));
  loadAgent(a.id, detail);
  return card;
}

// AgentTree is the forest of dynamic agents, kept live.
class AgentTree {
  constructor(app) {
    this.app = app;
    this.nodes = new Map(); // agent id → {n: node as the API gives it, parent id, row elements}
    this.body = h('div', { class: 'agent-tree-body' }, spinner('Loading the dynamic agents'));
    this.el = h('section', { class: 'agent-tree', 'aria-labelledby': 'agent-tree-h' },
      h('h2', { id: 'agent-tree-h' }, 'Dynamic agents'),
      h('p', { class: 'muted small' }, 'Agents started at run time, under the agent that started them: each one\u2019s own cost, and in bold with everything below it.'),
      this.body);
    this.timer = 0;
    this.seq = 0;
    this.follow = null;
  }

  start() {
    this.load();
    this.follow = this.app.follow({}, (ev) => this.event(ev));
  }

  stop() {
    clearTimeout(this.timer);
    this.seq++;
    if (this.follow) this.follow.stop();
    this.follow = null;
  }

  // reconnected reads the tree again: events may have been missed.
  reconnected() { this.soon(0); }

  soon(ms = RELOAD_MS) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.load(), ms);
  }

  async load() {
    const my = ++this.seq;
    let res;
    try {
      res = await get('/v1/agents/tree');
    } catch (e) {
      if (my !== this.seq) return;
      fill(this.body, e instanceof APIError && (e.status === 501 || e.status === 404) ? h('p', { class: 'muted small' }, 'This agentd runs no dynamic agents.') : errorBox(e));
      return;
    }
    if (my !== this.seq) return;
    this.render(res.nodes || []);
  }

  render(nodes) {
    this.nodes.clear();
    if (!nodes.length) {
      fill(this.body, empty('No dynamic agents', 'An agent starts one with start_background_agent; a person with agentd agents start TEMPLATE PROMPT.'));
      return;
    }
    fill(this.body, h('ul', { class: 'agent-forest', role: 'tree', 'aria-label': 'Dynamic agents' }, nodes.map((n) => this.nodeEl(n, ''))));
  }

  nodeEl(n, parent) {
    const kids = n.children || [];
    const state = h('span', { class: 'agent-state' }, badge(n.state));
    const own = h('span', { class: 'agent-cost', title: 'its own cost' }, fmtUSD(n.cost_usd));
    const total = h('strong', { class: 'agent-cost-tree', title: 'its cost and that of the agents below it' }, fmtUSD(n.cost_tree_usd ?? n.cost_usd));
    const stop = h('button', { class: 'btn btn-sm agent-stop', type: 'button', hidden: !LIVE.includes(n.state) || null, onclick: (e) => { e.preventDefault(); this.stopAgent(n); } }, icon('stop'), 'Stop');
    const [sa, sk] = splitSession(n.session || n.id + '/main');
    const row = h('div', { class: 'agent-row' },
      h('span', { class: ['badge', 'agent-type', 'type-' + String(n.type).replace(/[^a-z]/g, '')] }, n.type),
      h('span', { class: 'agent-name' }, n.name || n.template || n.id),
      h('span', { class: 'agent-id mono muted small' }, n.id),
      state, own, total,
      h('a', { class: 'agent-log btn btn-sm', href: routeHash('log', sa, sk), title: 'The log of ' + sa + '/' + sk }, icon('log'), 'Log'),
      stop);
    this.nodes.set(n.id, { n, parent, state, own, total, stop });
    const li = h('li', { class: 'agent-node', role: 'treeitem', 'data-agent': n.id, 'data-state': n.state });
    this.nodes.get(n.id).li = li;
    if (!kids.length) {
      li.append(row);
      return li;
    }
    li.append(h('details', { open: true }, h('summary', null, row),
      h('ul', { class: 'agent-children', role: 'group' }, kids.map((c) => this.nodeEl(c, n.id)))));
    return li;
  }

  // event applies a stream event of any session to the tree.
  event(ev) {
    const agent = String(ev.session || '').split('/')[0];
    const d = ev.data || {};
    if (ev.kind === 'agent' && (d.op === 'started' || d.op === 'created')) { this.soon(); return; }
    const node = this.nodes.get(agent);
    if (!node) return;
    switch (ev.kind) {
      case 'agent':
        if (d.op === 'stopped') this.setState(node, 'stopped');
        this.soon();
        break;
      case 'session_state':
        if (!LIVE.includes(node.n.state)) break;
        if (d.state === 'active') this.setState(node, 'running');
        else if (d.state === 'idle') this.soon();
        break;
      case 'turn_end':
        if (d.cost_usd) this.addCost(agent, d.cost_usd);
        this.soon();
        break;
      default:
        break;
    }
  }

  setState(node, s) {
    node.n.state = s;
    node.li.dataset.state = s;
    fill(node.state, badge(s));
    node.stop.hidden = !LIVE.includes(s);
  }

  // addCost adds a turn's cost to its agent's own and to the subtree
  // cost of it and each agent above it.
  addCost(id, usd) {
    const node = this.nodes.get(id);
    for (let cur = node; cur; cur = cur.parent ? this.nodes.get(cur.parent) : null) {
      cur.n.cost_tree_usd = (cur.n.cost_tree_usd ?? cur.n.cost_usd ?? 0) + usd;
      cur.total.textContent = fmtUSD(cur.n.cost_tree_usd);
    }
    node.n.cost_usd = (node.n.cost_usd || 0) + usd;
    node.own.textContent = fmtUSD(node.n.cost_usd);
  }

  async stopAgent(n) {
    const below = (n.children || []).length ? ' and the agents it started' : '';
    if (!confirm(`Stop ${n.name || n.id}${below}? A stopped agent does not resume.`)) return;
    try {
      const res = await post(path('agents', n.id, 'stop'), { reason: 'stopped from the console' });
      toast('Stopped ' + (res.stopped || []).length + ' agent' + ((res.stopped || []).length === 1 ? '' : 's'));
    } catch (e) {
      toast('Not stopped: ' + e.message, 'error');
    }
    this.load();
  }
}

// splitSession splits a session address "agent/key" (the key may hold
// slashes).
function splitSession(addr) {
  const i = addr.indexOf('/');
  return i < 0 ? [addr, 'main'] : [addr.slice(0, i), addr.slice(i + 1)];
}

// goDuration shortens a Go duration: 1m0s → 1m, 1h30m0s → 1h30m.
export function goDuration(v) {
  if (typeof v !== 'string' || !v) return v;
  const s = v.replace(/(\d[hm])0s$/, '$1').replace(/(\d)h0m$/, '$1h');
  return s;
}

function fmtBytes(n) {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return n / (1 << 20) + ' MiB';
  if (n >= 1024 && n % 1024 === 0) return n / 1024 + ' KiB';
  return fmtNum(n) + ' bytes';
}

function limit(v, fmt) { return v ? (fmt ? fmt(v) : String(v)) : h('span', { class: 'muted' }, 'no limit'); }

async function loadAgent(id, box) {
  let d;
  try {
    d = await get(path('agents', id));
  } catch (e) {
    fill(box, e instanceof APIError && (e.status === 404 || e.status === 405) ? h('p', { class: 'muted small' }, 'This agentd does not describe its agents\u2019 tools and budgets.') : errorBox(e));
    return;
  }
  const problems = d.problems || [];
  d = d.definition || d;
  const m = d.model || {};
  const t = d.tools || {};
  const b = d.budgets || {};
  const fallbacks = (m.fallbacks || []).map((f) => [f.provider, f.name].filter(Boolean).join(' '));
  fill(box,
    problems.length ? problemsBox('The agent file has problems; this is the last definition that loaded:', problems) : null,
    h('h3', null, 'Model'),
    dl([
      ['Provider', m.provider],
      ['Name', m.name ? h('span', { class: 'mono' }, m.name) : null],
      ['Base URL', m.base_url ? h('span', { class: 'mono' }, m.base_url) : null],
      ['API key from', m.api_key_env ? h('span', { class: 'mono' }, '$' + m.api_key_env) : null],
      ['Fallbacks', fallbacks.length ? chips(fallbacks) : null],
    ]),
    h('h3', null, 'Tools'),
    dl([
      ['Allow', chips(t.allow, 'chip-ok')],
      ['Ask', chips(t.ask, 'chip-warn')],
      ['Deny', chips(t.deny, 'chip-bad')],
      ['Timeout', goDuration(t.timeout)],
      ['Approval wait', goDuration(t.approval_timeout)],
      ['Output cap', t.max_output_bytes ? fmtBytes(t.max_output_bytes) : null],
    ]),
    h('h3', null, 'Budgets'),
    dl([
      ['Steps per turn', limit(b.max_steps)],
      ['Output tokens per turn', limit(b.max_output_tokens, fmtNum)],
      ['Cost per turn', limit(b.max_usd_per_turn, fmtUSD)],
      ['Cost per day', limit(b.max_usd_per_day, fmtUSD)],
      ['Wall time per turn', limit(goDuration(b.max_wall_time))],
    ]),
    h('h3', null, 'Servers and skills'), dl([
      ['MCP servers', Array.isArray(d.servers) ? chips(d.servers) : h('span', { class: 'muted' }, 'all')],
      ['Own servers', d.mcp_servers && Object.keys(d.mcp_servers).length ? chips(Object.keys(d.mcp_servers)) : null],
      ['Skills', Array.isArray(d.skills) ? chips(d.skills) : h('span', { class: 'muted' }, 'all')],
    ]));
}

// ---- MCP servers -----------------------------------------------------------

