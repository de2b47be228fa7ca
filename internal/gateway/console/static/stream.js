// The live event stream: a WebSocket to /v1/stream on the page's own origin,
// reconnected with backoff. Each session subscription remembers the last
// stored seq it saw and resubscribes from there, so a reconnect loses no
// event. When WebSockets cannot get through (a proxy that drops upgrades)
// while the API answers, it follows the same sessions by long polling the
// events route, without the live-only kinds, and keeps trying the socket.

import { get, path, query, APIError } from './api.js';

const PING_MS = 20000;
const DEAD_MS = 45000;
const MAX_BACKOFF_MS = 15000;
const POLL_AFTER_FAILURES = 3;
const WS_RETRY_WHILE_POLLING_MS = 30000;

// kindOf turns a stream kind (text-delta) into an event kind (text_delta).
export function kindOf(k) { return String(k || '').replace(/-/g, '_'); }

export class Stream {
  // onEvent(ev, subID) gets events as {session: "agent/key", session_id, seq, turn, kind, time, data}.
  // onState(state) gets connecting | connected | reconnecting | offline.
  // onMessage(msg) gets the other messages: subscribed, replayed, error.
  constructor({ onEvent, onState, onMessage, onAuthLost }) {
    this.onEvent = onEvent || (() => {});
    this.onState = onState || (() => {});
    this.onMessage = onMessage || (() => {});
    this.onAuthLost = onAuthLost || (() => {});
    this.subs = new Map(); // id → {session, agent, after}
    this.state = 'connecting';
    this.mode = 'socket'; // or 'polling'
    this.ws = null;
    this.failures = 0; // consecutive attempts that never opened
    this.attempt = 0;
    this.timer = null;
    this.pingTimer = null;
    this.lastRecv = 0;
    this.pongs = false;
    this.stopped = true;
    this.polls = new Map(); // sub id → AbortController
    this.onOnline = () => this.reconnectNow();
    this.onOffline = () => this.setState('offline');
    this.onVisible = () => { if (document.visibilityState === 'visible' && this.state !== 'connected') this.reconnectNow(); };
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    window.addEventListener('online', this.onOnline);
    window.addEventListener('offline', this.onOffline);
    document.addEventListener('visibilitychange', this.onVisible);
    this.connect();
  }

  stop() {
    this.stopped = true;
    window.removeEventListener('online', this.onOnline);
    window.removeEventListener('offline', this.onOffline);
    document.removeEventListener('visibilitychange', this.onVisible);
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    this.stopPolling();
    this.subs.clear();
    if (this.ws) { this.ws.onclose = null; this.ws.close(1000, 'bye'); this.ws = null; }
    this.setState('offline');
  }

  setState(s) {
    if (this.state === s && this.shownMode === this.mode) return;
    this.state = s;
    this.shownMode = this.mode;
    this.onState(s, this.mode);
  }

  // subscribe follows a session ({session: "a/k", after: seq}) or an agent ({agent}).
  subscribe(id, spec) {
    const sub = { session: spec.session, agent: spec.agent, after: spec.after || 0 };
    this.subs.set(id, sub);
    this.sendSub(id, sub);
    if (this.mode === 'polling' && sub.session) this.poll(id, sub);
  }

  unsubscribe(id) {
    if (!this.subs.delete(id)) return;
    this.send({ type: 'unsubscribe', id });
    const c = this.polls.get(id);
    if (c) { c.abort(); this.polls.delete(id); }
  }

  // after returns the last stored seq a subscription has seen.
  after(id) { const s = this.subs.get(id); return s ? s.after : 0; }

  // advance records that a subscription has everything up to seq (events
  // read over REST before subscribing).
  advance(id, seq) { const s = this.subs.get(id); if (s && seq > s.after) s.after = seq; }

  sendSub(id, sub) {
    const m = { type: 'subscribe', id };
    if (sub.session) { m.session = sub.session; m.after = sub.after; }
    else if (sub.agent) m.agent = sub.agent;
    this.send(m);
  }

  send(m) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(m));
      return true;
    }
    return false;
  }

  reconnectNow() {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.attempt = 0;
    // A socket that outlived a moment offline is connected again (the
    // state said offline meanwhile).
    if (this.ws && this.ws.readyState === WebSocket.OPEN) { this.setState('connected'); return; }
    if (this.ws && this.ws.readyState === WebSocket.CONNECTING) return;
    this.connect();
  }

  connect() {
    if (this.stopped) return;
    clearTimeout(this.timer);
    if (navigator.onLine === false) { this.setState('offline'); return; }
    if (this.mode !== 'polling') this.setState(this.attempt === 0 && this.failures === 0 ? 'connecting' : 'reconnecting');
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/stream';
    let ws;
    try {
      ws = new WebSocket(url);
    } catch {
      this.retry();
      return;
    }
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.failures = 0;
      this.lastRecv = Date.now();
      if (this.mode === 'polling') { this.mode = 'socket'; this.stopPolling(); }
      for (const [id, sub] of this.subs) this.sendSub(id, sub);
      this.setState('connected');
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => this.ping(), PING_MS);
      // A connection that stays up resets the backoff.
      this.timer = setTimeout(() => { this.attempt = 0; }, 10000);
    };
    ws.onmessage = (e) => {
      this.lastRecv = Date.now();
      let m;
      try { m = JSON.parse(e.data); } catch { return; }
      this.handle(m);
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearInterval(this.pingTimer);
      clearTimeout(this.timer);
      if (this.stopped) return;
      if (!opened) this.failures++;
      this.closeReason = e.reason || '';
      this.retry();
    };
    ws.onerror = () => {};
  }

  ping() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    if (this.pongs && Date.now() - this.lastRecv > DEAD_MS) {
      // The server answers pings, and has said nothing for too long: the
      // connection is dead without knowing it.
      this.ws.close(4000, 'no answer');
      return;
    }
    this.send({ type: 'ping' });
  }

  async retry() {
    if (this.stopped) return;
    if (navigator.onLine === false) { this.setState('offline'); return; }
    if (this.mode === 'polling') {
      this.timer = setTimeout(() => this.connect(), WS_RETRY_WHILE_POLLING_MS);
      return;
    }
    this.setState('reconnecting');
    if (this.failures >= POLL_AFTER_FAILURES || (this.failures > 0 && this.attempt === 0)) {
      // Does the API answer? A 401 means the login is gone; an answer means
      // only the socket cannot get through.
      try {
        await get('/v1/version', { quiet401: true });
        if (this.failures >= POLL_AFTER_FAILURES) { this.startPolling(); return; }
      } catch (e) {
        if (e instanceof APIError && e.status === 401) { this.onAuthLost(); return; }
      }
    }
    const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** this.attempt) * (0.8 + Math.random() * 0.4);
    this.attempt++;
    this.timer = setTimeout(() => this.connect(), delay);
  }

  handle(m) {
    switch (m.type) {
      case 'event': {
        const ev = { session: m.session, session_id: m.session_id, seq: m.seq || 0, turn: m.turn || 0, kind: kindOf(m.kind), time: m.time, data: m.data || {} };
        const sub = this.subs.get(m.sub);
        if (sub && ev.seq > 0) {
          if (sub.session && ev.seq <= sub.after) return; // already seen
          if (sub.session) sub.after = ev.seq;
        }
        this.onEvent(ev, m.sub);
        return;
      }
      case 'pong':
        this.pongs = true;
        return;
      case 'subscribed':
        this.attempt = 0;
        this.onMessage(m);
        return;
      default:
        this.onMessage(m);
    }
  }

  startPolling() {
    this.mode = 'polling';
    this.setState('connected');
    for (const [id, sub] of this.subs) if (sub.session) this.poll(id, sub);
    this.timer = setTimeout(() => this.connect(), WS_RETRY_WHILE_POLLING_MS);
  }

  stopPolling() {
    for (const c of this.polls.values()) c.abort();
    this.polls.clear();
  }

  async poll(id, sub) {
    if (this.polls.has(id)) return;
    const ctl = new AbortController();
    this.polls.set(id, ctl);
    const [agent, ...rest] = sub.session.split('/');
    const key = rest.join('/');
    let delay = 0;
    while (!ctl.signal.aborted && this.mode === 'polling' && this.subs.get(id) === sub) {
      if (delay) await new Promise((r) => setTimeout(r, delay));
      try {
        const page = await get(path('sessions', agent, key, 'events') + query({ after: sub.after, limit: 500, wait: '25s' }), { signal: ctl.signal });
        delay = 0;
        if (this.state !== 'connected') this.setState('connected');
        for (const e of page.events || []) {
          if (e.seq <= sub.after) continue;
          sub.after = e.seq;
          this.onEvent({ session: sub.session, session_id: e.session, seq: e.seq, turn: e.turn || 0, kind: e.kind, time: e.time, data: e.data || {} }, id);
        }
      } catch (e) {
        if (ctl.signal.aborted) break;
        if (e instanceof APIError && e.status === 401) { this.onAuthLost(); break; }
        if (e instanceof APIError && e.status === 404) { delay = 3000; continue; } // not created yet
        this.setState(e instanceof APIError && e.status === 0 ? 'reconnecting' : this.state);
        delay = Math.min(MAX_BACKOFF_MS, (delay || 500) * 2);
      }
    }
    if (this.polls.get(id) === ctl) this.polls.delete(id);
  }
}
