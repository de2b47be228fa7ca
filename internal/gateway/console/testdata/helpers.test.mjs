// Tests of the console's helpers that need no page: API paths, routes,
// stream kinds and the usage series. Run with `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { path, query, request, newKey, readiness } from '../static/api.js';
import { parseRoute, routeHash, pretty, splitAddr, problemLine, failureSentence } from '../static/util.js';
import { kindOf } from '../static/stream.js';
import { series, niceMax, lastDays } from '../static/usage.js';

test('API paths escape each segment and refuse dot segments', () => {
  assert.equal(path('sessions', 'a', 'chat:alice', 'events'), '/v1/sessions/a/chat%3Aalice/events');
  assert.equal(path('sessions', 'a', 'x/../../y'), '/v1/sessions/a/x%2F..%2F..%2Fy');
  assert.equal(path('sessions', 'a', '//evil.example'), '/v1/sessions/a/%2F%2Fevil.example');
  for (const bad of ['', '.', '..', '%2e', '%2E%2e']) assert.throws(() => path('sessions', bad, 'k'), /bad path segment/, bad);
  assert.equal(query({ a: '1', b: '', c: undefined, d: 'x y' }), '?a=1&d=x+y');
  assert.equal(query({}), '');
});

test('request only goes to this origin\'s API', async () => {
  const seen = [];
  globalThis.fetch = async (url) => { seen.push(url); return new Response('{}', { status: 200 }); };
  await request('GET', '/v1/agents');
  for (const bad of ['http://evil.example/v1/agents', '//evil.example/v1/x', '/v1/../auth/login', '/v1/sessions/./x', '/healthz',
    'v1/agents', '/v1\\..\\x', '/v1/a/..?x=1']) {
    await assert.rejects(request('GET', bad), /not an API path/, bad);
  }
  assert.deepEqual(seen, ['/v1/agents']);
});

test('readiness reads /readyz: degraded parts, not ready, no answer', async () => {
  const answers = [
    [200, { ready: true }],
    [200, { ready: true, degraded: [{ part: 'memory', reason: 'memory.db cannot be opened' }] }],
    [503, { ready: false, error: 'starting', code: 'not_ready' }],
  ];
  const seen = [];
  globalThis.fetch = async (url) => { seen.push(url); const [status, body] = answers.shift(); return new Response(JSON.stringify(body), { status }); };
  assert.deepEqual(await readiness(), { ready: true, degraded: [], error: '' });
  assert.deepEqual(await readiness(), { ready: true, degraded: [{ part: 'memory', reason: 'memory.db cannot be opened' }], error: '' });
  assert.deepEqual(await readiness(), { ready: false, degraded: [], error: 'starting' });
  assert.deepEqual(seen, ['/readyz', '/readyz', '/readyz']);
  globalThis.fetch = async () => { throw new TypeError('offline'); };
  assert.equal(await readiness(), null);
});

test('a failed turn is said in words', () => {
  assert.match(failureSentence('auth'), /refused the API key/);
  assert.match(failureSentence('rate_limited'), /limiting requests/);
  for (const k of ['other', '', undefined, 'constructor', 'toString']) assert.equal(failureSentence(k), 'The turn failed before the agent could answer.', String(k));
});

test('routes come from the hash and go back to it', () => {
  assert.deepEqual(parseRoute('#/chat/assistant/web%3A1'), { name: 'chat', args: ['assistant', 'web:1'] });
  assert.deepEqual(parseRoute(''), { name: '', args: [] });
  assert.deepEqual(parseRoute('#/log/a/k/%E0%A4%A'), { name: 'log', args: ['a', 'k', '%E0%A4%A'] });
  assert.equal(routeHash('log', 'a', 'k/x', 12), '#/log/a/k%2Fx/12');
  const r = parseRoute(routeHash('chat', 'a', 'we/ird?#'));
  assert.deepEqual(r.args, ['a', 'we/ird?#']);
});

test('small formats', () => {
  assert.equal(kindOf('text-delta'), 'text_delta');
  assert.equal(kindOf('approval-requested'), 'approval_requested');
  assert.deepEqual(splitAddr('a/b/c'), ['a', 'b/c']);
  assert.equal(pretty('{"a":1}'), '{\n  "a": 1\n}');
  assert.equal(pretty('not json {'), 'not json {');
  assert.match(newKey('console'), /^console-[0-9a-f]{24}$/);
  assert.notEqual(newKey(), newKey());
  assert.equal(problemLine({ file: 'agents/a.yaml', line: 5, field: 'budgets.max_steps', message: 'must be an integer' }),
    'agents/a.yaml:5: budgets.max_steps: must be an integer');
  assert.equal(problemLine({ file: 'agents/a.yaml', message: 'permission denied' }), 'agents/a.yaml: permission denied');
  assert.equal(problemLine({ message: 'x' }), 'x');
});

test('the usage series has every day, oldest first', () => {
  const now = new Date('2026-03-10T12:00:00Z');
  assert.deepEqual(lastDays(3, now), ['2026-03-08', '2026-03-09', '2026-03-10']);
  const s = series([{ key: '2026-03-09', input_tokens: 10, output_tokens: 2, cost_usd: 0.5, calls: 1 },
    { key: '2026-01-01', input_tokens: 99 }], 3, now);
  assert.deepEqual(s.map((r) => [r.day, r.input_tokens, r.cost_usd]), [['2026-03-08', 0, 0], ['2026-03-09', 10, 0.5], ['2026-03-10', 0, 0]]);
  assert.equal(niceMax(0), 1);
  assert.equal(niceMax(0.37), 0.5);
  assert.equal(niceMax(34900), 50000);
  assert.equal(niceMax(1), 1);
});
