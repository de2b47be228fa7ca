// The API client. Every request goes to the page's own origin: a path, never
// a URL, so nothing in the page's address (query, hash) can send the
// console's requests, or its login cookie, anywhere else.

export class APIError extends Error {
  constructor(status, code, message, errors) {
    super(message || code || 'HTTP ' + status);
    this.status = status;
    this.code = code || '';
    // errors lists every problem of an invalid document ("pointer: message").
    this.errors = Array.isArray(errors) ? errors : [];
  }
}

// A network failure (no answer at all) is status 0.
const listeners = new Set();

// onUnauthorized registers fn, called when an answer says the login is gone.
export function onUnauthorized(fn) { listeners.add(fn); }

// path joins escaped segments: path('sessions', agent, key) → /v1/sessions/a/k.
// A segment can hold anything but cannot be empty, "." or "..": a URL parser
// would fold those (even escaped) into another route.
export function path(...segs) {
  return '/v1/' + segs.map((s) => {
    s = String(s);
    if (s === '' || /^(\.|%2e){1,2}$/i.test(s)) throw new Error('api: bad path segment ' + JSON.stringify(s));
    return encodeURIComponent(s);
  }).join('/');
}

// query builds ?k=v&... leaving out empty values.
export function query(obj) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? '?' + s : '';
}

// request sends one API request. p is a path on this origin under /v1/.
// headers are more request headers (If-Match).
export async function request(method, p, body, { signal, quiet401, headers } = {}) {
  if (typeof p !== 'string' || !p.startsWith('/v1/') || p.includes('\\') || /\/\.{1,2}(\/|\?|$)/.test(p.split('?')[0])) {
    throw new Error('api: not an API path: ' + p);
  }
  const init = { method, credentials: 'same-origin', cache: 'no-store', redirect: 'error', signal, headers: { ...headers, Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(p, init);
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new APIError(0, 'network', 'cannot reach agentd');
  }
  const text = await res.text().catch(() => '');
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const err = new APIError(res.status, data && data.code, (data && data.error) || res.statusText, data && data.errors);
    if (res.status === 401 && !quiet401) for (const fn of listeners) fn(err);
    throw err;
  }
  return data;
}

export const get = (p, opts) => request('GET', p, undefined, opts);

// readiness asks GET /readyz (the one route outside /v1/ the page reads):
// {ready, degraded: [{part, reason}]} when agentd takes work, perhaps
// without some part; {ready: false, error} when it does not; null when
// agentd does not answer.
export async function readiness() {
  let res;
  try {
    res = await fetch('/readyz', { credentials: 'same-origin', cache: 'no-store', redirect: 'error', headers: { Accept: 'application/json' } });
  } catch {
    return null;
  }
  if (res.status === 401) {
    for (const fn of listeners) fn(new APIError(401, 'unauthorized', 'unauthorized'));
    return null;
  }
  const data = await res.json().catch(() => null);
  if (!data || typeof data !== 'object') return null;
  return { ready: !!data.ready, degraded: Array.isArray(data.degraded) ? data.degraded : [], error: data.error || '' };
}
export const post = (p, body, opts) => request('POST', p, body ?? {}, opts);
export const patch = (p, body, opts) => request('PATCH', p, body ?? {}, opts);
export const put = (p, body, opts) => request('PUT', p, body ?? {}, opts);
export const del = (p, opts) => request('DELETE', p, undefined, opts);

// newKey returns a random idempotency key (works outside secure contexts too).
export function newKey(prefix = 'console') {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + '-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
