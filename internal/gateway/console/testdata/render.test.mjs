// Tests of the renderers' trees (render.js), with no page: what each kind
// builds from its data, and that nothing from the data becomes a tag, an
// attribute or an image source it should not. Run with `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { view, kindOf, pick, series, fmt, diffLines, lineDiff, safeImage, forTool, forWidget, choose, matches, globMatch, columnsOf, parseCSV, text, KINDS, MAX_ROWS } from '../static/render.js';

// flat lists the tags and the text of a tree.
function tags(n, out = []) {
  if (typeof n === 'string' || typeof n === 'number') return out;
  out.push(n.t);
  for (const c of n.c || []) tags(c, out);
  return out;
}
function textOf(n) {
  if (typeof n === 'string' || typeof n === 'number') return String(n);
  if (n.t === 'md') return n.text;
  return (n.c || []).map(textOf).join('');
}

test('a view outside the list is shown as JSON', () => {
  assert.equal(kindOf({ view: 'table' }), 'table');
  assert.equal(kindOf({ view: 'script' }), 'json');
  assert.equal(kindOf(null), 'json');
  assert.deepEqual(view({ view: 'html' }, '<b>x</b>'), { t: 'pre', a: { class: 'code r-json' }, c: ['<b>x</b>'] });
});

test('a table from objects, from arrays, from CSV text, from a string holding JSON, by a pointer', () => {
  const rows = [{ name: 'a', n: 1 }, { name: 'b', n: 2, extra: { x: 1 } }];
  assert.equal(view({ view: 'table' }, JSON.stringify({ result: { rows } })).t, 'dl', 'an object with no rows is shown as its pairs');
  const v = view({ view: 'table', options: { path: '/result/rows' } }, JSON.stringify({ result: { rows } }));
  const table = v.c[0];
  assert.deepEqual(table.c[0].c[0].c.map(textOf), ['name', 'n', 'extra']);
  assert.deepEqual(table.c[1].c[1].c.map(textOf), ['b', '2', '{"x":1}']);
  const usage = { group: 'day', rows: [{ key: '2026-11-26', cost_usd: 1.5, input_tokens: 12000 }] };
  const cols = view({ view: 'table', options: { columns: [{ field: 'key', title: 'Day' }, { field: 'cost_usd', title: 'Cost', format: 'money' }, { field: 'input_tokens', format: 'number' }] } }, usage);
  assert.deepEqual(cols.c[0].c[0].c[0].c.map(textOf), ['Day', 'Cost', 'input_tokens']);
  assert.deepEqual(cols.c[0].c[1].c[0].c.map(textOf), ['2026-11-26', '$1.50', '12,000']);
  const csv = view({ view: 'table' }, 'region,total\nnorth,10\n"south, far",20');
  assert.deepEqual(csv.c[0].c[0].c[0].c.map(textOf), ['region', 'total']);
  assert.deepEqual(csv.c[0].c[1].c[1].c.map(textOf), ['south, far', '20']);
  assert.deepEqual(columnsOf([], { columns: [{ field: 'k', title: 'Key' }, { field: 'v' }] }), [{ field: 'k', title: 'Key', format: undefined }, { field: 'v', title: 'v', format: undefined }]);
  assert.equal(pick({ 'a/b': { '~': 1 } }, '/a~1b/~0'), 1);
  assert.equal(pick({ a: 1 }, '/constructor'), undefined);
});

test('cells in their column\'s format', () => {
  assert.equal(text(1234567, 'number'), '1,234,567');
  assert.equal(text(0.004, 'money'), '$0.0040');
  assert.equal(text(3, 'money'), '$3.00');
  assert.equal(text(2048, 'bytes'), '2.0 KiB');
  assert.equal(text(12, 'bytes'), '12 B');
  assert.equal(text('2026-11-26T03:04:05.123Z', 'time'), '2026-11-26 03:04:05 UTC');
  assert.equal(text('soon', 'time'), 'soon');
  assert.equal(text('x', 'number'), 'x');
  assert.equal(text(null), '');
});

test('nothing is said in words, whatever the view', () => {
  for (const kind of KINDS) {
    for (const data of [[], null, undefined, '[]']) {
      if ((kind === 'code' || kind === 'markdown' || kind === 'diff' || kind === 'image') && data === '[]') continue;
      assert.deepEqual(view({ view: kind }, data), { t: 'p', a: { class: 'muted small r-empty' }, c: ['Nothing to show.'] }, kind + ' ' + JSON.stringify(data));
    }
  }
  assert.equal(view({ view: 'table', options: { path: '/missing' } }, { rows: [1] }).c[0], 'Nothing to show.');
});

test('a long table is cut and says how much is left out', () => {
  const many = Array.from({ length: MAX_ROWS + 7 }, (_, i) => ({ i }));
  const v = view({ view: 'table' }, many);
  assert.equal(v.c[0].c[1].c.length, MAX_ROWS);
  assert.equal(textOf(v.c[1]), '7 more not shown');
});

test('key-value pairs and code with its language', () => {
  const kv = view({ view: 'kv' }, { model: 'gpt', turns: 3 });
  assert.equal(kv.t, 'dl');
  assert.deepEqual(kv.c.map(textOf), ['model', 'gpt', 'turns', '3']);
  const some = view({ view: 'kv', options: { columns: [{ field: 'turns', title: 'Turns' }] } }, { model: 'gpt', turns: 3 });
  assert.deepEqual(some.c.map(textOf), ['Turns', '3']);
  const code = view({ view: 'code', options: { language: 'Go"><script>' } }, 'package main');
  assert.equal(code.c[0].a.class, 'lang-goscript');
  assert.equal(textOf(code), 'package main');
  assert.equal(view({ view: 'code' }, 'x').c[0].a.class, null);
});

test('markdown stays markdown for md.js to build', () => {
  assert.deepEqual(view({ view: 'markdown' }, '# Hi <img src=x onerror=alert(1)>'), { t: 'md', text: '# Hi <img src=x onerror=alert(1)>' });
});

test('a diff: a unified diff by its lines, two texts compared', () => {
  assert.deepEqual(diffLines('--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same').map((l) => l[0]), ['file', 'file', 'hunk', 'del', 'add', 'ctx']);
  assert.deepEqual(lineDiff(['a', 'b', 'c'], ['a', 'x', 'c']), [['ctx', ' a'], ['del', '-b'], ['add', '+x'], ['ctx', ' c']]);
  assert.deepEqual(diffLines({ before: 'a\nb', after: 'a\nb\nc' }), [['ctx', ' a'], ['ctx', ' b'], ['add', '+c']]);
  const v = view({ view: 'diff' }, { old: 'x', new: 'y' });
  assert.deepEqual(v.c.map((c) => c.a.class), ['d-del', 'd-add']);
});

test('a chart is SVG built from numbers, whatever shape they come in', () => {
  assert.deepEqual(series([{ day: 'mon', turns: 3 }, { day: 'tue', turns: 'x' }], { x: 'day', y: ['turns'] }), { labels: ['mon', 'tue'], names: ['turns'], values: [[3, 0]] });
  assert.deepEqual(series([['a', 1], ['b', 2]]).values, [[1, 2]]);
  assert.deepEqual(series({ labels: ['a', 'b'], values: [5, 6] }).values, [[5, 6]]);
  assert.deepEqual(series({ a: 1, b: 2, c: 'x' }).labels, ['a', 'b']);
  assert.deepEqual(series([{ key: 'd1', in: 1, out: 2 }], { x: 'key' }).names, ['in', 'out']);
  // The built-in usage-chart renderer over GET /v1/usage's shape.
  const usage = { group: 'day', rows: [{ key: 'mon', cost_usd: 0.5 }, { key: 'tue', cost_usd: 1.25 }], total: { cost_usd: 1.75 } };
  const bar = view({ title: 'Usage by day', view: 'chart', options: { chart: 'bar', x: 'key', y: ['cost_usd'], path: '/rows' } }, usage);
  assert.equal(bar.t, 'svg');
  assert.equal(bar.a['aria-label'], 'Usage by day');
  const t = tags(bar);
  assert.equal(t.filter((x) => x === 'rect').length, 2);
  for (const x of t) assert.ok(['svg', 'g', 'rect', 'line', 'polyline', 'circle', 'text', 'title'].includes(x), x);
  const two = view({ view: 'chart', options: { x: 'key', y: ['a', 'b'], chart: 'line' } }, [{ key: 1, a: 1, b: 2 }, { key: 2, a: 3, b: 4 }]);
  const lines = two.c.filter((c) => c.t === 'polyline');
  assert.deepEqual(lines.map((l) => l.a.class), ['r-line r-s0', 'r-line r-s1']);
  for (const l of lines) assert.match(l.a.points, /^[\d., ]+$/);
  assert.equal(view({ view: 'chart' }, 'not numbers').t, 'p');
  assert.deepEqual([0, 0.0213, 1.25, 12.6, 12345, 2500000, -0.5].map(fmt), ['0', '0.021', '1.3', '13', '12.3k', '2.5M', '-0.5']);
});

test('an image only from a data: URL of an image or agentd\'s own path', () => {
  const png = 'data:image/png;base64,iVBORw0KGgo=';
  assert.equal(safeImage(png), png);
  assert.equal(safeImage('/v1/artifacts/plot/download?version=2'), '/v1/artifacts/plot/download?version=2');
  for (const bad of ['javascript:alert(1)', 'https://evil.example/x.png', '//evil.example/x.png', 'data:text/html;base64,PGI+',
    '/v1/../auth/logout', 'data:image/png;base64,"><x', '/v1/a\\b', ' /v1/x', '/other']) {
    assert.equal(safeImage(bad), null, bad);
  }
  assert.equal(view({ view: 'image' }, png).a.src, png);
  assert.equal(view({ view: 'image' }, 'https://evil.example/x.png').t, 'p');
  assert.equal(view({ view: 'image', title: 'plot' }, png).a.alt, 'plot');
});

test('every view builds only allowed tags from hostile data', () => {
  const hostile = { '<script>': '<script>alert(1)</script>', onload: 'x', rows: [{ '<img>': 'javascript:alert(1)' }] };
  const allowed = new Set(['div', 'span', 'pre', 'code', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'dl', 'dt', 'dd', 'img', 'p',
    'svg', 'g', 'rect', 'line', 'polyline', 'circle', 'text', 'title', 'md']);
  for (const kind of KINDS) {
    for (const data of [hostile, JSON.stringify(hostile), [hostile], '<b>x</b>', null, 42]) {
      for (const t of tags(view({ view: kind }, data))) assert.ok(allowed.has(t), kind + ': ' + t);
    }
  }
});

test('renderers match by tool, content type and artifact kind, the highest priority first', () => {
  const rows = [
    { name: 'off', enabled: false, spec: { view: 'table', match: { tool: '*' }, priority: 100 } },
    { name: 'b-query', enabled: true, spec: { view: 'table', match: { tool: 'query_*' } } },
    { name: 'a-query', enabled: true, spec: { view: 'kv', match: { tool: 'query_?ales' } } },
    { name: 'git', enabled: true, spec: { view: 'diff', match: { tool: 'git_diff' }, priority: 5 } },
    { name: 'img', enabled: true, spec: { view: 'image', match: { content_type: 'image/*' } } },
    { name: 'csv', enabled: true, spec: { view: 'table', match: { artifact_kind: 'csv' } } },
    { name: 'usage-chart', enabled: true, spec: { view: 'chart', match: { content_type: 'application/vnd.agentd.usage+json' } } },
  ];
  assert.equal(forTool(rows, 'query_sales').view, 'kv', 'ties by name');
  assert.equal(forTool(rows, 'query_x').view, 'table');
  assert.equal(forTool(rows, 'git_diff').view, 'diff');
  assert.equal(forTool(rows, 'calculator'), null);
  assert.equal(choose(rows, { content_type: 'image/png' }).view, 'image');
  assert.equal(choose(rows, { artifact_kind: 'csv' }).view, 'table');
  assert.equal(choose(rows, { artifact_kind: 'markdown' }), null);
  assert.ok(!matches({ tool: 'a', artifact_kind: 'csv' }, { tool: 'a' }), 'every field given must match');
  assert.ok(!matches({}, { tool: 'a' }), 'a match must say something');
  assert.ok(globMatch('a.*', 'a.b') && !globMatch('a.*', 'axb'), 'a dot is a dot');
  assert.equal(forWidget(rows, { renderer: 'git', content_type: 'image/png' }).view, 'diff');
  assert.equal(forWidget(rows, { content_type: 'application/vnd.agentd.usage+json' }).view, 'chart');
  assert.equal(forWidget(rows, { renderer: 'off' }).view, 'json');
  assert.equal(forWidget(rows, {}).view, 'json');
});

test('CSV reads quoted fields, doubled quotes and both line ends', () => {
  assert.deepEqual(parseCSV('a,b\r\n1,"x, ""y"""\n2,\n'), [['a', 'b'], ['1', 'x, "y"'], ['2', '']]);
  assert.deepEqual(parseCSV('"multi\nline",z'), [['multi\nline', 'z']]);
  assert.deepEqual(parseCSV(''), []);
});
