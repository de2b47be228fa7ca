// Tests of the Jobs page's helpers that need no page: triggers in words,
// relative times, times in a fixed time zone. Run with `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { triggerWords, jobState, relativeTo, inZone, took, preview, upcoming, soon } from '../static/jobs.js';

test('triggers in words', () => {
  for (const [t, want] of [
    [{ cron: '0 8 * * 1-5', tz: 'Europe/Berlin' }, 'cron 0 8 * * 1-5 (Europe/Berlin)'],
    [{ cron: '@daily', catch_up: 'all' }, 'cron @daily (UTC)'],
    [{ every: '2s' }, 'every 2s'],
    [{ at: '2026-12-01T08:00:00Z' }, 'at 2026-12-01T08:00:00Z'],
    [{ webhook: { secret_env: 'HOOK_SECRET' } }, 'webhook'],
    [{ watch: { path: 'notes', glob: '*.md' } }, 'watch notes (*.md)'],
    [{ watch: { path: '/srv/in' } }, 'watch /srv/in'],
    [{ chain: { after: 'build' } }, 'after build succeeds'],
    [{ chain: { after: 'build', on: 'failure' } }, 'after build fails'],
    [{ chain: { after: 'build', on: 'either' } }, 'after build ends'],
    [{ heartbeat: { every: '30m', quiet_hours: '22:00-07:00' } }, 'heartbeat every 30m (quiet 22:00-07:00)'],
    [{ heartbeat: { every: '1h' } }, 'heartbeat every 1h'],
    [{ someday: {} }, 'someday'],
    [{}, '?'],
    [null, '?'],
  ]) assert.equal(triggerWords(t), want, JSON.stringify(t));
});

test('a job is active, paused or in error', () => {
  assert.equal(jobState({ enabled: true }), 'active');
  assert.equal(jobState({ enabled: false, error: 'x' }), 'paused');
  assert.equal(jobState({ enabled: true, error: 'agent nope does not exist' }), 'error');
});

test('times relative to now', () => {
  const now = '2026-11-26T08:00:00Z';
  for (const [t, want] of [
    ['2026-11-26T08:00:00.300Z', 'now'],
    ['2026-11-26T08:00:04Z', 'in 4 s'],
    ['2026-11-26T08:00:59.600Z', 'in 1 min'],
    ['2026-11-26T08:04:10Z', 'in 4 min'],
    ['2026-11-26T11:00:00Z', 'in 3 h'],
    ['2026-11-29T08:00:00Z', 'in 3 d'],
    ['2026-11-26T07:59:58Z', '2 s ago'],
    ['2026-11-26T07:30:00Z', '30 min ago'],
    ['nonsense', ''],
  ]) assert.equal(relativeTo(t, now), want, t);
});

test('times in a fixed zone, with its name', () => {
  assert.equal(inZone('2026-11-26T08:00:02Z', 'Asia/Kolkata', 'en-GB'), '26 Nov 2026, 13:30:02 GMT+5:30');
  assert.equal(inZone('2026-11-26T08:00:02Z', 'UTC', 'en-GB'), '26 Nov 2026, 08:00:02 UTC');
  // Berlin in summer and in winter: the zone's name follows the date.
  assert.equal(inZone('2026-07-01T06:00:00Z', 'Europe/Berlin', 'en-GB'), '1 Jul 2026, 08:00:00 CEST');
  assert.equal(inZone('2026-12-01T07:00:00Z', 'Europe/Berlin', 'en-GB'), '1 Dec 2026, 08:00:00 CET');
  assert.equal(inZone('not a time', 'UTC', 'en-GB'), '');
});

test('a run\'s duration, its output in short, the fires still ahead', () => {
  assert.equal(took({ started: '2026-11-26T08:00:00Z', ended: '2026-11-26T08:00:04.100Z' }, '2026-11-26T09:00:00Z'), 4100);
  assert.equal(took({ started: '2026-11-26T08:00:00Z' }, '2026-11-26T08:00:02Z'), 2000);
  assert.equal(took({}, '2026-11-26T08:00:02Z'), null);
  assert.equal(preview('a\n  b\tc'), 'a b c');
  assert.equal(preview('x'.repeat(200), 10), 'x'.repeat(9) + '…');
  const job = { next: '2026-11-26T08:00:01Z', next_fires: ['2026-11-26T08:00:01Z', '2026-11-26T08:00:02Z', '2026-11-26T08:00:03Z'] };
  assert.deepEqual(upcoming(job, '2026-11-26T08:00:01.600Z'), ['2026-11-26T08:00:02Z', '2026-11-26T08:00:03Z']);
  assert.deepEqual(upcoming({ next: '2026-11-26T08:00:01Z' }, '2026-11-26T08:00:00Z'), ['2026-11-26T08:00:01Z']);
  assert.deepEqual(upcoming({ enabled: false }, '2026-11-26T08:00:00Z'), []);
});

test('the pages read again soon while a run is open or a fire comes, else slowly', () => {
  const now = '2026-11-26T08:00:00Z';
  assert.equal(soon(true, [], now), 2000);
  assert.equal(soon(false, [], now), 15000);
  assert.equal(soon(false, ['2026-11-26T08:00:05Z', '2026-11-26T08:00:01Z'], now), 2000);
  assert.equal(soon(false, ['2026-11-26T08:00:05Z', '2026-11-26T07:59:00Z'], now), 6000);
  assert.equal(soon(false, ['2026-11-26T09:00:00Z'], now), 15000);
});
