// End-to-end test of the console's Jobs page in headless Chromium
// (harness.mjs says how cmd/agentd/console_jobs_test.go runs it, with the
// browser in the time zone Asia/Kolkata while agentd's machine is on
// UTC): a job `every: 1s` is listed with its triggers in words and its
// next fire in the viewer's zone, its runs appear in its history (paged),
// Run now adds a run, Pause stops the next fires showing and Resume
// brings them back; a run opens its session in the chat; the pages fit a
// phone.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, shot, finish } from './harness.mjs';

const ZONE = 'Asia/Kolkata';
const snap = async (name) => {
  await page.evaluate(() => { for (const t of document.querySelectorAll('.toast')) t.remove(); });
  await shot(name);
};
// inKolkata is t as the page must show it: in the viewer's zone, in the
// browser's language.
const inKolkata = async (t) => {
  const lang = await page.evaluate(() => navigator.language);
  return new Intl.DateTimeFormat(lang, {
    timeZone: ZONE, year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
  }).format(new Date(t));
};
const runs = async (limit = 1000) => (await api('GET', '/v1/jobs/tick/runs?limit=' + limit)).runs;

try {
  await step('log in to the Jobs page', async () => {
    await page.goto(URL_ + '/#/jobs');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await page.locator('tr[data-job=tick]').waitFor();
    assert.equal(await page.locator('.nav-link[data-route=jobs]').getAttribute('aria-current'), 'page');
  });

  await step('the list: each job\'s triggers in words, its state, its next fire in the viewer\'s zone', async () => {
    // Chromium's ICU names the zone by its older alias.
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    assert.ok(['Asia/Kolkata', 'Asia/Calcutta'].includes(zone), 'the browser runs in ' + zone);
    assert.equal(await page.locator('.zone-note .viewer-zone').textContent(), zone);
    const row = (name) => page.locator(`tr[data-job="${name}"]`);
    assert.equal(await row('tick').locator('.job-triggers').textContent(), 'every 1s');
    assert.equal(await row('brief').locator('.job-triggers').textContent(), 'cron 0 8 * * 1-5 (Europe/Berlin)');
    assert.equal(await row('follow').locator('.job-triggers').textContent(), 'after tick fails');
    assert.equal(await row('follow').locator('.job-next').textContent(), '—');
    // The cron job's next fire: a time that changes only at 08:00 Berlin.
    const brief = (await api('GET', '/v1/jobs')).jobs.find((j) => j.name === 'brief');
    const next = row('brief').locator('.job-next time');
    assert.equal(await next.getAttribute('datetime'), brief.next);
    assert.equal(await next.locator('.abs').textContent(), await inKolkata(brief.next));
    assert.match(await next.locator('.abs').textContent(), /GMT\+5:30/);
    assert.match(await next.locator('.rel').textContent(), /^\(in \d+ (min|h|d)\)$/);
    await row('tick').locator('.job-last .badge').waitFor();
    for (const name of ['tick', 'brief']) assert.equal(await row(name).locator('.badge').first().textContent(), 'active');
    await snap('jobs');
  });

  await step('a job\'s page: its spec, its next fires in the viewer\'s zone, its runs', async () => {
    await page.getByRole('link', { name: 'tick' }).click();
    await page.locator('.job-fire-list li').first().waitFor();
    const job = await api('GET', '/v1/jobs/tick');
    assert.equal(job.next_fires.length, 5);
    // Each fire shown is one of agentd's, in Kolkata time.
    const shown = await page.locator('.job-fire-list time').evaluateAll((ts) => ts.map((t) => [t.dateTime, t.querySelector('.abs').textContent]));
    assert.ok(shown.length >= 1 && shown.length <= 5, 'fires shown: ' + shown.length);
    for (const [at, text] of shown) {
      assert.equal(text, await inKolkata(at), at);
      assert.match(text, /GMT\+5:30/);
    }
    assert.match(await page.locator('.job-spec').textContent(), /every 1s/);
    await page.locator('.runs-table tr[data-status=done]').first().waitFor();
    const first = await page.locator('.runs-table tbody tr').first();
    assert.equal(await first.locator('td[data-label=Trigger]').textContent(), 'every');
    assert.match(await page.locator('.runs-table tr[data-status=done] .run-output').first().textContent(), /got: tick/);
    await snap('job');
  });

  await step('a refresh keeps the focus where it was', async () => {
    await page.focus('#job-toggle');
    const newest = await page.locator('.runs-table tbody tr').first().getAttribute('data-run');
    await page.waitForFunction((r) => document.querySelector('.runs-table tbody tr').dataset.run !== r, newest);
    assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.id), 'job-toggle');
  });

  await step('the history pages with the API\'s cursor', async () => {
    // The job fires every second: wait for more runs than a page holds.
    for (let i = 0; (await runs(30)).length <= 25; i++) {
      assert.ok(i < 120, 'the job ran fewer than 26 times in a minute');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await page.reload();
    await page.locator('.runs-table tbody tr').first().waitFor();
    const more = page.getByRole('button', { name: 'Older runs' });
    await more.waitFor();
    const before = await page.locator('.runs-table tbody tr').count();
    assert.equal(before, 20);
    await more.click();
    await page.waitForFunction(() => document.querySelectorAll('.runs-table tbody tr').length > 20);
    const ids = await page.locator('.runs-table tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.run));
    assert.equal(new Set(ids).size, ids.length, 'no run twice');
  });

  await step('Run now adds a run to the history', async () => {
    const before = (await runs()).filter((r) => r.trigger === 'manual').length;
    await page.getByRole('button', { name: 'Run now' }).click();
    const row = page.locator('.runs-table tbody tr', { has: page.locator('td[data-label=Trigger]', { hasText: 'manual' }) }).first();
    await row.waitFor();
    await row.locator('.badge.st-done').waitFor();
    assert.equal((await runs()).filter((r) => r.trigger === 'manual').length, before + 1);
  });

  await step('a run opens its session in the chat', async () => {
    const link = page.locator('.runs-table tr[data-status=done] a', { hasText: 'Chat' }).first();
    const run = await link.evaluate((a) => a.closest('tr').dataset.run);
    const session = (await runs()).find((r) => r.run === run).session;
    await link.click();
    await page.waitForFunction((s) => decodeURIComponent(location.hash) === '#/chat/' + s, session);
    await page.getByText('got: tick').first().waitFor();
    await page.goBack();
    await page.locator('.job-fire-list li').first().waitFor();
  });

  await step('Pause: no next fire shows; Resume: they are back', async () => {
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('.no-fires', { hasText: 'paused' }).waitFor();
    assert.equal(await page.locator('.job-fire-list').count(), 0);
    assert.equal(await page.locator('.job-status .badge').textContent(), 'paused');
    assert.equal((await api('GET', '/v1/jobs/tick')).enabled, false);
    await snap('job-paused');
    await page.getByRole('link', { name: 'Jobs' }).first().click();
    await page.locator('tr[data-job=tick] .badge.st-paused').waitFor();
    assert.equal(await page.locator('tr[data-job=tick] .job-next').textContent(), '—');
    await page.getByRole('link', { name: 'tick' }).click();
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('.job-fire-list li').first().waitFor();
    assert.equal(await page.locator('.job-status .badge').textContent(), 'active');
    assert.equal((await api('GET', '/v1/jobs/tick')).enabled, true);
  });

  await step('an error from agentd is shown, not swallowed', async () => {
    await page.route('**/v1/jobs/tick/run', (route) => route.fulfill({ status: 409, contentType: 'application/json', body: JSON.stringify({ error: 'a run of tick is under way', code: 'job_running' }) }));
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.locator('.job-problem [role=alert]', { hasText: 'a run of tick is under way' }).waitFor();
    await page.unroute('**/v1/jobs/tick/run');
    await page.goto(URL_ + '/#/jobs/nope');
    await page.locator('.empty-title', { hasText: 'No such job' }).waitFor();
  });

  await step('on a phone: the pages fit the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [hash, name, ready] of [['#/jobs', 'phone-jobs', 'tr[data-job=tick]'], ['#/jobs/tick', 'phone-job', '.runs-table tbody tr']]) {
      await page.goto(URL_ + '/' + hash);
      await page.locator(ready).first().waitFor();
      await page.waitForTimeout(400); // the menu slides shut
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= 390, hash + ' is ' + wide + ' px wide');
      await snap(name);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  await step('every control has a name', async () => {
    for (const hash of ['#/jobs', '#/jobs/tick']) {
      await page.goto(URL_ + '/' + hash);
      await page.locator('.screen .loading').first().waitFor({ state: 'detached' });
      const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
        .filter((el) => el.offsetParent !== null)
        .filter((el) => !(el.getAttribute('aria-label') || el.getAttribute('title') || (el.labels && el.labels.length) || el.textContent.trim()))
        .map((el) => el.outerHTML.slice(0, 120)));
      assert.deepEqual(unnamed, [], hash);
    }
  });

  await step('nothing went wrong on the page: no script error, no CSP refusal, no request elsewhere', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await api('POST', '/v1/jobs/tick/pause').catch(() => {});
  await finish();
}
