// Tests of the console's markdown renderer (static/md.js), run with
// `node --test` by console_test.go. No packages beyond node itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, toHTML, toDOM, render, safeHref, TAGS, textOf } from '../static/md.js';

const html = (s) => toHTML(parse(s));

test('text is escaped, never markup', () => {
  for (const [src, bad] of [
    ['<script>alert(1)</script>', '<script'],
    ['<img src=x onerror=alert(1)>', '<img'],
    ['**<b onclick="x">bold</b>**', '<b '],
    ['`<code>`', '<code><code>'],
    ['# <h1>title</h1>', '<h1><h1>'],
    ['| <a> | b |\n|---|---|\n| <svg onload=x> | y |', '<svg'],
    ['```html\n<iframe src=//evil>\n```', '<iframe'],
    ['> <style>*{}</style>', '<style'],
    ['- <form action=//evil>', '<form'],
  ]) {
    const out = html(src);
    assert.ok(!out.includes(bad), `${src} → ${out}`);
    assert.ok(out.includes('&lt;'), `${src} is shown as text: ${out}`);
  }
  assert.equal(html(`a & b "c" 'd'`), '<p>a &amp; b &quot;c&quot; &#39;d&#39;</p>');
});

test('only absolute http(s) URLs become links, with rel=noopener', () => {
  const refused = ['javascript:alert(1)', 'JAVASCRIPT:alert(1)', ' javascript:alert(1)', 'java\tscript:alert(1)', 'java&#x09;script:x',
    'data:text/html,<script>x</script>', 'vbscript:msgbox', 'file:///etc/passwd', '//evil.example/x', '/v1/agents', '#/chat',
    'mailto:a@b.c', 'http:/x', 'https//x', 'http://', 'https://exa mple.com', 'http://a\u0000b', 'ftp://x.org'];
  for (const u of refused) {
    assert.equal(safeHref(u), null, u);
    const out = html(`[click](${u})`);
    for (const m of out.matchAll(/href="([^"]*)"/g)) assert.match(m[1], /^https?:\/\/[^\s]+$/, `${u} → ${out}`);
    if (!/^https?:/i.test(u)) assert.ok(!/<a /.test(out), `${u} → ${out}`);
  }
  assert.equal(html('[site](https://example.com/a?b=1&c=2)'),
    '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">site</a></p>');
  assert.match(html('see https://example.org/x.'), /<a href="https:\/\/example.org\/x" [^>]*>https:\/\/example.org\/x<\/a>\.<\/p>$/);
  assert.match(html('<http://example.net>'), /<a href="http:\/\/example.net\/"/);
  // A quote cannot end the attribute: the URL parser escapes it.
  const q = html('[x](https://a.example/"onmouseover="alert(1))');
  assert.ok(!q.includes('" onmouseover'), q);
  // No link inside a link.
  assert.equal((html('[a [b](https://b.example) c](https://a.example)').match(/<a /g) || []).length, 1);
});

test('code keeps its text and a safe language class', () => {
  assert.equal(html('```js\nif (a < b && c) {}\n```'), '<pre><code class="lang-js">if (a &lt; b &amp;&amp; c) {}</code></pre>');
  assert.equal(html('```js"><script>\nx\n```'), '<pre><code class="lang-jsscript">x</code></pre>');
  assert.equal(html('use `a **b** c` here'), '<p>use <code>a **b** c</code> here</p>');
  assert.equal(html('``a ` b``'), '<p><code>a ` b</code></p>');
  assert.equal(html('```\nunclosed <b>'), '<pre><code>unclosed &lt;b&gt;</code></pre>');
});

test('blocks and emphasis', () => {
  assert.equal(html('# One\n## Two\n###### Six'), '<h1>One</h1><h2>Two</h2><h6>Six</h6>');
  assert.equal(html('a\nb\n\nc'), '<p>a<br>b</p><p>c</p>');
  assert.equal(html('**b** *i* _i_ ***bi*** ~~d~~'), '<p><strong>b</strong> <em>i</em> <em>i</em> <strong><em>bi</em></strong> <del>d</del></p>');
  assert.equal(html('*a **b** c*'), '<p><em>a <strong>b</strong> c</em></p>');
  assert.equal(html('snake_case_name and 2 * 3 * 4'), '<p>snake_case_name and 2 * 3 * 4</p>');
  assert.equal(html('\\*not em\\*'), '<p>*not em*</p>');
  assert.equal(html('- a\n- b\n  - c\n- d'), '<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>');
  assert.equal(html('3. x\n4. y'), '<ol start="3"><li>x</li><li>y</li></ol>');
  assert.equal(html('> q\n> r'), '<blockquote><p>q<br>r</p></blockquote>');
  assert.equal(html('---'), '<hr>');
  assert.equal(html('| a | b |\n|:--|--:|\n| 1 | 2 |'),
    '<table><thead><tr><th class="al-left">a</th><th class="al-right">b</th></tr></thead><tbody><tr><td class="al-left">1</td><td class="al-right">2</td></tr></tbody></table>');
});

// A document just big enough for toDOM, recording what is set.
class FakeNode {
  constructor(tag, text) { this.tag = tag; this.text = text; this.attrs = {}; this.kids = []; this.className = ''; }
  appendChild(n) { this.kids.push(n); return n; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  set innerHTML(v) { throw new Error('innerHTML set'); }
}
const fakeDoc = {
  createElement: (t) => new FakeNode(t),
  createTextNode: (s) => new FakeNode('#text', s),
  createDocumentFragment: () => new FakeNode('#fragment'),
};

function walkDOM(n, fn) { fn(n); for (const k of n.kids) walkDOM(k, fn); }

test('the DOM built has only known tags, and text only in text nodes', () => {
  const frag = render('# t\n<b>x</b> [l](https://e.example) [j](javascript:x) `c`\n\n```sh\nrm -rf /\n```', fakeDoc);
  const tags = new Set();
  walkDOM(frag, (n) => {
    if (n.tag === '#text' || n.tag === '#fragment') return;
    tags.add(n.tag);
    assert.ok(TAGS.has(n.tag), n.tag);
    for (const k of Object.keys(n.attrs)) assert.ok(['href', 'rel', 'target', 'start'].includes(k), k);
    if (n.tag === 'a') assert.match(n.attrs.href, /^https:\/\//);
  });
  assert.deepEqual([...tags].sort(), ['a', 'code', 'h1', 'p', 'pre']);
  // A node of another tag (a bug, or a hand-made tree) is shown as text.
  const odd = toDOM({ t: 'script', c: ['alert(1)'] }, fakeDoc);
  assert.equal(odd.tag, '#text');
  assert.equal(odd.text, 'alert(1)');
  const link = toDOM({ t: 'a', href: 'javascript:alert(1)', c: ['x'] }, fakeDoc);
  assert.equal(link.tag, '#text');
});

// A small fuzzer: random text from the characters that matter.
function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}
const PIECES = ['*', '**', '_', '`', '```', '~~', '[', ']', '(', ')', '<', '>', '"', "'", '&', '#', '- ', '1. ', '> ', '|', '---', '\n', '\n\n',
  ' ', '  ', '\\', 'a', 'text', 'javascript:', 'https://x.example/', 'http:', '//', 'data:', '<script>', 'onerror=', ':', '!', '\t', 'é', '😀'];

test('fuzz: any input gives a safe tree', () => {
  const r = rng(42);
  const walk = (n, depth) => {
    if (typeof n === 'string') return;
    assert.ok(TAGS.has(n.t), 'tag ' + n.t);
    assert.ok(depth < 200, 'depth');
    if (n.t === 'a') assert.ok(safeHref(n.href) && /^https?:\/\//i.test(n.href), 'href ' + n.href);
    for (const k of Object.keys(n)) assert.ok(['t', 'c', 'href', 'lang', 'start', 'align'].includes(k), 'field ' + k);
    for (const c of n.c) walk(c, depth + 1);
  };
  for (let i = 0; i < 3000; i++) {
    let src = '';
    const n = Math.floor(r() * 60);
    for (let j = 0; j < n; j++) src += PIECES[Math.floor(r() * PIECES.length)];
    const tree = parse(src);
    for (const b of tree) walk(b, 0);
    const out = toHTML(tree);
    for (const m of out.matchAll(/<\/?([a-z0-9]+)/g)) assert.ok(TAGS.has(m[1]), `tag ${m[1]} from ${JSON.stringify(src)}`);
    assert.ok(!/<a (?![^>]*href="https?:)/.test(out), 'link without an http(s) href: ' + out);
    // Nothing of the source is lost or invented as markup: the text of
    // the tree only holds characters of the source.
    const text = tree.map(textOf).join('');
    for (const ch of new Set(text)) assert.ok(src.includes(ch) || ch === '\n', `char ${JSON.stringify(ch)} from ${JSON.stringify(src)}`);
  }
});

test('hostile inputs finish quickly', () => {
  for (const src of ['*'.repeat(50000), '* a '.repeat(20000), '['.repeat(20000), '> '.repeat(20000) + 'x', '`a '.repeat(20000),
    '_a '.repeat(20000), '**a *'.repeat(10000), Array.from({ length: 2000 }, (_, i) => ' '.repeat(i % 40) + '- x').join('\n'),
    '|'.repeat(20000) + '\n|---|', 'x'.repeat(300000)]) {
    const t0 = performance.now();
    parse(src);
    const ms = performance.now() - t0;
    assert.ok(ms < 3000, `${JSON.stringify(src.slice(0, 20))}…: ${ms} ms`);
  }
});
