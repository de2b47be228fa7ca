// The console's schema validator (static/schema.js) over the cases of the
// server's (internal/schema/testdata/*.txtar): the same errors, pointers
// and messages. Run with `node --test` by internal/schema's tests.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { compile, errorString } from '../static/schema.js';

const dir = new URL('../../../schema/testdata/', import.meta.url);

// parseTxtar reads an archive as internal/txtar does: a file starts at a
// line "-- NAME --".
function parseTxtar(text) {
  const files = new Map();
  let cur = null;
  for (const line of text.split(/(?<=\n)/)) {
    const m = /^-- (.+) --\s*$/.exec(line);
    if (m && m[1].trim() !== '') {
      cur = m[1].trim();
      files.set(cur, '');
    } else if (cur !== null) {
      files.set(cur, files.get(cur) + line);
    }
  }
  return files;
}

const archives = readdirSync(dir).filter((f) => f.endsWith('.txtar')).sort();

test('there are cases', () => assert.ok(archives.length > 1));

for (const name of archives.filter((f) => f !== 'compile.txtar')) {
  test(`cases of ${name}`, () => {
    const files = parseTxtar(readFileSync(new URL(name, dir), 'utf8'));
    const s = compile(JSON.parse(files.get('schema.json')));
    for (const [file, data] of files) {
      if (!file.endsWith('.json') || file === 'schema.json') continue;
      const want = files.get(file.replace(/\.json$/, '.errors')) || '';
      const got = s.validate(JSON.parse(data)).map((e) => errorString(e) + '\n').join('');
      assert.equal(got, want, `${name}: ${file}`);
    }
  });
}

test('schemas compile refuses', () => {
  const files = parseTxtar(readFileSync(new URL('compile.txtar', dir), 'utf8'));
  for (const [file, data] of files) {
    if (!file.endsWith('.json')) continue;
    let schema;
    try {
      schema = JSON.parse(data);
    } catch {
      continue; // not JSON: the console never has such a schema
    }
    const want = (files.get(file.replace(/\.json$/, '.error')) || '').replace(/\n$/, '');
    let got = '';
    try {
      compile(schema);
    } catch (e) {
      got = e.message;
    }
    assert.ok(got.startsWith(want) && (want === '') === (got === ''), `${file}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
});
