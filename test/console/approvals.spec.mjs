// End-to-end test of the console's Approvals screen in headless Chromium
// (internal/gateway/approvals_browser_test.go serves the API in process
// with three calls waiting: ap-cmd, exec of `go test ./...` in src under
// bwrap with no network, with an exact call; ap-diff, edit_file of main.go
// with a diff, no exact call; ap-url, web_fetch of https://example.com/docs
// with an exact call; and grants g1 and g2): each card shows what the
// call will do, the choices fit the card, each answer is sent with its
// scope, and Revoke removes a grant.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, shot, finish } from './harness.mjs';

const card = (id) => page.locator(`article[data-approval="${id}"]`);

try {
  await step('log in to the Approvals screen: the three waiting calls with their cards', async () => {
    await page.goto(URL_ + '/#/approvals');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await card('ap-cmd').waitFor();
    assert.equal(await page.locator('article[data-approval]').count(), 3);
  });

  await step('the command shows with its directory, sandbox and input', async () => {
    const c = card('ap-cmd');
    assert.equal(await c.locator('.ap-command').textContent(), 'go test ./...');
    assert.equal(await c.locator('.ap-dir').textContent(), 'src');
    assert.equal(await c.locator('.ap-sandbox').textContent(), 'bwrap, no network');
    assert.equal(await c.locator('.ap-input').textContent(), 'y\\r\ny\n');
    assert.match(await c.textContent(), /… 12 bytes of the input left out/);
    assert.match(await c.locator('.ap-title').textContent(), /Run go test/);
  });

  await step('the diff shows with its added and removed lines coloured', async () => {
    const c = card('ap-diff');
    assert.equal(await c.locator('.d-add').textContent(), '+// new\n');
    assert.equal(await c.locator('.d-del').textContent(), '-// old\n');
    const colour = (sel) => c.locator(sel).evaluate((el) => getComputedStyle(el).color);
    const add = await colour('.d-add'), del = await colour('.d-del'), ctx = await colour('.d-ctx');
    assert.notEqual(add, ctx, 'an added line is the colour of context');
    assert.notEqual(del, ctx, 'a removed line is the colour of context');
    assert.notEqual(add, del);
  });

  await step('the URL shows with its method', async () => {
    assert.equal(await card('ap-url').locator('.ap-url').textContent(), 'GET https://example.com/docs');
    await shot('approvals');
  });

  await step('the choices: once, for this session, always only with an exact call, deny', async () => {
    for (const id of ['ap-cmd', 'ap-diff', 'ap-url']) {
      assert.equal(await card(id).locator('button.ap-once').textContent(), 'Allow once');
      assert.equal(await card(id).locator('button.ap-session').textContent(), 'Allow for this session');
      assert.equal(await card(id).locator('button.ap-deny').textContent(), 'Deny');
    }
    assert.equal(await card('ap-cmd').locator('button.ap-always').textContent(), 'Always allow this exact command');
    assert.equal(await card('ap-url').locator('button.ap-always').textContent(), 'Always allow this exact URL');
    assert.equal(await card('ap-diff').locator('button.ap-always').count(), 0, 'a diff offers no "always"');
  });

  await step('each answer is sent with its scope; the calls stop waiting', async () => {
    await card('ap-cmd').locator('button.ap-always').click();
    await card('ap-cmd').waitFor({ state: 'detached' });
    await card('ap-diff').locator('button.ap-session').click();
    await card('ap-diff').waitFor({ state: 'detached' });
    await card('ap-url').locator('input.deny-reason').fill('not that site');
    await card('ap-url').locator('button.ap-deny').click();
    await card('ap-url').waitFor({ state: 'detached' });
    assert.deepEqual(await api('GET', '/v1/approvals'), []);
  });

  await step('the grants are listed; Revoke removes one', async () => {
    const row = (id) => page.locator(`tr[data-grant="${id}"]`);
    await row('g1').waitFor();
    assert.match(await row('g1').textContent(), /exec.*a\/main.*any call/);
    assert.match(await row('g2').textContent(), /web_fetch.*every session.*https:\/\/example\.com\//);
    await shot('approvals-grants');
    await row('g1').locator('button.grant-revoke').click();
    await row('g1').waitFor({ state: 'detached' });
    const left = await api('GET', '/v1/grants');
    assert.deepEqual(left.map((g) => g.id), ['g2']);
  });

  await step('every control is named', async () => {
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
