// The chat screen: a session's conversation from its log, live tokens from
// the stream, tool calls as cards, approvals inline, and a composer whose
// messages survive a lost connection (each carries an idempotency key, so a
// retry never starts a second turn).

import { h, icon, fill, append } from './dom.js';
import { get, post, patch, path, query, newKey, APIError } from './api.js';
import { render } from './md.js';
import { show, forTool, loadRenderers } from './render.js';
import { ArtifactsPanel } from './artifacts.js';
import { fmtDuration, fmtNum, fmtUSD, fmtTime, relTime, pretty, prefs, setPref, toast, badge, copyButton, empty, errorBox, spinner, routeHash, problemsBox, failureSentence } from './util.js';

const OUTBOX = 'agentd.console.outbox'; // sessionStorage: messages not yet accepted
const PAGE = 1000;

// Keys made here that have no session yet: their log is not asked for.
const freshKeys = new Set();

// The agent tools whose result names the session of the agent they
// started or reached: their card links to its log.
const AGENT_TOOLS = ['start_background_agent', 'ask_agent', 'send_agent_message'];

// agentLogLink is "open log" for the card of an agent tool whose result
// names a session ({"session": "<agent>/<key>", …}), null otherwise.
export function agentLogLink(it) {
  if (!AGENT_TOOLS.includes(it.name) || it.status !== 'ok') return null;
  let r = it.result;
  if (typeof r === 'string') { try { r = JSON.parse(r); } catch { return null; } }
  const sess = r && typeof r.session === 'string' ? r.session : '';
  const i = sess.indexOf('/');
  if (i <= 0 || i === sess.length - 1) return null;
  return h('a', { class: 'tool-link', href: routeHash('log', sess.slice(0, i), sess.slice(i + 1)), title: 'The log of ' + sess,
    onclick: (e) => e.stopPropagation() }, icon('log'), 'open log');
}

// guardSentence says in words what a guard of the agent tools refused.
export function guardSentence(d) {
  const what = { max_hops: 'a message passed on too many times', max_depth: 'a sub-agent too deep', max_children: 'too many live sub-agents', max_live: 'too many live agents' }[d.guard] || (d.guard || 'a limit');
  const limit = d.limit ? ` (limit ${d.limit}${d.value ? ', reached ' + d.value : ''})` : '';
  return `Refused: ${what}${limit}${d.target ? ' — for ' + d.target : ''}${d.reason ? ': ' + d.reason : ''}`;
}

// dynamicAgent is the dynamic agent id as the agent list shows it, or
// null if id is none.
async function dynamicAgent(id) {
  try {
    const d = await get(path('agents', id));
    const i = d.instance;
    return i ? { id, name: i.name || i.template || id, type: i.type, model: i.model, state: i.state, dynamic: true } : null;
  } catch {
    return null;
  }
}

export function newSessionKey() {
  const d = new Date();
  const p = (n) => String(n).padStart(2, '0');
  const k = `web-${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}-${newKey('').slice(1, 5)}`;
  freshKeys.add(k);
  return k;
}

// loadEvents reads a session's whole log (in pages); null if it has none yet.
export async function loadEvents(agent, key, after = 0, signal) {
  const all = [];
  let session = null;
  for (;;) {
    let page;
    try {
      page = await get(path('sessions', agent, key, 'events') + query({ after, limit: PAGE }), { signal });
    } catch (e) {
      if (e instanceof APIError && e.status === 404) return { session: null, events: [] };
      throw e;
    }
    session = page.session;
    all.push(...(page.events || []));
    if (!page.events || page.events.length < PAGE) break;
    after = page.next;
  }
  return { session, events: all };
}

export function chatScreen(app, el, args) {
  let [agent, key] = args;
  let alive = true;
  let follow = null;
  const ctl = new AbortController();
  app.setTitle('Chat');
  el.append(spinner('Loading agents'));

  (async () => {
    let agents;
    try {
      agents = await app.getAgents();
    } catch (e) {
      fill(el, h('div', { class: 'page' }, errorBox(e)));
      return;
    }
    if (!alive) return;
    // A dynamic agent (not among the definitions the picker lists) is
    // chatted with too: it joins the list.
    const dyn = agent && !(agents || []).some((a) => a.id === agent) ? await dynamicAgent(agent) : null;
    if (!alive) return;
    if (dyn) agents = [...agents, dyn];
    const usable = (agents || []).filter((a) => a.state !== 'invalid');
    const broken = (agents || []).find((a) => a.id === agent && a.state === 'invalid');
    if (broken || !usable.length) {
      fill(el, h('div', { class: 'page' }, broken
        ? problemsBox('The file of ' + broken.id + ' does not load, so it cannot chat until the file is fixed:', broken.problems)
        : empty('No agents yet', agents && agents.length ? 'No agent file loads: the Agents page says why.' : 'Add an agent file in the data directory (agentd init writes one), and it appears here.'),
      h('p', null, h('a', { href: routeHash('agents', agent) }, 'See the agents'))));
      return;
    }
    const p = prefs();
    // The default is one of the person's own agents: a system agent (the
    // memory keeper) is chosen only by name, or when no other is usable.
    const pick = usable.find((a) => a.type !== 'system') || usable[0];
    if (!agent || !usable.some((a) => a.id === agent)) agent = usable.some((a) => a.id === p.agent) ? p.agent : pick.id;
    if (!key) key = (p.keys && p.keys[agent]) || newSessionKey();
    const want = routeHash('chat', agent, key);
    if (location.hash !== want) history.replaceState(null, '', want);
    setPref('agent', agent);
    setPref('keys', { ...(p.keys || {}), [agent]: key });
    const view = new ChatView(app, el, agents, agent, key, ctl.signal);
    app.current.view = view;
    follow = await view.start();
    if (!alive && follow) follow.stop();
  })();

  return {
    unmount() {
      alive = false;
      ctl.abort();
      if (follow) follow.stop();
      if (app.current && app.current.view) app.current.view.destroy();
    },
    onConn(state) { if (app.current && app.current.view) app.current.view.onConn(state); },
    onApprovals(list) { if (app.current && app.current.view) app.current.view.onApprovals(list); },
  };
}

class ChatView {
  constructor(app, el, agents, agent, key, signal) {
    this.app = app;
    this.el = el;
    this.agents = agents;
    this.agent = agent;
    this.key = key;
    this.addr = agent + '/' + key;
    this.signal = signal;
    this.items = new Map(); // key → item
    this.failedCalls = new Map(); // turn → model calls that failed
    this.turns = new Map(); // turn → {el, head, body}
    this.beats = new Set(); // heartbeats' turns that have not ended: hidden
    this.lastSeq = 0;
    this.running = null; // the turn running, if known
    this.state = '';
    this.pendingRender = new Set();
    this.raf = 0;
    this.lastRenderCost = 0;
    this.outbox = loadOutbox().filter((m) => m.addr === this.addr);
    this.retryTimer = null;
    this.renderers = [];
    this.build();
  }

  build() {
    const agentSel = h('select', { id: 'agent-pick', 'aria-label': 'Agent' },
      this.agents.map((a) => h('option', { value: a.id, selected: a.id === this.agent, disabled: a.state === 'invalid' },
        (a.name && a.name !== a.id ? `${a.name} (${a.id})` : a.id) + (a.state === 'invalid' ? ' — file invalid' : ''))));
    agentSel.addEventListener('change', () => {
      const p = prefs();
      const k = (p.keys && p.keys[agentSel.value]) || newSessionKey();
      location.hash = routeHash('chat', agentSel.value, k);
    });
    const newBtn = h('button', { class: 'btn btn-block', type: 'button' }, icon('plus'), 'New chat');
    newBtn.addEventListener('click', () => { location.hash = routeHash('chat', this.agent, newSessionKey()); });
    this.sessList = h('ul', { class: 'sess-list', 'aria-label': 'Chats with ' + this.agent });
    this.side = h('aside', { class: 'chat-side', 'aria-label': 'Chats' },
      h('label', { class: 'field-label', for: 'agent-pick' }, 'Agent'), agentSel, newBtn,
      h('div', { class: 'side-title' }, 'Recent chats'), this.sessList);

    const agentInfo = this.agents.find((a) => a.id === this.agent) || {};
    this.stateBadge = h('span', { class: 'head-state' });
    this.stopBtn = h('button', { class: 'btn btn-sm', type: 'button', hidden: true, title: 'Cancel the running turn' }, icon('stop'), h('span', { class: 'lbl' }, 'Stop'));
    this.stopBtn.addEventListener('click', () => this.cancel());
    const resetBtn = h('button', { class: 'btn btn-sm', type: 'button', title: 'Start the context afresh (the log keeps everything)' }, icon('reset'), h('span', { class: 'lbl' }, 'Reset'));
    resetBtn.addEventListener('click', () => this.reset());
    const logLink = h('a', { class: 'btn btn-sm', href: routeHash('log', this.agent, this.key), title: 'Every event of this session' }, icon('log'), h('span', { class: 'lbl' }, 'Log'));
    // The session's artifacts, beside the chat: shown when there are some,
    // until the person closes them.
    this.artCount = h('span', { class: 'n' });
    this.artBtn = h('button', { class: 'btn btn-sm art-toggle', type: 'button', 'aria-controls': 'artifacts', 'aria-expanded': 'false', title: 'Documents the agent made' }, icon('file'), h('span', { class: 'lbl' }, 'Artifacts'), this.artCount);
    this.artBtn.addEventListener('click', () => { this.artClosed = this.root.classList.contains('art-open'); this.showArtifacts(!this.artClosed); });
    this.art = new ArtifactsPanel(this.addr, (n) => {
      this.artCount.textContent = n ? String(n) : '';
      // On a phone the panel would cover the chat: it opens when asked.
      if (n && !this.artClosed && !matchMedia('(max-width: 760px)').matches) this.showArtifacts(true);
    }, () => { this.artClosed = true; this.showArtifacts(false); this.artBtn.focus(); });
    const sideBtn = h('button', { class: 'icon-btn side-toggle', type: 'button', 'aria-label': 'Chats', 'aria-expanded': 'false' }, icon('list'));
    sideBtn.addEventListener('click', () => {
      const on = !this.root.classList.contains('side-open');
      this.root.classList.toggle('side-open', on);
      sideBtn.setAttribute('aria-expanded', String(on));
    });
    this.nameEl = h('span', { class: 'chat-name' }, agentInfo.name || this.agent);
    this.addrEl = h('div', { class: 'chat-addr', title: this.addr }, h('span', { class: 'mono' }, this.key));
    const head = h('div', { class: 'chat-head' }, sideBtn,
      h('div', { class: 'chat-title' },
        h('div', { class: 'chat-agent' }, this.nameEl, agentInfo.model ? h('span', { class: 'muted model' }, agentInfo.model) : null),
        this.addrEl),
      this.stateBadge, h('div', { class: 'head-actions' }, this.stopBtn, resetBtn, logLink, this.artBtn));
    // An agent on the built-in echo model: say how to configure a real one.
    const banner = agentInfo.model_hint ? h('div', { class: 'banner banner-info echo-banner', role: 'note' }, icon('info'), h('span', { class: 'banner-text' }, agentInfo.model_hint)) : null;

    this.timeline = h('div', { class: 'timeline', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'polite', 'aria-relevant': 'additions' });
    this.scroller = h('div', { class: 'scroller' }, this.timeline);
    this.jump = h('button', { class: 'jump', type: 'button', hidden: true }, 'New messages ↓');
    this.jump.addEventListener('click', () => this.scrollDown(true));
    this.scroller.addEventListener('scroll', () => { if (this.nearBottom()) this.jump.hidden = true; }, { passive: true });

    this.input = h('textarea', { id: 'composer', rows: '1', placeholder: 'Message ' + (agentInfo.name || this.agent) + '…', 'aria-label': 'Message', enterkeyhint: 'send' });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        this.submit();
      }
    });
    this.input.addEventListener('input', () => this.grow());
    this.sendBtn = h('button', { class: 'send', type: 'submit', 'aria-label': 'Send' }, icon('send'));
    const form = h('form', { class: 'composer' }, this.input, this.sendBtn);
    form.addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
    this.hint = h('div', { class: 'composer-hint muted' }, 'Enter sends · Shift+Enter adds a line · / jumps here');

    this.root = h('div', { class: 'chat' }, this.side,
      h('section', { class: 'chat-main', 'aria-label': 'Chat' }, head, banner, this.scroller, this.jump, h('div', { class: 'composer-wrap' }, form, this.hint)),
      this.art.el);
    fill(this.el, this.root);
    const closeSide = () => { this.root.classList.remove('side-open'); sideBtn.setAttribute('aria-expanded', 'false'); };
    this.side.addEventListener('click', (e) => { if (e.target.closest('a')) closeSide(); });
    this.root.querySelector('.chat-main').addEventListener('click', (e) => {
      if (this.root.classList.contains('side-open') && !e.target.closest('.side-toggle')) closeSide();
    });
    this.side.addEventListener('keydown', (e) => { if (e.key === 'Escape') { closeSide(); sideBtn.focus(); } });
  }

  showArtifacts(on) {
    this.root.classList.toggle('art-open', on);
    this.artBtn.setAttribute('aria-expanded', String(on));
  }

  // refreshArtifacts reads the session's artifacts again, once for a burst
  // of artifact tool calls.
  refreshArtifacts() {
    clearTimeout(this.artTimer);
    this.artTimer = setTimeout(() => this.art.refresh(), 150);
  }

  async start() {
    this.timeline.append(spinner('Loading the conversation'));
    this.loadSessions();
    this.art.refresh();
    // Tool results a renderer row names are shown by it once the rows are here.
    loadRenderers().then((rows) => {
      this.renderers = rows;
      this.art.renderers = rows;
      if (!rows.length) return;
      for (const it of this.items.values()) if (it.kind === 'tool' && it.result !== undefined) this.touch(it);
      this.flush();
    });
    let hist;
    try {
      hist = freshKeys.has(this.key) ? { session: null, events: [] } : await loadEvents(this.agent, this.key, 0, this.signal);
    } catch (e) {
      if (e.name === 'AbortError') return null;
      fill(this.timeline, errorBox(e));
      return null;
    }
    this.timeline.replaceChildren();
    this.fresh = !hist.session;
    if (hist.session) this.setState(hist.session.state);
    for (const ev of hist.events) this.apply(ev, true);
    // Messages sent before a reload that were not accepted yet.
    for (const m of this.outbox) {
      if (!this.items.has('in-key:' + m.idem)) this.addPending(m);
    }
    if (!this.items.size) this.showEmpty();
    this.flush();
    this.scrollDown(true);
    const handler = (ev) => this.onEvent(ev);
    handler.onError = () => { this.needResub = true; };
    this.follow = this.app.follow({ session: this.addr, after: this.lastSeq }, handler);
    this.onApprovals(this.app.approvals);
    this.sendOutbox();
    this.input.focus({ preventScroll: true });
    return this.follow;
  }

  destroy() {
    clearTimeout(this.retryTimer);
    clearTimeout(this.titleTimer);
    clearTimeout(this.artTimer);
    cancelAnimationFrame(this.raf);
  }

  async loadSessions() {
    let list;
    try {
      list = await get('/v1/sessions' + query({ agent: this.agent, limit: 30 }), { signal: this.signal });
    } catch { return; /* the list is a convenience */ }
    if (!Array.isArray(list)) return; // an answer cut short (the page is leaving)
    const rows = list.filter((s) => s.key !== 'bootstrap');
    if (!rows.some((s) => s.key === this.key)) rows.unshift({ key: this.key, state: 'new', updated_at: null, address: this.addr });
    this.session = rows.find((s) => s.key === this.key);
    this.showTitle();
    if (this.renaming) return; // keep what a person is typing
    fill(this.sessList, rows.map((s) => this.sessionRow(s)));
  }

  // showTitle names the chat by its session's title, when it has one.
  showTitle() {
    const t = this.session && this.session.title;
    const a = this.agents.find((x) => x.id === this.agent) || {};
    this.nameEl.textContent = t || a.name || this.agent;
    fill(this.addrEl, t ? (a.name || this.agent) + ' · ' : null, h('span', { class: 'mono' }, this.key));
    this.app.setTitle(t || 'Chat');
  }

  // sessionRow is a chat in the list, by its title, with Rename and Close.
  sessionRow(s) {
    const current = s.key === this.key;
    const label = s.title || s.key;
    const li = h('li', { class: 'sess-item', 'data-key': s.key });
    const link = h('a', { href: routeHash('chat', this.agent, s.key), class: current ? 'current' : null, 'aria-current': current ? 'page' : null, title: s.title ? s.key : null },
      h('span', { class: ['sess-key', s.title ? null : 'mono'] }, label),
      h('span', { class: 'sess-meta' }, badge(s.state), s.updated_at ? h('span', { class: 'muted' }, relTime(s.updated_at)) : null));
    const acts = s.state === 'new' ? null : h('span', { class: 'sess-actions' },
      h('button', { class: 'icon-btn sm', type: 'button', 'aria-label': 'Rename “' + label + '”', title: 'Rename', onclick: () => this.rename(li, s) }, icon('edit')),
      s.state !== 'closed' ? h('button', { class: 'icon-btn sm', type: 'button', 'aria-label': 'Close “' + label + '”', title: 'Close', onclick: () => this.closeSession(s) }, icon('archive')) : null);
    return append(li, [link, acts]);
  }

  // rename edits a chat's title in place: Enter (or leaving the field)
  // saves, Escape cancels.
  rename(li, s) {
    const input = h('input', { type: 'text', class: 'sess-rename', value: s.title || '', maxlength: '200', placeholder: s.key, 'aria-label': 'New title for “' + (s.title || s.key) + '”' });
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const t = input.value.trim();
      if (save && t && t !== s.title) {
        try {
          await patch(path('sessions', this.agent, s.key), { title: t });
        } catch (e) {
          toast('Rename failed: ' + e.message, 'error');
        }
      }
      this.renaming = false;
      await this.loadSessions();
      const back = this.sessList.querySelector(`li[data-key="${CSS.escape(s.key)}"] a`);
      if (back && !save) back.focus();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); finish(true); }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); finish(false); }
    });
    input.addEventListener('blur', () => finish(true));
    this.renaming = true;
    fill(li, input);
    input.focus();
    input.select();
  }

  // closeSession closes a chat from the list: its log stays, and it takes
  // no new messages.
  async closeSession(s) {
    if (!confirm('Close “' + (s.title || s.key) + '”? Its log stays; it takes no new messages.')) return;
    try {
      await post(path('sessions', this.agent, s.key, 'close'));
      toast('Closed “' + (s.title || s.key) + '”');
    } catch (e) {
      toast(e.code === 'busy' ? 'That chat is working: stop its turn first, then close it.' : 'Close failed: ' + e.message, 'error');
    }
    this.loadSessions();
  }

  // titleSoon looks again for the title a model writes after a session's
  // first reply (agentd asks it once the turn has ended).
  titleSoon() {
    const a = this.agents.find((x) => x.id === this.agent) || {};
    if (a.provider === 'echo' || (this.session && this.session.title_by && this.session.title_by !== 'input')) return;
    clearTimeout(this.titleTimer);
    let tries = 0;
    const again = async () => {
      await this.loadSessions();
      if (++tries < 3 && this.session && this.session.title_by === 'input') this.titleTimer = setTimeout(again, 2000 * tries);
    };
    this.titleTimer = setTimeout(again, 1500);
  }

  showEmpty() {
    if (this.items.size || this.timeline.querySelector('.chat-empty')) return;
    const a = this.agents.find((x) => x.id === this.agent) || {};
    this.timeline.append(h('div', { class: 'chat-empty' }, h('span', { class: 'logo big', 'aria-hidden': 'true' }),
      h('p', { class: 'empty-title' }, 'Talk to ' + (a.name || this.agent)),
      a.description ? h('p', { class: 'muted' }, a.description) : null,
      h('p', { class: 'muted small' }, 'Replies stream in as they are written; tool calls show up as cards you can open.')));
  }

  setState(s) {
    this.state = s || '';
    fill(this.stateBadge, this.state ? badge(this.running ? 'running' : this.state) : null);
    // The session's row in the list follows too.
    const row = this.sessList && this.sessList.querySelector('a.current .sess-meta');
    if (row && row.firstChild && this.state) row.firstChild.replaceWith(badge(this.running ? 'running' : this.state));
    this.stopBtn.hidden = !this.running && this.state !== 'active';
    this.input.disabled = this.state === 'closed';
    this.sendBtn.disabled = this.state === 'closed';
    if (this.state === 'closed') this.input.placeholder = 'This session is closed.';
  }

  onConn(state) {
    if (state === 'connected') this.sendOutbox();
  }

  onApprovals(list) {
    // Approvals of this session that the log has not shown yet (the page
    // was opened while one waited): add them from the list.
    for (const r of list || []) {
      if (r.session !== this.addr) continue;
      const it = this.toolItem(r.turn, r.call_id, r.tool, r.args);
      if (!it.approval) {
        it.approval = { id: r.id, reason: r.reason, expires: r.expires_at, args: r.args, card: r.card, state: 'waiting' };
        this.touch(it);
      }
    }
    this.flush();
  }

  // onEvent handles an event from the stream.
  onEvent(ev) {
    if (ev.seq > 0 && ev.seq <= this.lastSeq) return;
    const bottom = this.nearBottom();
    this.apply(ev, false);
    this.schedule(bottom);
  }

  // apply folds one event into the timeline's items.
  apply(ev, historic) {
    if (ev.seq > 0) this.lastSeq = Math.max(this.lastSeq, ev.seq);
    const d = ev.data || {};
    const turn = ev.turn || 0;
    switch (ev.kind) {
      case 'input': {
        if (d.silent) break;
        if (d.source === 'heartbeat') {
          this.startBeat(ev, turn);
          break;
        }
        const pend = d.idempotency_key && this.items.get('pending:' + d.idempotency_key);
        const it = { key: 'in:' + ev.seq, kind: 'user', text: d.text, time: ev.time, source: d.source, turn };
        if (pend) {
          it.el = pend.el;
          it.place = true;
          this.items.delete(pend.key);
          this.dropOutbox(d.idempotency_key);
        }
        if (d.idempotency_key) {
          this.items.set('in-key:' + d.idempotency_key, { key: 'in-key:' + d.idempotency_key, kind: 'alias' });
          if (this.outbox.some((m) => m.idem === d.idempotency_key)) this.dropOutbox(d.idempotency_key);
        }
        this.add(it);
        break;
      }
      case 'system_message':
        if (d.silent) break;
        this.add({ key: 'ev:' + ev.seq, kind: 'system', text: d.text, origin: d.origin, time: ev.time, turn });
        break;
      case 'turn_start':
        this.running = turn;
        this.setState('active');
        if (!this.hasTurnContent(turn)) this.add({ key: 'typing:' + turn, kind: 'typing', turn });
        break;
      case 'text_delta': {
        this.dropTyping(turn);
        const k = (d.reasoning ? 'th:' : 'txt:') + turn + ':' + (d.step || 0);
        let it = this.items.get(k);
        if (!it) it = this.add({ key: k, kind: d.reasoning ? 'thought' : 'assistant', text: '', turn, live: true, attempt: d.attempt });
        if (it.final) break;
        if (it.attempt !== d.attempt) { it.text = ''; it.attempt = d.attempt; }
        it.text += d.text || '';
        it.live = true;
        this.running = turn;
        this.touch(it);
        break;
      }
      case 'text':
      case 'thought': {
        this.dropTyping(turn);
        const k = (ev.kind === 'thought' ? 'th:' : 'txt:') + turn + ':' + (d.step || 0);
        const it = this.items.get(k) || this.add({ key: k, kind: ev.kind === 'thought' ? 'thought' : 'assistant', turn });
        it.text = d.text || '';
        it.final = true;
        it.live = false;
        it.time = ev.time;
        this.touch(it);
        break;
      }
      case 'tool_call':
      case 'tool_start': {
        this.dropTyping(turn);
        const it = this.toolItem(turn, d.id, d.name, d.args);
        if (!it.status || it.status === 'pending') it.status = 'running';
        if (ev.kind === 'tool_start') it.started = Date.now();
        this.touch(it);
        break;
      }
      case 'tool_result':
      case 'tool_end': {
        const it = this.toolItem(turn, d.id, d.name);
        it.result = d.output;
        it.duration = d.duration_ms;
        it.truncated = d.truncated;
        it.status = d.interrupted ? 'interrupted' : d.is_error ? (it.approval && it.approval.state === 'denied' ? 'denied' : 'error') : 'ok';
        if (!historic && it.name === 'artifact') this.refreshArtifacts();
        this.touch(it);
        break;
      }
      case 'approval_requested': {
        this.dropTyping(turn);
        const it = this.toolItem(turn, d.call_id, d.tool, d.args);
        it.status = it.status === 'ok' || it.status === 'error' ? it.status : 'approval';
        const prev = it.approval;
        it.approval = { id: d.id, reason: d.reason, expires: d.expires_at, args: d.args, card: d.card, state: prev && prev.id === d.id ? prev.state : 'waiting' };
        if (historic) it.approval.historic = true;
        this.touch(it);
        break;
      }
      case 'approval_resolved': {
        const it = this.toolItem(turn, d.call_id, d.tool);
        it.approval = { ...(it.approval || { id: d.id }), state: d.expired ? 'expired' : d.granted ? 'granted' : 'denied', by: d.by, why: d.reason, scope: d.scope };
        if (!d.granted) it.status = 'denied';
        else if (it.status === 'approval') it.status = 'running';
        this.touch(it);
        break;
      }
      case 'turn_end': {
        if (this.beats.has(turn) && this.endBeat(turn, d)) break;
        this.dropTyping(turn);
        for (const it of this.items.values()) {
          if (it.turn === turn && it.live) { it.live = false; this.touch(it); }
          if (it.turn === turn && it.kind === 'tool' && it.status === 'running' && d.status !== 'done') { it.status = 'interrupted'; this.touch(it); }
        }
        // A reply the log holds no text for (an echo model, say).
        if (d.reply && ![...this.items.values()].some((it) => it.turn === turn && it.kind === 'assistant')) {
          this.add({ key: 'txt:' + turn + ':end', kind: 'assistant', text: d.reply, turn, final: true });
        }
        if (d.status === 'error' && !this.items.has('fail:' + turn)) {
          this.add({ key: 'fail:' + turn, kind: 'failure', message: d.reason, time: ev.time, turn, historic });
        }
        this.add({ key: 'end:' + turn, kind: 'end', turn, end: d, time: ev.time });
        if (this.running === turn || this.running === null) this.running = null;
        this.setState(this.state === 'active' ? 'idle' : this.state);
        if (!historic) {
          this.loadSessions();
          if (d.status === 'done') this.titleSoon();
        }
        break;
      }
      case 'session_state':
        if (d.state === 'idle') this.running = null;
        this.setState(d.state);
        break;
      case 'error':
        // A failed turn: said once, in words, with its details and Retry.
        this.add({ key: 'fail:' + turn, kind: 'failure', errKind: d.kind, message: d.message, time: ev.time, turn, historic });
        break;
      case 'reset':
        this.add({ key: 'ev:' + ev.seq, kind: 'divider', text: 'Context reset' + (d.reason ? ': ' + d.reason : ''), time: ev.time, turn });
        break;
      case 'summary':
        this.add({ key: 'ev:' + ev.seq, kind: 'divider', text: 'Earlier turns summarized', detail: d.text, time: ev.time, turn });
        break;
      case 'agent':
        // A guard refused an agent tool: said as a warning where it
        // happened. Starts and stops are the Agents screen's.
        if (d.op === 'guard') this.add({ key: 'ev:' + ev.seq + ':' + turn, kind: 'notice', tone: 'warn', text: guardSentence(d), time: ev.time, turn });
        break;
      case 'model_call':
        // A failed attempt is retried, or the turn fails and says so once:
        // the attempts are counted for the failure's details (the log
        // screen has each one).
        if (d.error) this.failedCalls.set(turn, (this.failedCalls.get(turn) || 0) + 1);
        break;
      default:
        break;
    }
  }

  // Heartbeats. A heartbeat is a job's periodic turn in an agent's main
  // session, the person's chat, to look around; mostly it has nothing to
  // say and answers HEARTBEAT_OK. Such a turn is not shown at all: a muted
  // line every half hour would bury the conversation, and the Jobs page
  // and `agentd jobs runs` list every heartbeat for whoever checks that
  // they run (`agentd log` shows their turns). A heartbeat's turn is
  // hidden while it runs, then dropped if it had nothing to do, or shown
  // — a failure too — under a collapsed "Heartbeat" line that holds its
  // prompt, in place of a person's message.
  startBeat(ev, turn) {
    this.beats.add(turn);
    this.add({ key: 'in:' + ev.seq, kind: 'heartbeat', text: ev.data.text, time: ev.time, turn });
    const box = this.turnBox(turn);
    box.el.hidden = true;
    box.el.classList.add('turn-heartbeat');
  }

  // endBeat ends a heartbeat's turn; it reports whether the turn had
  // nothing to do and was dropped from the timeline.
  endBeat(turn, d) {
    this.beats.delete(turn);
    const box = this.turns.get(turn);
    if (d.status !== 'done' || (d.reply || '').trim() !== 'HEARTBEAT_OK') {
      if (box) box.el.hidden = false;
      return false;
    }
    for (const [k, it] of this.items) if (it.turn === turn) { this.items.delete(k); this.pendingRender.delete(it); }
    if (box) box.el.remove();
    this.turns.delete(turn);
    if (this.running === turn || this.running === null) this.running = null;
    this.setState(this.state === 'active' ? 'idle' : this.state);
    this.showEmpty();
    return true;
  }

  hasTurnContent(turn) {
    for (const it of this.items.values()) if (it.turn === turn && (it.kind === 'assistant' || it.kind === 'tool' || it.kind === 'thought')) return true;
    return false;
  }

  dropTyping(turn) {
    const it = this.items.get('typing:' + turn);
    if (it) {
      this.items.delete(it.key);
      if (it.el) it.el.remove();
    }
  }

  toolItem(turn, id, name, args) {
    const k = 'tool:' + turn + ':' + id;
    let it = this.items.get(k);
    if (!it) it = this.add({ key: k, kind: 'tool', turn, id, name, args, status: 'pending' });
    if (name && !it.name) it.name = name;
    if (args !== undefined && it.args === undefined) it.args = args;
    return it;
  }

  add(it) {
    const empty = this.timeline.querySelector('.chat-empty');
    if (empty) empty.remove();
    const old = this.items.get(it.key);
    if (old) { Object.assign(old, it, { el: old.el }); this.touch(old); return old; }
    this.items.set(it.key, it);
    if (it.kind === 'alias') return it;
    const el = it.el || h('div', { class: 'item' });
    it.el = el;
    if (!el.parentNode || it.place) {
      delete it.place;
      this.place(it);
    }
    this.touch(it);
    return it;
  }

  // place puts an item's element where it belongs. A turn's items live in
  // one group, the message that started it first, whatever order the
  // stream brings them in (live pieces can come before the logged input).
  // Messages not accepted yet stay last.
  place(it) {
    if (it.kind === 'pending' && !it.turn) {
      this.timeline.appendChild(it.el);
      return;
    }
    if (!it.turn) {
      this.timeline.insertBefore(it.el, this.firstPending());
      return;
    }
    const box = this.turnBox(it.turn);
    if (it.kind === 'user' || it.kind === 'pending' || it.kind === 'routed' || it.kind === 'system' || it.kind === 'heartbeat') box.head.appendChild(it.el);
    else box.body.appendChild(it.el);
  }

  turnBox(turn) {
    let b = this.turns.get(turn);
    if (!b) {
      const head = h('div', { class: 'turn-head' });
      const body = h('div', { class: 'turn-body' });
      b = { el: h('div', { class: 'turn', 'data-turn': turn }, head, body), head, body };
      this.turns.set(turn, b);
      this.timeline.insertBefore(b.el, this.firstPending());
    }
    return b;
  }

  firstPending() {
    for (const x of this.items.values()) if (x.kind === 'pending' && x.el && x.el.parentNode === this.timeline) return x.el;
    return null;
  }

  touch(it) { this.pendingRender.add(it); }

  schedule(stick) {
    this.stick = this.stick || stick;
    if (this.raf) return;
    // Long replies cost more to render: render less often, never less than
    // about ten times a second.
    const wait = Math.min(100, this.lastRenderCost * 3);
    const go = () => {
      this.raf = 0;
      const t0 = performance.now();
      this.flush();
      this.lastRenderCost = performance.now() - t0;
      if (this.stick) this.scrollDown();
      else if (!this.nearBottom()) this.jump.hidden = false;
      this.stick = false;
    };
    this.raf = wait > 16 ? setTimeout(() => requestAnimationFrame(go), wait) : requestAnimationFrame(go);
  }

  flush() {
    const items = [...this.pendingRender];
    this.pendingRender.clear();
    let lastLive = null;
    for (const it of this.items.values()) if (it.live) lastLive = it;
    // The caret moves: the item that had it is drawn again without it.
    if (this.caretItem && this.caretItem !== lastLive && !items.includes(this.caretItem)) items.push(this.caretItem);
    this.caretItem = lastLive;
    for (const it of items) {
      if (!it.el || it.kind === 'alias') continue;
      const node = this.renderItem(it, it === lastLive);
      it.el.className = 'item item-' + it.kind;
      // A reply being written is announced once it is whole.
      if (it.live) it.el.setAttribute('aria-busy', 'true');
      else it.el.removeAttribute('aria-busy');
      fill(it.el, node);
    }
  }

  renderItem(it, caret) {
    switch (it.kind) {
      case 'user':
        return h('div', { class: 'bubble user' }, h('div', { class: 'md' }, render(it.text || '')),
          h('div', { class: 'meta' }, it.source && it.source !== 'api' && it.source !== 'console' ? it.source + ' · ' : '', fmtTime(it.time)));
      case 'pending': {
        const status = { sending: 'Sending…', retrying: 'Not sent yet: will retry when connected', failed: 'Not sent: ' + (it.error || 'refused') }[it.status] || '';
        const retry = it.status === 'failed' ? h('button', { class: 'link-btn', type: 'button', onclick: () => this.deliver(it.msg, true) }, 'Retry') : null;
        const drop = it.status !== 'sending' ? h('button', { class: 'link-btn', type: 'button', onclick: () => { this.dropOutbox(it.msg.idem); this.items.delete(it.key); it.el.remove(); } }, 'Discard') : null;
        return h('div', { class: ['bubble', 'user', 'pending', 'p-' + it.status] }, h('div', { class: 'md' }, render(it.text || '')),
          h('div', { class: 'meta' }, h('span', { class: 'pending-status' }, status), retry, drop));
      }
      case 'routed': {
        const [agent, key] = it.to.split(/\/(.*)/s);
        return h('div', { class: 'bubble user' }, h('div', { class: 'md' }, render(it.text || '')),
          h('div', { class: 'meta' }, 'to ', h('a', { href: '#/chat/' + encodeURIComponent(agent) + '/' + encodeURIComponent(key) }, it.to)));
      }
      case 'routed-end': {
        const [agent] = it.to.split('/');
        if (!it.end && !it.error) return h('div', { class: 'typing', 'aria-label': agent + ' is working' }, h('span'), h('span'), h('span'));
        const text = it.error || it.end.reply || it.end.reason || '(' + it.end.status + ')';
        return h('div', { class: 'bubble assistant routed-answer' }, h('div', { class: 'meta' }, agent),
          h('div', { class: 'md' }, render(text)));
      }
      case 'assistant': {
        const body = h('div', { class: 'md' }, render(it.text || ''));
        if (caret && it.live) addCaret(body);
        return h('div', { class: 'bubble assistant' + (it.live ? ' streaming' : '') }, body);
      }
      case 'thought': {
        const d = h('details', { class: 'thought' }, h('summary', null, it.live ? 'Thinking…' : 'Thought'), h('div', { class: 'md' }, render(it.text || '')));
        if (it.live) d.open = false;
        return d;
      }
      case 'typing':
        return h('div', { class: 'typing', 'aria-label': 'The agent is working' }, h('span'), h('span'), h('span'));
      case 'tool':
        return this.renderTool(it);
      case 'end':
        return this.renderEnd(it);
      case 'heartbeat':
        return h('details', { class: 'system-msg heartbeat-msg' }, h('summary', null, 'Heartbeat · ' + fmtTime(it.time)), h('div', { class: 'md' }, render(it.text || '')));
      case 'system':
        return h('details', { class: 'system-msg' }, h('summary', null, 'System message' + (it.origin ? ' from ' + it.origin : '')), h('div', { class: 'md' }, render(it.text || '')));
      case 'notice':
        return h('div', { class: ['notice', 'tone-' + (it.tone || 'info')], role: it.tone === 'error' ? 'alert' : null }, it.text);
      case 'failure':
        return this.renderFailure(it);
      case 'divider':
        return it.detail
          ? h('details', { class: 'divider' }, h('summary', null, it.text), h('div', { class: 'md' }, render(it.detail)))
          : h('div', { class: 'divider' }, h('span', null, it.text));
      default:
        return h('span');
    }
  }

  renderTool(it) {
    const words = { pending: 'queued', running: 'running', ok: 'done', error: 'error', approval: 'needs approval', denied: 'denied', interrupted: 'interrupted' };
    const open = it.el && it.el.querySelector('details.tool') ? it.el.querySelector('details.tool').open : false;
    const args = it.args === undefined ? '' : pretty(it.args);
    const res = it.result === undefined ? null : pretty(it.result);
    const details = h('details', { class: ['tool', 'ts-' + it.status], open: open || null },
      h('summary', null,
        h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, icon('tool')),
        h('span', { class: 'tool-name mono' }, it.name || 'tool'),
        h('span', { class: 'tool-status' }, it.status === 'running' ? h('span', { class: 'spin sm', 'aria-hidden': 'true' }) : null, words[it.status] || it.status),
        it.duration !== undefined ? h('span', { class: 'tool-dur muted' }, fmtDuration(it.duration)) : null,
        agentLogLink(it),
        h('span', { class: 'chev', 'aria-hidden': 'true' }, icon('chevron'))),
      h('div', { class: 'tool-body' },
        h('div', { class: 'kv-head' }, h('span', null, 'Arguments'), copyButton(() => args, 'Copy arguments')),
        h('pre', { class: 'code' }, args || '{}'),
        res !== null ? [h('div', { class: 'kv-head' }, h('span', null, it.status === 'error' || it.status === 'denied' ? 'Error' : 'Result'), copyButton(() => res, 'Copy result')),
          this.rendered(it) || h('pre', { class: ['code', it.status === 'error' || it.status === 'denied' ? 'code-error' : null] }, res || '(empty)'),
          it.truncated ? h('p', { class: 'muted small' }, 'The output was cut to the agent\'s limit.') : null]
          : h('p', { class: 'muted small' }, it.status === 'running' ? 'Running…' : 'No result yet.')));
    return [details, it.approval ? approvalPanel(this.app, { ...it.approval, tool: it.name }, () => this.touchAndFlush(it)) : null];
  }

  // rendered shows a tool's result by the renderer row that names the
  // tool (Copy result still copies it as it came); null when none does.
  rendered(it) {
    if (it.status !== 'ok') return null;
    const spec = forTool(this.renderers, it.name);
    if (!spec) return null;
    try {
      return h('div', { class: 'tool-render' }, show(spec, it.result));
    } catch {
      return null;
    }
  }

  touchAndFlush(it) { this.touch(it); this.flush(); }

  // renderFailure says why a turn failed, in words, with the error itself
  // under Details and a Retry that sends the turn's message again.
  renderFailure(it) {
    const input = this.turnInput(it.turn);
    const retry = input !== null && !it.retried && this.state !== 'closed'
      ? h('button', { class: 'btn btn-sm', type: 'button', onclick: () => { it.retried = true; this.touchAndFlush(it); this.send(input); } }, icon('retry'), 'Retry')
      : null;
    const tries = this.failedCalls.get(it.turn) || 0;
    const detail = [it.message, tries > 1 ? `(${tries} attempts at the model failed)` : ''].filter(Boolean).join('\n');
    return h('div', { class: 'failure', role: it.historic ? null : 'alert' },
      h('div', { class: 'failure-head' }, icon('warn'), h('span', { class: 'failure-text' }, failureSentence(it.errKind)), retry),
      detail ? h('details', { class: 'failure-detail' }, h('summary', null, 'Details'), h('pre', { class: 'code' }, detail)) : null);
  }

  // turnInput is the text of the message that started a turn, or null.
  turnInput(turn) {
    for (const it of this.items.values()) if (it.turn === turn && it.kind === 'user') return it.text || '';
    return null;
  }

  renderEnd(it) {
    const e = it.end || {};
    const bits = [];
    if (e.input_tokens || e.output_tokens) bits.push(`${fmtNum(e.input_tokens)} in · ${fmtNum(e.output_tokens)} out`);
    if (e.cost_usd) bits.push(fmtUSD(e.cost_usd));
    if (e.duration_ms) bits.push(fmtDuration(e.duration_ms));
    if (e.steps > 1) bits.push(e.steps + ' steps');
    // A failure is said by its own item, once.
    const bad = e.status && e.status !== 'done' && !(e.status === 'error' && this.items.has('fail:' + it.turn));
    return h('div', { class: ['turn-end', bad ? 'bad' : null] },
      bad ? h('span', { class: 'end-status', role: 'status' }, badge(e.status), ' ', e.budget ? 'budget ' + e.budget + ': ' : '', e.reason || '') : null,
      h('span', { class: 'muted' }, bits.join(' · ')));
  }

  addPending(msg) {
    this.add({ key: 'pending:' + msg.idem, kind: 'pending', text: msg.text, status: msg.status || 'retrying', msg });
  }

  submit() {
    const text = this.input.value;
    if (!text.trim() || this.state === 'closed') return;
    this.input.value = '';
    this.grow();
    this.send(text);
  }

  // send sends text as a new message (a new idempotency key: a retry of a
  // failed turn is another turn).
  send(text) {
    const msg = { addr: this.addr, idem: newKey('console'), text, at: Date.now(), status: 'sending' };
    this.outbox.push(msg);
    saveOutbox(this.addr, this.outbox);
    this.addPending(msg);
    this.flush();
    this.scrollDown(true);
    this.deliver(msg);
  }

  // deliver posts a message; a message without an answer stays in the
  // outbox and is sent again, with the same key, when the connection is back.
  async deliver(msg, manual) {
    const it = this.items.get('pending:' + msg.idem);
    if (msg.inflight) return;
    msg.inflight = true;
    if (it) { it.status = 'sending'; this.touchAndFlush(it); }
    try {
      const rc = await post(path('sessions', this.agent, this.key, 'messages'), { text: msg.text, idempotency_key: msg.idem });
      msg.accepted = true;
      freshKeys.delete(this.key);
      msg.turn = rc && rc.turn;
      if (it && this.items.has(it.key)) {
        it.status = 'sent';
        if (msg.turn && !rc.duplicate) { it.turn = msg.turn; this.place(it); }
        this.touchAndFlush(it);
      }
      // The log will show the input; until then the bubble stays as sent.
      this.dropOutbox(msg.idem, true);
      if (it && rc && rc.session && rc.session !== this.addr && rc.turn && !rc.duplicate) this.routed(it, rc);
      if (this.fresh || this.needResub) {
        this.fresh = false;
        this.needResub = false;
        if (this.follow) this.follow.resubscribe();
        this.loadSessions();
      }
    } catch (e) {
      const retry = e.status === 0 || e.status >= 500 || e.status === 429 || e.code === 'busy';
      msg.status = retry ? 'retrying' : 'failed';
      if (it) { it.status = msg.status; it.error = e.message; this.touchAndFlush(it); }
      if (retry) {
        saveOutbox(this.addr, this.outbox);
        clearTimeout(this.retryTimer);
        msg.tries = (msg.tries || 0) + 1;
        this.retryTimer = setTimeout(() => this.sendOutbox(), Math.min(15000, 1000 * 2 ** Math.min(msg.tries, 4)));
      } else if (manual) {
        toast('Not sent: ' + e.message, 'error');
      }
    } finally {
      msg.inflight = false;
    }
  }

  // routed shows a message agentd routed to another session (@agent,
  // #tag, a command another agent answers): this session's log never holds
  // it, so its bubble says where it went, and the other agent's answer is
  // shown under it once that turn ends (GET /v1/turns/{id}?wait).
  async routed(it, rc) {
    Object.assign(it, { kind: 'routed', to: rc.session });
    this.touchAndFlush(it);
    const ans = this.add({ key: 'routed-end:' + rc.turn, kind: 'routed-end', to: rc.session, turn: rc.turn });
    this.flush();
    for (let tries = 0; tries < 60; tries++) {
      try {
        const r = await get(path('turns', rc.turn) + '?wait=60s');
        if (r.done) { ans.end = r.end; break; }
      } catch (e) {
        if (e.status && e.status < 500) { ans.error = e.message; break; }
        await new Promise((ok) => setTimeout(ok, 2000));
      }
    }
    this.touchAndFlush(ans);
    this.scrollDown(true);
  }

  sendOutbox() {
    for (const m of this.outbox) if (!m.accepted && m.status !== 'failed') this.deliver(m);
  }

  dropOutbox(idem, keepItem) {
    this.outbox = this.outbox.filter((m) => m.idem !== idem);
    saveOutbox(this.addr, this.outbox);
    if (!keepItem) { /* the bubble is replaced by the logged input */ }
  }

  async cancel() {
    try {
      await post(path('sessions', this.agent, this.key, 'cancel'));
      toast('Cancelling the turn');
    } catch (e) {
      toast(e.code === 'no_turn' ? 'No turn is running.' : 'Cancel failed: ' + e.message, e.code === 'no_turn' ? 'info' : 'error');
    }
  }

  async reset() {
    if (!confirm('Reset this session\'s context? The agent forgets the conversation so far; the log keeps it.')) return;
    try {
      await post(path('sessions', this.agent, this.key, 'reset') + query({ reason: 'console' }));
    } catch (e) {
      toast('Reset failed: ' + e.message, 'error');
    }
  }

  grow() {
    const t = this.input;
    t.style.height = 'auto';
    t.style.height = Math.min(t.scrollHeight, Math.round(window.innerHeight * 0.4)) + 'px';
  }

  nearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 120;
  }

  scrollDown(force) {
    if (force || this.nearBottom() || this.stick) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.jump.hidden = true;
  }
}

// addCaret puts the blinking caret at the end of the last text block.
function addCaret(body) {
  let target = body;
  while (target.lastElementChild && !['PRE', 'TABLE', 'HR', 'BR'].includes(target.lastElementChild.tagName)) target = target.lastElementChild;
  if (target.tagName === 'CODE' && target.parentNode.tagName === 'PRE') target = body;
  target.appendChild(h('span', { class: 'caret', 'aria-hidden': 'true' }));
}

// approvalPanel shows a call waiting for a person — what it will do, as
// its tool's card says (the command with its directory and sandbox, the
// diff, the URL), else its arguments — with the answers: Allow once, Allow
// for this session, Always allow this exact call (only when the card names
// one) and Deny; or how it was answered. changed() is called after the
// person answers.
export function approvalPanel(app, a, changed) {
  if (a.state && a.state !== 'waiting') {
    const words = { granted: 'Granted', denied: 'Denied', expired: 'Expired: nobody answered in time' };
    const scope = { session: ' for this session', always: ' always, for this exact call' };
    return h('div', { class: ['approval', 'done', 'ap-' + a.state] },
      icon(a.state === 'granted' ? 'check' : 'x'),
      h('span', null, words[a.state] || a.state, scope[a.scope] || '', a.by ? ' by ' + a.by : '', a.why ? ': ' + a.why : ''));
  }
  const card = a.card && typeof a.card === 'object' ? a.card : null;
  const reason = h('input', { type: 'text', class: 'deny-reason', placeholder: 'Reason (optional)', 'aria-label': 'Reason for denying', maxlength: '500' });
  const once = h('button', { class: 'btn btn-primary btn-sm ap-once', type: 'button' }, icon('check'), 'Allow once');
  const session = h('button', { class: 'btn btn-sm ap-session', type: 'button' }, 'Allow for this session');
  const what = card && card.kind === 'url' ? 'URL' : card && card.kind === 'command' ? 'command' : 'call';
  const always = card && card.exact ? h('button', { class: 'btn btn-sm ap-always', type: 'button' }, 'Always allow this exact ' + what) : null;
  const deny = h('button', { class: 'btn btn-danger btn-sm ap-deny', type: 'button' }, icon('x'), 'Deny');
  const buttons = [once, session, always, deny].filter(Boolean);
  const msg = h('span', { class: 'ap-msg', role: 'status' });
  const act = async (ok, scope) => {
    for (const b of buttons) b.disabled = true;
    reason.disabled = true;
    msg.textContent = ok ? 'Allowing…' : 'Denying…';
    try {
      await post(path('approvals', a.id, ok ? 'grant' : 'deny'), { by: 'console', scope, reason: ok ? undefined : reason.value.trim() || undefined });
      a.state = ok ? 'granted' : 'denied';
      a.by = 'console';
      a.scope = scope;
      a.why = ok ? '' : reason.value.trim();
      app.refreshApprovals();
      if (changed) changed();
    } catch (e) {
      if (e.status === 404) {
        msg.textContent = 'No longer waiting (answered elsewhere, or expired).';
        app.refreshApprovals();
      } else {
        msg.textContent = 'Failed: ' + e.message;
        for (const b of buttons) b.disabled = false;
        reason.disabled = false;
      }
    }
  };
  once.addEventListener('click', () => act(true));
  session.addEventListener('click', () => act(true, 'session'));
  if (always) always.addEventListener('click', () => act(true, 'always'));
  deny.addEventListener('click', () => act(false));
  reason.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); act(false); } });
  const exp = a.expires ? new Date(a.expires) : null;
  return h('div', { class: 'approval waiting', role: 'group', 'aria-label': 'Approval for ' + (a.tool || 'a tool') },
    h('div', { class: 'ap-head' }, icon('shield'), h('strong', null, 'Approval needed'),
      h('span', { class: 'muted' }, ' · ', h('span', { class: 'mono' }, a.tool || 'tool'), ' wants to run'),
      exp && !Number.isNaN(exp.getTime()) ? h('span', { class: 'muted small ap-exp' }, 'until ' + fmtTime(exp)) : null),
    a.reason ? h('p', { class: 'ap-reason small muted' }, a.reason) : null,
    card ? cardView(card) : a.args !== undefined ? h('pre', { class: 'code ap-args' }, pretty(a.args)) : null,
    h('div', { class: 'ap-actions' }, ...buttons, reason, msg));
}

// cardView shows an approval card: a command with its directory and
// sandbox, a diff with its added and removed lines coloured, or a URL.
export function cardView(c) {
  const row = (name, ...v) => h('div', { class: 'ap-row' }, h('span', { class: 'ap-key muted small' }, name), h('span', { class: 'ap-val' }, ...v));
  const parts = [c.title ? h('p', { class: 'ap-title' }, c.title) : null];
  if (c.kind === 'command') {
    parts.push(h('pre', { class: 'code ap-command' }, shellJoin(c.command || [])),
      row('in', h('span', { class: 'mono ap-dir' }, c.dir || '.'), c.dir ? '' : h('span', { class: 'muted small' }, ' (the workspace)')),
      row('sandbox', h('span', { class: ['ap-sandbox', c.sandbox === 'none' ? 'ap-unsandboxed' : null] }, c.sandbox || '?')),
      c.shell ? row('shell', 'yes: a shell runs the command line') : null,
      c.input || c.input_omitted ? row('input', h('pre', { class: 'code ap-input' }, c.input || '')) : null,
      c.input_omitted ? h('p', { class: 'muted small' }, '… ' + c.input_omitted + ' bytes of the input left out') : null);
  } else if (c.kind === 'diff') {
    const lines = (c.diff || '').replace(/\n$/, '').split('\n').map((l) => {
      const cls = l.startsWith('+++') || l.startsWith('---') ? 'd-file' : l.startsWith('@@') ? 'd-hunk' : l.startsWith('+') ? 'd-add' : l.startsWith('-') ? 'd-del' : 'd-ctx';
      return h('span', { class: ['d-line', cls] }, l + '\n');
    });
    parts.push((c.paths || []).length ? row('files', h('span', { class: 'mono' }, c.paths.join(', '))) : null,
      h('pre', { class: 'code ap-diff' }, ...lines),
      c.diff_omitted ? h('p', { class: 'muted small' }, '… ' + c.diff_omitted + ' bytes of the diff left out') : null);
  } else if (c.kind === 'url') {
    parts.push(row('url', h('span', { class: 'mono ap-url' }, (c.method ? c.method + ' ' : '') + (c.url || ''))));
  }
  return h('div', { class: ['ap-card', 'ap-card-' + (c.kind || 'other')] }, ...parts.filter(Boolean));
}

// shellJoin writes argv as a POSIX shell reads it back.
function shellJoin(argv) {
  return argv.map((a) => (a !== '' && /^[A-Za-z0-9_\-./=:,+@%]+$/.test(a) ? a : "'" + a.replaceAll("'", "'\\''") + "'")).join(' ');
}

function loadOutbox() {
  try { return JSON.parse(sessionStorage.getItem(OUTBOX) || '[]') || []; } catch { return []; }
}

function saveOutbox(addr, mine) {
  try {
    const others = loadOutbox().filter((m) => m.addr !== addr);
    const keep = mine.filter((m) => !m.accepted).map(({ addr: a, idem, text, at, status }) => ({ addr: a, idem, text, at, status: status === 'sending' ? 'retrying' : status }));
    sessionStorage.setItem(OUTBOX, JSON.stringify([...others, ...keep]));
  } catch { /* storage off: the outbox lives in memory only */ }
}
