// The agentd console: the shell, the router and the login.
//
// Routes live in the hash (#/chat/agent/key, #/home, #/sessions,
// #/log/agent/key, #/agents, #/mcp, #/usage, #/jobs/name, #/extensions/type/name,
// #/connectors,
// #/approvals, #/login). A route names what to
// show; it is never a server address: every request goes to this page's
// own origin (api.js).

import { h, icon, fill } from './dom.js';
import { get, post, readiness, onUnauthorized, APIError } from './api.js';
import { Stream } from './stream.js';
import { toast, parseRoute, routeHash } from './util.js';
import { chatScreen } from './chat.js';
import { sessionsScreen, logScreen, mcpScreen, approvalsScreen } from './screens.js';
import { agentsScreen } from './agents.js';
import { usageScreen } from './usage.js';
import { homeScreen } from './home.js';
import { extensionsScreen } from './ext.js';
import { jobsScreen } from './jobs.js';
import { connectorsScreen } from './connectors.js';
import { Themer } from './theme.js';

const NAV = [
  { route: 'home', label: 'Home', icon: 'home' },
  { route: 'chat', label: 'Chat', icon: 'chat' },
  { route: 'sessions', label: 'Sessions', icon: 'list' },
  { route: 'agents', label: 'Agents', icon: 'bot' },
  { route: 'mcp', label: 'MCP servers', icon: 'plug' },
  { route: 'usage', label: 'Usage', icon: 'chart' },
  { route: 'jobs', label: 'Jobs', icon: 'clock' },
  { route: 'connectors', label: 'Connectors', icon: 'send' },
  { route: 'extensions', label: 'Extensions', icon: 'blocks' },
];

// DEFINITIONS lists the agent definitions alone: the chat's and the
// filters' choices (the Agents screen shows the dynamic agents' tree).
const DEFINITIONS = '/v1/agents?dynamic=false';

const SCREENS = {
  home: homeScreen,
  chat: chatScreen,
  sessions: sessionsScreen,
  log: logScreen,
  agents: agentsScreen,
  mcp: mcpScreen,
  usage: usageScreen,
  approvals: approvalsScreen,
  jobs: jobsScreen,
  connectors: connectorsScreen,
  extensions: extensionsScreen,
};

class App {
  constructor(root) {
    this.root = root;
    this.current = null; // the mounted screen: {name, el, unmount}
    this.authed = false;
    this.handlers = new Map(); // stream subscription id → handler
    this.nextSub = 1;
    this.approvals = [];
    this.agents = null;
    this.themer = new Themer();
    this.stream = new Stream({
      onEvent: (ev, sub) => this.dispatch(ev, sub),
      onState: (s, mode) => this.showConn(s, mode),
      onMessage: (m) => this.streamMessage(m),
      onAuthLost: () => this.loggedOut(),
    });
    onUnauthorized(() => this.loggedOut());
    window.addEventListener('hashchange', () => this.route());
  }

  async boot() {
    this.root.classList.remove('booting');
    try {
      this.agents = await get(DEFINITIONS, { quiet401: true });
      this.authed = true;
    } catch (e) {
      if (!(e instanceof APIError && e.status === 401)) {
        this.shell();
        fill(this.main, h('div', { class: 'page' }, h('div', { class: 'error-box', role: 'alert' },
          'agentd did not answer: ' + e.message + '. ', h('button', { class: 'btn', type: 'button', onclick: () => location.reload() }, 'Try again'))));
        return;
      }
    }
    if (!this.authed) { this.showLogin(); return; }
    this.start();
  }

  start() {
    this.shell();
    this.stream.start();
    this.refreshReady();
    this.refreshApprovals();
    this.themer.load().catch(() => {});
    clearInterval(this.approvalTimer);
    this.approvalTimer = setInterval(() => { if (document.visibilityState === 'visible') this.refreshApprovals(); }, 15000);
    this.route();
  }

  // shell builds the header and the main area once.
  shell() {
    if (this.main) return;
    this.menuBtn = h('button', { class: 'icon-btn menu-btn', type: 'button', 'aria-label': 'Menu', 'aria-expanded': 'false', 'aria-controls': 'nav' }, icon('menu'));
    this.menuBtn.addEventListener('click', () => this.toggleMenu());
    this.navLinks = NAV.map((n) => h('a', { href: routeHash(n.route), class: 'nav-link', 'data-route': n.route, title: n.label }, icon(n.icon), h('span', null, n.label)));
    this.nav = h('nav', { id: 'nav', class: 'nav', 'aria-label': 'Main' }, this.navLinks);
    this.nav.addEventListener('click', (e) => { if (e.target.closest('a')) this.toggleMenu(false); });
    this.conn = h('span', { class: 'conn conn-connecting', role: 'status', 'aria-live': 'polite' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), h('span', { class: 'conn-text' }, 'Connecting…'));
    this.apprBadge = h('a', { href: routeHash('approvals'), class: 'appr-badge', hidden: true, 'aria-label': 'Approvals waiting' }, icon('shield'), h('span', { class: 'n' }, '0'));
    const logout = h('button', { class: 'icon-btn', type: 'button', 'aria-label': 'Sign out', title: 'Sign out' }, icon('logout'));
    logout.addEventListener('click', () => this.logout());
    this.scrim = h('div', { class: 'scrim', hidden: true });
    this.scrim.addEventListener('click', () => this.toggleMenu(false));
    const header = h('header', { class: 'top' },
      this.menuBtn,
      h('a', { class: 'brand', href: routeHash('chat'), 'aria-label': 'agentd home' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), h('span', null, 'agentd')),
      this.nav,
      h('div', { class: 'top-right' }, this.apprBadge, this.conn, logout));
    this.main = h('main', { id: 'main', class: 'main', tabindex: '-1' });
    this.banners = h('div', { class: 'banners' });
    fill(this.root, header, this.banners, this.scrim, this.main);
    if (this.keysBound) return;
    this.keysBound = true;
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') this.toggleMenu(false);
      // "/" goes to the screen's main field: the composer, or the search.
      const typing = e.target.closest && e.target.closest('input, textarea, select, [contenteditable]');
      if (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        const f = document.getElementById('composer') || document.getElementById('sess-search');
        if (f) { e.preventDefault(); f.focus(); }
      }
    });
  }

  toggleMenu(open) {
    if (!this.menuBtn) return;
    const on = open === undefined ? !this.root.classList.contains('menu-open') : open;
    this.root.classList.toggle('menu-open', on);
    this.menuBtn.setAttribute('aria-expanded', String(on));
    this.scrim.hidden = !on;
  }

  showConn(state, mode) {
    if (!this.conn) return;
    // Back after a lost connection: agentd may have restarted in another state.
    if (state === 'connected' && this.connState && this.connState !== 'connected' && this.connState !== 'connecting') this.refreshReady();
    this.connState = state;
    const words = { connecting: 'Connecting…', connected: mode === 'polling' ? 'Connected (polling)' : 'Connected', reconnecting: 'Reconnecting…', offline: 'Offline' };
    this.conn.className = 'conn conn-' + state;
    this.conn.lastChild.textContent = words[state] || state;
    this.conn.title = state === 'connected' && mode === 'polling' ? 'Live updates by polling: the WebSocket does not get through' : '';
    if (this.current && this.current.onConn) this.current.onConn(state);
  }

  // follow subscribes to a session's events; handler(ev) gets each one.
  follow(spec, handler) {
    const id = 'c' + this.nextSub++;
    this.handlers.set(id, handler);
    this.stream.subscribe(id, spec);
    return {
      id,
      after: () => this.stream.after(id),
      advance: (seq) => this.stream.advance(id, seq),
      resubscribe: () => { const after = this.stream.after(id); this.stream.unsubscribe(id); this.handlers.set(id, handler); this.stream.subscribe(id, { ...spec, after }); },
      stop: () => { this.handlers.delete(id); this.stream.unsubscribe(id); },
    };
  }

  dispatch(ev, sub) {
    if (ev.kind === 'approval_requested' || ev.kind === 'approval_resolved') this.refreshApprovals();
    const fn = this.handlers.get(sub);
    if (fn) fn(ev);
  }

  streamMessage(m) {
    const fn = m.sub && this.handlers.get(m.sub);
    if (m.type === 'error') {
      if (fn && fn.onError) fn.onError(m);
      else toast(m.error || 'stream error', 'error');
    } else if (m.type === 'replayed' && m.done) {
      if (fn && fn.onReplayed) fn.onReplayed(m);
    }
  }

  // refreshReady asks agentd whether it runs degraded (a part such as
  // long-term memory off, with why) or is not ready, and says so in a
  // banner until it is dismissed or agentd is whole again.
  async refreshReady() {
    clearTimeout(this.readyTimer);
    const r = await readiness();
    if (!r || !this.banners) return;
    // Not ready yet (starting): look again until it is.
    if (!r.ready) this.readyTimer = setTimeout(() => this.refreshReady(), 5000);
    const problems = r.ready ? r.degraded.map((d) => ({ part: String(d.part || 'a part'), reason: String(d.reason || '') })) : [{ part: '', reason: r.error || 'agentd is not ready' }];
    const key = JSON.stringify([r.ready, problems]);
    if (!problems.length || key === this.readyDismissed) {
      if (!problems.length) this.readyDismissed = null;
      fill(this.banners);
      return;
    }
    const words = { memory: 'long-term memory' };
    const dismiss = h('button', { class: 'icon-btn', type: 'button', 'aria-label': 'Dismiss', title: 'Dismiss' }, icon('close'));
    dismiss.addEventListener('click', () => { this.readyDismissed = key; fill(this.banners); });
    fill(this.banners, h('div', { class: 'banner banner-warn ready-banner', role: 'alert' }, icon('warn'),
      h('div', { class: 'banner-text' }, r.ready
        ? [h('p', null, h('strong', null, 'agentd is running degraded.'), ' Conversations work without:'),
          problems.map((p) => h('p', { class: 'degraded-part' }, (Object.hasOwn(words, p.part) ? words[p.part] : p.part) + (p.reason ? ': ' + p.reason.replace(/\.$/, '') : '') + '.'))]
        : h('p', null, h('strong', null, 'agentd is not ready: '), problems[0].reason)),
      dismiss));
  }

  async refreshApprovals() {
    try {
      this.approvals = (await get('/v1/approvals')) || [];
    } catch {
      return;
    }
    const n = this.approvals.length;
    if (this.apprBadge) {
      this.apprBadge.hidden = n === 0;
      this.apprBadge.querySelector('.n').textContent = String(n);
      this.apprBadge.setAttribute('aria-label', n + (n === 1 ? ' approval waiting' : ' approvals waiting'));
    }
    if (this.current && this.current.onApprovals) this.current.onApprovals(this.approvals);
  }

  route() {
    if (!this.authed) { this.showLogin(); return; }
    let { name, args } = parseRoute(location.hash);
    if (name === 'login' || !SCREENS[name]) {
      name = 'chat';
      args = [];
      history.replaceState(null, '', routeHash('chat'));
    }
    if (this.current && this.current.unmount) this.current.unmount();
    const el = h('div', { class: 'screen screen-' + name });
    fill(this.main, el);
    for (const a of this.navLinks) {
      const on = a.dataset.route === name || (name === 'log' && a.dataset.route === 'sessions');
      a.classList.toggle('active', on);
      if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    this.current = { name, el };
    const screen = SCREENS[name](this, el, args) || {};
    Object.assign(this.current, screen);
    this.toggleMenu(false);
  }

  setTitle(t) { document.title = t ? t + ' · agentd' : 'agentd'; }

  async getAgents(force) {
    if (!this.agents || force) this.agents = await get(DEFINITIONS);
    return this.agents;
  }

  showLogin(message) {
    this.authed = false;
    this.stream.stop();
    clearInterval(this.approvalTimer);
    clearTimeout(this.readyTimer);
    if (this.current && this.current.unmount) this.current.unmount();
    this.current = null;
    this.main = null;
    this.banners = null;
    this.handlers.clear();
    this.root.classList.remove('menu-open');
    this.setTitle('Sign in');
    if (location.hash !== '#/login') this.returnTo = location.hash;
    history.replaceState(null, '', '#/login');
    const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'login-help' });
    const reveal = h('button', { type: 'button', class: 'icon-btn reveal', 'aria-label': 'Show token', 'aria-pressed': 'false' }, icon('eye'));
    reveal.addEventListener('click', () => {
      const show = input.type === 'password';
      input.type = show ? 'text' : 'password';
      reveal.setAttribute('aria-pressed', String(show));
      reveal.setAttribute('aria-label', show ? 'Hide token' : 'Show token');
    });
    const err = h('p', { class: 'login-error', role: 'alert' }, message || '');
    const btn = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign in');
    const form = h('form', { class: 'login-card', 'aria-labelledby': 'login-title' },
      h('div', { class: 'login-logo', 'aria-hidden': 'true' }, h('span', { class: 'logo big' })),
      h('h1', { id: 'login-title' }, 'Sign in to agentd'),
      h('label', { for: 'token' }, 'Access token'),
      h('div', { class: 'token-field' }, input, reveal),
      h('p', { id: 'login-help', class: 'hint' }, 'Print it on the machine that runs agentd with ', h('code', null, 'agentd token'), '.'),
      err, btn);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      err.textContent = '';
      btn.disabled = true;
      btn.textContent = 'Signing in…';
      const token = input.value.trim();
      try {
        await post('/v1/auth/login', { token }, { quiet401: true });
        input.value = '';
        this.authed = true;
        this.agents = null;
        const back = this.returnTo && this.returnTo !== '#/login' ? this.returnTo : routeHash('chat');
        history.replaceState(null, '', back);
        this.start();
      } catch (ex) {
        err.textContent = ex.status === 401 ? 'That token is not valid.' : ex.status === 429 ? 'Too many attempts; wait a minute and try again.' : 'Could not sign in: ' + ex.message;
        btn.disabled = false;
        btn.textContent = 'Sign in';
        input.select();
      }
    });
    fill(this.root, h('main', { class: 'login' }, form));
    input.focus();
  }

  loggedOut() {
    if (!this.authed) return;
    this.showLogin('Your session ended; sign in again.');
  }

  async logout() {
    try { await post('/v1/auth/logout', {}, { quiet401: true }); } catch { /* gone already */ }
    this.returnTo = null;
    this.showLogin();
  }
}

const app = new App(document.getElementById('app'));
app.boot();
