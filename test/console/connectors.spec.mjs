// End-to-end test of the console's Connectors screen in headless Chromium
// (internal/gateway/connectors_browser_test.go serves the API in process
// with fake connectors: tg, telegram, connected, 2 queued, 1 failed reply,
// a refused group chat and a pending pairing code K7PQM2XD; dc, discord,
// down with an error): the table shows them, Approve decides the code and
// the list reads it again, and the log of SESSION shows the reply that was
// not delivered as a red line whose Retry asks the connector.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, shot, finish } from './harness.mjs';

const { SESSION } = process.env;
const row = (name) => page.locator(`tr[data-connector="${name}"]`);

try {
  await step('log in to the Connectors screen: both connectors with their states', async () => {
    await page.goto(URL_ + '/#/connectors');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await row('tg').waitFor();
    assert.equal(await page.locator('tr[data-connector]').count(), 2);
    assert.equal(await row('tg').getAttribute('data-state'), 'connected');
    assert.equal(await row('dc').getAttribute('data-state'), 'down');
    assert.equal(await row('tg').locator('.conn-queue').textContent(), '2');
    assert.equal(await row('tg').locator('.conn-failed').textContent(), '1');
    assert.match(await row('tg').textContent(), /@helper_bot/);
    assert.match(await row('dc').locator('.conn-error').textContent(), /gateway closed 4004/);
    assert.equal(await page.locator('a.nav-link[data-route="connectors"]').getAttribute('aria-current'), 'page');
  });

  await step('a refused group chat shows its id with a copy button; refusals by reason', async () => {
    const chip = row('tg').locator('.refused-chat[data-chat="-1001234567890"]');
    await chip.waitFor();
    assert.equal(await chip.locator('button.copy').getAttribute('aria-label'), 'Copy chat id -1001234567890 for groups.allow');
    assert.equal(await row('tg').locator('.conn-refused').textContent(), 'refused: group 2, pairing 1');
  });

  await step('the pending code shows with its user; Approve decides it and the list reads it again', async () => {
    const pr = page.locator('tr[data-code="K7PQM2XD"]');
    await pr.waitFor();
    assert.match(await pr.textContent(), /K7PQ-M2XD.*tg.*Ann.*555/);
    await shot('connectors');
    await pr.locator('button.pair-approve').click();
    await page.locator('p.no-pairings').waitFor();
    assert.equal(await page.locator('tr[data-code]').count(), 0);
    const left = await api('GET', '/v1/pairings');
    assert.deepEqual(left.pairings, []);
  });

  await step('a reply that was not delivered is a red line in its session\'s log, with Retry and Dismiss', async () => {
    const [agent, key] = SESSION.split('/');
    await page.goto(URL_ + '/#/log/' + agent + '/' + encodeURIComponent(key));
    const line = page.locator('li.ev.delivery-failed');
    await line.waitFor();
    assert.match(await line.locator('.ev-sum').textContent(), /^Not delivered to tg \(telegram\) after 10 tries: telegram: 403 Forbidden/);
    const color = await line.locator('.ev-sum').evaluate((el) => getComputedStyle(el).color);
    const plain = await page.locator('li.ev[data-kind="input"] .ev-sum').evaluate((el) => getComputedStyle(el).color);
    assert.notEqual(color, plain, 'the line is not the colour of the others');
    await shot('connectors-log-delivery');
    await line.locator('button.delivery-retry').click();
    await page.locator('.delivery-status', { hasText: 'sent again to the connector' }).waitFor();
    assert.equal(await line.locator('button.delivery-retry').isDisabled(), true, 'asked once');
  });

  await step('every control is named', async () => {
    await page.goto(URL_ + '/#/connectors');
    await row('tg').waitFor();
    const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
      .filter((el) => el.offsetParent !== null)
      .filter((el) => !(el.getAttribute('aria-label') || el.getAttribute('title') || (el.labels && el.labels.length) || el.textContent.trim()))
      .map((el) => el.outerHTML.slice(0, 120)));
    assert.deepEqual(unnamed, []);
  });

  await step('nothing went wrong on the page: no script error, no CSP refusal, no request elsewhere', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await finish();
}
