// Tests of the Extensions page's, the themes' and the artifacts' helpers
// that need no page. Run with `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validName, problem, parseSpec, checkSpec, example, groups } from '../static/ext.js';
import { varName, validValue, themeVars } from '../static/theme.js';
import { downloadHref } from '../static/artifacts.js';

const actionSchema = {
  type: 'object',
  required: ['method', 'url', 'timeout_ms'],
  additionalProperties: false,
  properties: {
    method: { type: 'string', enum: ['GET', 'POST'] },
    url: { type: 'string', minLength: 1, examples: ['https://api.example.com/v1/x'] },
    timeout_ms: { type: 'integer', minimum: 1, maximum: 60000, default: 5000 },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    read_only: { type: 'boolean' },
  },
};

test('names as agentd takes them', () => {
  for (const ok of ['a', 'web-search', 'v1.2', 'A_b-c.d', 'x'.repeat(64)]) assert.ok(validName(ok), ok);
  for (const bad of ['', '.a', 'a.', 'a..b', '../x', 'a/b', '-a', 'a b', 'x'.repeat(65), 'é']) assert.ok(!validName(bad), bad);
});

test('agentd\'s problems read as pointer and message', () => {
  assert.deepEqual(problem('/spec/url: must be a string'), { pointer: '/spec/url', message: 'must be a string' });
  assert.deepEqual(problem('/: must be an object'), { pointer: '', message: 'must be an object' });
  assert.deepEqual(problem({ pointer: '/spec/a~1b', message: 'is required' }), { pointer: '/spec/a~1b', message: 'is required' });
  assert.deepEqual(problem('something else'), { pointer: '', message: 'something else' });
});

test('the editor\'s text is checked against the schema, every problem with its pointer', () => {
  assert.equal(parseSpec('{"a":').errors[0].pointer, '/spec');
  assert.match(parseSpec('{"a":').errors[0].message, /^not valid JSON/);
  assert.deepEqual(parseSpec('[1]').errors, [{ pointer: '/spec', message: 'must be an object' }]);
  const r = checkSpec(actionSchema, JSON.stringify({ method: 'PUT', url: 3, extra: true, headers: { a: 1 } }));
  assert.deepEqual(r.errors.map((e) => e.pointer).sort(), ['/spec/extra', '/spec/headers/a', '/spec/method', '/spec/timeout_ms', '/spec/url']);
  assert.deepEqual(checkSpec(actionSchema, JSON.stringify({ method: 'GET', url: 'https://x.test', timeout_ms: 10 })).errors, []);
  assert.deepEqual(checkSpec(null, '{}').errors, [], 'no schema: only JSON is checked');
});

test('a new row starts from a smallest example its schema accepts', () => {
  const ex = example(actionSchema);
  assert.deepEqual(ex, { method: 'GET', url: 'https://api.example.com/v1/x', timeout_ms: 5000 });
  assert.deepEqual(checkSpec(actionSchema, JSON.stringify(ex)).errors, []);
  const control = { type: 'object', required: ['kind', 'value'], properties: { kind: { enum: ['bool', 'enum'] }, value: {} } };
  assert.deepEqual(example(control), { kind: 'bool', value: {} });
  assert.deepEqual(example({ type: 'array', minItems: 1, items: { type: 'string', minLength: 2 } }), ['xx']);
  assert.deepEqual(example(undefined), {});
  // The control type's schema, as agentd has it: the example fits its conditions too.
  const real = JSON.parse(readFileSync(new URL('../../../control/schema.json', import.meta.url), 'utf8'));
  const ex2 = example(real);
  assert.deepEqual(ex2, { kind: 'bool', value: false });
  assert.deepEqual(checkSpec(real, JSON.stringify(ex2)).errors, []);
  const ptrs = (spec) => checkSpec(real, JSON.stringify(spec)).errors.map((e) => e.pointer);
  assert.deepEqual(ptrs({ kind: 'bool', value: 'yes' }), ['/spec/value']);
  assert.deepEqual(ptrs({ kind: 'enum', value: 'a', options: ['a', 'a'] }), ['/spec/options/1']);
});

test('rows group by type, then name', () => {
  const g = groups([{ type: 'theme', name: 'b' }, { type: 'action', name: 'z' }, { type: 'theme', name: 'a' }]);
  assert.deepEqual(g.map((x) => [x.type, x.rows.map((r) => r.name)]), [['action', ['z']], ['theme', ['a', 'b']]]);
});

test('a theme sets only custom properties with values that load nothing', () => {
  assert.equal(varName('bg'), '--bg');
  assert.equal(varName('--accent-soft'), '--accent-soft');
  for (const bad of ['--', '--A', 'x;y', '--a b', '--a:b', '-x']) assert.equal(varName(bad), null, bad);
  for (const ok of ['#fff', '#4f46e5', 'rgb(0 0 0 / 0.4)', 'color-mix(in srgb, var(--accent) 20%, transparent)', '12px', '"Inter", system-ui, sans-serif',
    'oklch(0.7 0.1 200)', 'transparent', 0.5, 'x'.repeat(300)]) assert.ok(validValue(ok), String(ok));
  for (const bad of ['url(https://evil.example/x)', 'red; background: url(x)', 'red}body{x', 'image-set("a.png" 1x)', 'expression(alert(1))',
    '"unclosed', 'rgb(0,0,0', 'a)b(', '\\75rl(x)', '<b>', '', 'x'.repeat(301), 'attr(data-x)', 'red !important', NaN, {}]) {
    assert.ok(!validValue(bad), String(bad));
  }
  const spec = { title: 'Dusk', light: { bg: '#fff', '--text': '#111', bad: 'url(x)' }, dark: { bg: '#000' } };
  assert.deepEqual(themeVars(spec, 'light').vars, [['--bg', '#fff'], ['--text', '#111']]);
  assert.deepEqual(themeVars(spec, 'light').refused, ['bad: not a value a theme may set']);
  assert.deepEqual(themeVars(spec, 'dark').vars, [['--bg', '#000'], ['--text', '#111']], 'dark changes what light sets');
  assert.deepEqual(themeVars(null, 'dark'), { vars: [], refused: [] });
  // Every property of the built-in theme is one the console sets.
  const seed = readFileSync(new URL('../../../extension/builtin/theme/default.yaml', import.meta.url), 'utf8');
  const values = [...seed.matchAll(/^\s+(--[a-z0-9-]+): (.*)$/gm)].map((m) => [m[1], m[2].replace(/^'(.*)'$/, '$1').replace(/''/g, "'")]);
  assert.ok(values.length > 20, 'the seed has its values: ' + values.length);
  for (const [k, v] of values) assert.ok(varName(k) && validValue(v), k + ': ' + v);
});

test('an artifact downloads from its own path', () => {
  assert.equal(downloadHref('report.v2', 3), '/v1/artifacts/report.v2/download?version=3');
  assert.equal(downloadHref('r'), '/v1/artifacts/r/download');
});
