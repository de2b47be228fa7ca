// Tests of the renderers' trees (render.js), with no page: what each kind
// builds from its data, and that nothing from the data becomes a tag, an
// attribute or an image source it should not. Run with `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { view, kindOf, pick, points, diffLines, lineDiff, safeImage, forTool, byName, globMatch, columnsOf, KINDS, MAX_ROWS } from '../static/render.js';

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

test('a kind outside the list is shown as JSON', () => {
  assert.equal(kindOf({ kind: 'table' }), 'table');
  assert.equal(kindOf({ kind: 'script' }), 'json');
  assert.equal(kindOf(null), 'json');
  assert.deepEqual(view({ kind: 'html' }, '<b>x</b>'), { t: 'pre', a: { class: 'code r-json' }, c: ['<b>x</b>'] });
});

test('a table from objects, from arrays, from a string holding JSON, by a path', () => {
  const rows = [{ name: 'a', n: 1 }, { name: 'b', n: 2, extra: { x: 1 } }];
  const t = view({ kind: 'table' }, JSON.stringify({ result: { rows } }));
  assert.equal(t.t, 'dl', 'no path: an object with no rows is shown as its pairs');
  const v = view({ kind: 'table', path: 'result.rows' }, JSON.stringify({ result: { rows } }));
  const table = v.c[0];
  assert.deepEqual(table.c[0].c[0].c.map(textOf), ['name', 'n', 'extra']);
  assert.deepEqual(table.c[1].c[1].c.map(textOf), ['b', '2', '{"x":1}']);
  const arr = view({ kind: 'table', columns: ['day', 'turns'] }, [['mon', 3], ['tue', 4]]);
  assert.deepEqual(arr.c[0].c[0].c[0].c.map(textOf), ['day', 'turns']);
  assert.deepEqual(arr.c[0].c[1].c[0].c.map(textOf), ['mon', '3']);
  const labelled = columnsOf([], { columns: [{ key: 'k', label: 'Key' }, 'v'] });
  assert.deepEqual(labelled, [{ key: 'k', label: 'Key' }, { key: 'v', label: 'v' }]);
});

test('a long table is cut and says how much is left out', () => {
  const many = Array.from({ length: MAX_ROWS + 7 }, (_, i) => ({ i }));
  const v = view({ kind: 'table' }, many);
  assert.equal(v.c[0].c[1].c.length, MAX_ROWS);
  assert.equal(textOf(v.c[1]), '7 more not shown');
});

test('key-value pairs and code with its language', () => {
  const kv = view({ kind: 'kv' }, { model: 'gpt', turns: 3 });
  assert.equal(kv.t, 'dl');
  assert.deepEqual(kv.c.map(textOf), ['model', 'gpt', 'turns', '3']);
  const code = view({ kind: 'code', language: 'Go"><script>' }, 'package main');
  assert.equal(code.c[0].a.class, 'lang-goscript');
  assert.equal(textOf(code), 'package main');
  assert.equal(view({ kind: 'code' }, 'x').c[0].a.class, null);
});

test('markdown stays markdown for md.js to build', () => {
  assert.deepEqual(view({ kind: 'markdown' }, '# Hi <img src=x onerror=alert(1)>'), { t: 'md', text: '# Hi <img src=x onerror=alert(1)>' });
});

test('a diff: a unified diff by its lines, two texts compared', () => {
  assert.deepEqual(diffLines('--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same').map((l) => l[0]), ['file', 'file', 'hunk', 'del', 'add', 'ctx']);
  assert.deepEqual(lineDiff(['a', 'b', 'c'], ['a', 'x', 'c']), [['ctx', ' a'], ['del', '-b'], ['add', '+x'], ['ctx', ' c']]);
  assert.deepEqual(diffLines({ before: 'a\nb', after: 'a\nb\nc' }), [['ctx', ' a'], ['ctx', ' b'], ['add', '+c']]);
  const v = view({ kind: 'diff' }, { old: 'x', new: 'y' });
  assert.deepEqual(v.c.map((c) => c.a.class), ['d-del', 'd-add']);
});

test('a chart is SVG built from numbers, whatever shape they come in', () => {
  assert.deepEqual(points([{ day: 'mon', turns: 3 }, { day: 'tue', turns: 'x' }], { x: 'day', y: 'turns' }), [['mon', 3]]);
  assert.deepEqual(points([['a', 1], ['b', 2]]), [['a', 1], ['b', 2]]);
  assert.deepEqual(points({ labels: ['a', 'b'], values: [5, 6] }), [['a', 5], ['b', 6]]);
  assert.deepEqual(points({ a: 1, b: 2 }), [['a', 1], ['b', 2]]);
  const bar = view({ kind: 'chart', title: 'Turns' }, [['mon', 3], ['tue', 6]]);
  assert.equal(bar.t, 'svg');
  const t = tags(bar);
  assert.equal(t.filter((x) => x === 'rect').length, 2);
  for (const x of t) assert.ok(['svg', 'g', 'rect', 'line', 'polyline', 'circle', 'text', 'title'].includes(x), x);
  const line = view({ kind: 'chart', chart: 'line' }, [1, 2, 3]);
  assert.equal(tags(line).filter((x) => x === 'polyline').length, 1);
  assert.match(line.c.find((c) => c.t === 'polyline').a.points, /^[\d., ]+$/);
  assert.equal(view({ kind: 'chart' }, 'not numbers').t, 'p');
});

test('an image only from a data: URL of an image or agentd\'s own path', () => {
  const png = 'data:image/png;base64,iVBORw0KGgo=';
  assert.equal(safeImage(png), png);
  assert.equal(safeImage('/v1/artifacts/plot/download?version=2'), '/v1/artifacts/plot/download?version=2');
  for (const bad of ['javascript:alert(1)', 'https://evil.example/x.png', '//evil.example/x.png', 'data:text/html;base64,PGI+',
    '/v1/../auth/logout', 'data:image/png;base64,"><x', '/v1/a\\b', ' /v1/x', '/other']) {
    assert.equal(safeImage(bad), null, bad);
  }
  assert.equal(view({ kind: 'image' }, png).a.src, png);
  assert.equal(view({ kind: 'image' }, 'https://evil.example/x.png').t, 'p');
  assert.equal(view({ kind: 'image' }, { src: png, alt: 'plot' }).a.alt, 'plot');
});

test('every kind builds only allowed tags from hostile data', () => {
  const hostile = { '<script>': '<script>alert(1)</script>', onload: 'x', rows: [{ '<img>': 'javascript:alert(1)' }] };
  const allowed = new Set(['div', 'span', 'pre', 'code', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'dl', 'dt', 'dd', 'img', 'p',
    'svg', 'g', 'rect', 'line', 'polyline', 'circle', 'text', 'title', 'md']);
  for (const kind of KINDS) {
    for (const data of [hostile, JSON.stringify(hostile), [hostile], '<b>x</b>', null, 42]) {
      for (const t of tags(view({ kind }, data))) assert.ok(allowed.has(t), kind + ': ' + t);
    }
  }
});

test('a tool\'s results find their renderer by name or glob; a widget names a renderer or a kind', () => {
  const rows = [
    { name: 'off', enabled: false, spec: { kind: 'table', tools: ['*'] } },
    { name: 'csv', enabled: true, spec: { kind: 'table', tools: ['query_*'] } },
    { name: 'git', enabled: true, spec: { kind: 'diff', tools: ['git_diff'] } },
  ];
  assert.equal(forTool(rows, 'query_sales').kind, 'table');
  assert.equal(forTool(rows, 'git_diff').kind, 'diff');
  assert.equal(forTool(rows, 'calculator'), null);
  assert.ok(globMatch('a.*', 'a.b') && !globMatch('a.*', 'axb'), 'a dot is a dot');
  assert.equal(byName(rows, 'git').kind, 'diff');
  assert.equal(byName(rows, 'chart').kind, 'chart');
  assert.equal(byName(rows, 'off').kind, 'json');
  assert.equal(pick({ a: { b: [1, 2] } }, 'a.b.1'), 2);
  assert.equal(pick({ a: 1 }, 'constructor'), undefined);
});
