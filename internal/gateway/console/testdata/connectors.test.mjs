// Tests of the Connectors page's helpers that need no page: codes as
// their users got them, refusals and delivery events in words. Run with
// `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { showCode, refusedWords, deliverySentence } from '../static/connectors.js';

test('a code is shown as its user got it', () => {
  assert.equal(showCode('K7PQM2XD'), 'K7PQ-M2XD');
  assert.equal(showCode('SHORT'), 'SHORT');
  assert.equal(showCode(undefined), '');
});

test('refusals in words, by reason', () => {
  assert.equal(refusedWords({ pairing: 3, group: 2, mention: 40 }), 'group 2, mention 40, pairing 3');
  assert.equal(refusedWords(null), '');
});

test('a delivery event in words', () => {
  assert.equal(deliverySentence({ op: 'failed', connector: 'tg', platform: 'telegram', tries: 10, error: 'telegram: 403 Forbidden' }),
    'Not delivered to tg (telegram) after 10 tries: telegram: 403 Forbidden');
  assert.equal(deliverySentence({ op: 'in_doubt', connector: 'tg', platform: 'telegram' }), 'Sent again to tg (telegram) after a restart: it may show twice');
  assert.equal(deliverySentence({ op: 'retried', connector: 'dc' }), 'Retried on dc');
  assert.equal(deliverySentence(null), 'delivery on ?');
});
