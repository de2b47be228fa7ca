// End-to-end test of the web console in headless Chromium, driven with
// playwright-core (installed by `npm ci --prefix test/npm`); harness.mjs
// says how cmd/agentd/console_test.go runs it.
//
// Each step prints "ok - name" or "not ok - name"; the last line is
// "N passed, N failed".

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, restart, context, page, problems, frames, step, shot, finish } from './harness.mjs';

const conn = () => page.locator('.conn');
const userBubbles = (text) => page.locator('.timeline .bubble.user', { hasText: text });

let sessionKey = '';

try {
  await step('the page ignores a server address in its query and hash', async () => {
    await page.goto(URL_ + '/?server=http://evil.example&api=//evil.example#/chat?server=http://evil.example');
    await page.waitForSelector('#token');
    const title = await page.title();
    assert.match(title, /agentd/);
    assert.deepEqual(problems, []);
  });

  await step('security headers on the page', async () => {
    const res = await page.request.get(URL_ + '/');
    const h = res.headers();
    assert.match(h['content-security-policy'], /default-src 'self'/);
    assert.match(h['content-security-policy'], /frame-ancestors 'none'/);
    assert.equal(h['x-content-type-options'], 'nosniff');
    assert.equal(h['referrer-policy'], 'no-referrer');
  });

  await step('a wrong token is refused', async () => {
    await shot('login');
    await page.fill('#token', 'not-the-token-' + 'x'.repeat(30));
    await page.click('form button[type=submit]');
    await page.waitForSelector('.login-error:text("not valid")');
  });

  await step('log in with the token: a cookie only the server reads, nothing stored in the page', async () => {
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#composer');
    const cookies = await context.cookies();
    const c = cookies.find((x) => x.name === 'agentd_console');
    assert.ok(c, 'login cookie set');
    assert.equal(c.httpOnly, true);
    assert.equal(c.sameSite, 'Strict');
    const stored = await page.evaluate(() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie]));
    assert.ok(!stored.includes(TOKEN), 'the token is not kept by the page');
    assert.ok(!stored.includes(c.value), 'the cookie is not readable by the page');
    assert.equal(await page.locator('#token').count(), 0);
    await page.waitForSelector('.conn-connected');
    sessionKey = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
    assert.match(sessionKey, /^web-/);
  });

  await step('Shift+Enter adds a line, Enter sends', async () => {
    await page.click('#composer');
    await page.keyboard.type('first line');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('second line');
    assert.equal(await page.inputValue('#composer'), 'first line\nsecond line');
    assert.equal(await page.locator('.timeline .bubble.user').count(), 0, 'nothing sent yet');
    await page.fill('#composer', '');
  });

  await step('send a message: the reply streams in, with a tool card and markdown', async () => {
    await page.fill('#composer', 'Please calculate (17 + 25) * 3');
    await page.keyboard.press('Enter');
    await userBubbles('Please calculate').waitFor();
    const card = page.locator('details.tool', { hasText: 'calculator' });
    await card.waitFor();
    await page.locator('.bubble.assistant strong', { hasText: '126' }).waitFor();
    await page.locator('details.tool.ts-ok .tool-status', { hasText: 'done' }).waitFor();
    await page.locator('.item-end').first().waitFor();
    assert.equal(await card.getAttribute('open'), null, 'tool cards start collapsed');
    const deltas = frames.filter((f) => f.includes('"text-delta"'));
    assert.ok(deltas.length >= 2, 'text arrived in pieces over the stream: ' + deltas.length);
    assert.ok(frames.some((f) => f.includes('"tool-call"')) && frames.some((f) => f.includes('"tool-result"')));
    assert.equal(await page.locator('.bubble.assistant table').count(), 1, 'a markdown table');
    assert.equal(await page.locator('.bubble.assistant pre code.lang-python').count(), 1, 'a code block');
    assert.equal(await page.locator('.caret').count(), 0, 'no caret once the turn ended');
    assert.equal(await userBubbles('Please calculate').count(), 1);
  });

  await step('the chat is named after its first message, then with a few words from the model', async () => {
    const current = page.locator('.sess-list a.current .sess-key');
    await current.filter({ hasText: 'Arithmetic with the calculator' }).waitFor();
    const s = await api('GET', '/v1/sessions/assistant/' + encodeURIComponent(sessionKey));
    assert.equal(s.title_by, 'model');
    await page.locator('.chat-head .chat-name', { hasText: 'Arithmetic with the calculator' }).waitFor();
    assert.equal(await page.locator('.echo-banner').count(), 0, 'a real model: no echo banner');
    assert.equal(await page.locator('.ready-banner').count(), 0, 'agentd is whole: no readiness banner');
  });

  await step('expand the tool card: arguments and result', async () => {
    const card = page.locator('details.tool', { hasText: 'calculator' });
    await card.locator('summary').click();
    const body = card.locator('.tool-body');
    await body.locator('pre', { hasText: '"expression": "(17 + 25) * 3"' }).waitFor();
    await body.locator('pre', { hasText: '126' }).waitFor();
    assert.match(await card.locator('.tool-dur').innerText(), /ms|s/);
    await page.locator('.scroller').evaluate((el) => { el.scrollTop = 0; });
    await shot('chat');
  });

  await step('an approval shows inline and is granted there', async () => {
    await page.fill('#composer', 'What time is it?');
    await page.keyboard.press('Enter');
    const ap = page.locator('.approval.waiting');
    await ap.waitFor();
    await ap.locator('text=clock').first().waitFor();
    assert.equal((await api('GET', '/v1/approvals')).length, 1);
    await page.locator('.appr-badge:not([hidden])').waitFor();
    await ap.scrollIntoViewIfNeeded();
    await shot('approval');
    await ap.getByRole('button', { name: 'Allow once' }).click();
    await page.locator('.approval.ap-granted', { hasText: 'Granted by console' }).waitFor();
    await page.locator('.bubble.assistant', { hasText: 'The clock says' }).waitFor();
    await page.locator('details.tool.ts-ok', { hasText: 'clock' }).waitFor();
    assert.equal((await api('GET', '/v1/approvals')).length, 0);
    await page.locator('.appr-badge[hidden]').waitFor({ state: 'attached' });
  });

  await step('a denial with a reason reaches the agent', async () => {
    await page.fill('#composer', 'And the time now?');
    await page.keyboard.press('Enter');
    const ap = page.locator('.approval.waiting');
    await ap.waitFor();
    await ap.getByLabel('Reason for denying').fill('not now');
    await ap.getByRole('button', { name: 'Deny' }).click();
    await page.locator('.approval.ap-denied', { hasText: 'not now' }).waitFor();
    await page.locator('details.tool.ts-denied', { hasText: 'clock' }).waitFor();
    await page.locator('.item-end').nth(2).waitFor();
  });

  await step('reload: the whole history comes back from the log', async () => {
    await page.reload();
    await page.waitForSelector('#composer');
    await userBubbles('Please calculate').waitFor();
    await userBubbles('What time is it?').waitFor();
    await page.locator('.bubble.assistant strong', { hasText: '126' }).waitFor();
    await page.locator('details.tool', { hasText: 'calculator' }).waitFor();
    await page.locator('.approval.ap-granted').waitFor();
    await page.locator('.approval.ap-denied').waitFor();
    assert.equal(await userBubbles('Please calculate').count(), 1);
    assert.equal(await page.locator('details.tool').count(), 3);
    await page.waitForSelector('.conn-connected');
  });

  await step('agentd restarts: the console reconnects, loses nothing and sends a waiting message once', async () => {
    const addr = 'assistant/' + sessionKey;
    // The browser cannot reach agentd for a while; agentd restarts, and
    // another client talks in the session meanwhile.
    await context.setOffline(true);
    await restart();
    await page.locator('.conn-offline, .conn-reconnecting').waitFor();
    await page.fill('#composer', 'calculate while away');
    await page.keyboard.press('Enter');
    await page.locator('.bubble.pending.p-retrying', { hasText: 'calculate while away' }).waitFor();
    await api('POST', '/v1/sessions/' + addr.split('/').map(encodeURIComponent).join('/') + '/messages?wait=true', { text: 'sum from elsewhere', idempotency_key: 'elsewhere-1' });
    await context.setOffline(false);
    await page.locator('.conn-connected').waitFor({ timeout: 30000 });
    await userBubbles('sum from elsewhere').waitFor({ timeout: 30000 });
    await userBubbles('calculate while away').locator('xpath=self::*[not(contains(@class,"pending"))]').waitFor({ timeout: 30000 });
    await page.waitForFunction(() => document.querySelectorAll('.item-end').length >= 5, null, { timeout: 30000 });
    assert.equal(await userBubbles('calculate while away').count(), 1, 'sent once');
    assert.equal(await userBubbles('sum from elsewhere').count(), 1, 'shown once');
    const page1 = await api('GET', '/v1/sessions/' + addr.split('/').map(encodeURIComponent).join('/') + '/events?limit=1000');
    const inputs = page1.events.filter((e) => e.kind === 'input' && e.data.text === 'calculate while away');
    assert.equal(inputs.length, 1, 'agentd got the message once');
  });

  await step('a failed turn is said once, in words, and Retry sends its message again', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.waitForFunction((k) => !location.hash.endsWith(encodeURIComponent(k)), sessionKey);
    const key = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
    await page.fill('#composer', 'flaky request');
    await page.keyboard.press('Enter');
    const failure = page.locator('.failure');
    await failure.locator('.failure-text', { hasText: 'refused the API key' }).waitFor();
    await page.locator('.item-end').first().waitFor();
    const shown = await page.locator('.timeline').innerText();
    assert.ok(!/other:|auth:/.test(shown), 'no internal error kind: ' + shown);
    assert.equal(await page.locator('.turn-end.bad').count(), 0, 'the turn\'s end does not say the failure again');
    assert.equal(await failure.count(), 1);
    await failure.locator('summary', { hasText: 'Details' }).click();
    await failure.locator('pre', { hasText: '401' }).waitFor();
    await failure.getByRole('button', { name: 'Retry' }).click();
    await page.locator('.failure').nth(1).waitFor();
    assert.equal(await userBubbles('flaky request').count(), 2);
    assert.equal(await page.locator('.failure button', { hasText: 'Retry' }).count(), 1, 'the first failure was retried');
    const logged = await api('GET', '/v1/sessions/assistant/' + encodeURIComponent(key) + '/events?limit=1000');
    assert.equal(logged.events.filter((e) => e.kind === 'input' && e.data.text === 'flaky request').length, 2, 'sent again');
    assert.equal(logged.session.title, 'flaky request');
  });

  await step('rename a chat and close one from the list', async () => {
    const row = page.locator('.sess-list li', { hasText: 'flaky request' });
    await row.hover();
    await row.getByRole('button', { name: /^Rename/ }).click();
    const input = page.getByLabel(/^New title for/);
    await input.fill('Key trouble');
    await input.press('Enter');
    const renamed = page.locator('.sess-list li', { hasText: 'Key trouble' });
    await renamed.waitFor();
    await page.locator('.chat-head .chat-name', { hasText: 'Key trouble' }).waitFor();
    page.once('dialog', (d) => d.accept());
    await renamed.hover();
    await renamed.getByRole('button', { name: /^Close/ }).click();
    await renamed.locator('.badge.st-closed').waitFor();
    await page.locator('#composer[disabled]').waitFor({ state: 'attached' });
    const list = await api('GET', '/v1/sessions?agent=assistant');
    const s = list.find((x) => x.title === 'Key trouble');
    assert.ok(s && s.title_by === 'user' && s.state === 'closed', JSON.stringify(list));
  });

  await step('an agent on the echo model says how to configure a real one', async () => {
    await page.selectOption('#agent-pick', 'offline');
    const banner = page.locator('.echo-banner');
    await banner.waitFor();
    assert.match(await banner.innerText(), /built-in echo model.*set model\.provider and model\.name in agents\/offline\.yaml/s);
    await page.fill('#composer', 'hello echo');
    await page.keyboard.press('Enter');
    await page.locator('.sess-list a.current .sess-key', { hasText: 'hello echo' }).waitFor();
    await page.goto(URL_ + '/#/chat/assistant/' + encodeURIComponent(sessionKey));
    await page.locator('details.tool', { hasText: 'calculator' }).first().waitFor();
    assert.equal(await page.locator('.echo-banner').count(), 0);
  });

  await step('agentd running degraded: a banner says so, until dismissed, and again after a reconnect', async () => {
    let reason = 'memory.db cannot be opened: permission denied';
    await page.route('**/readyz', (route) => route.fulfill({ status: 200, contentType: 'application/json',
      body: JSON.stringify({ ready: true, degraded: [{ part: 'memory', reason }] }) }));
    await page.reload();
    const banner = page.locator('.ready-banner');
    await banner.locator('.degraded-part', { hasText: 'long-term memory: memory.db cannot be opened: permission denied' }).waitFor();
    await banner.getByRole('button', { name: 'Dismiss' }).click();
    await banner.waitFor({ state: 'detached' });
    reason = 'memory.db is not a database';
    await context.setOffline(true);
    await page.locator('.conn-offline, .conn-reconnecting').waitFor();
    await context.setOffline(false);
    await page.locator('.conn-connected').waitFor({ timeout: 30000 });
    await banner.locator('.degraded-part', { hasText: 'memory.db is not a database' }).waitFor();
    await page.unroute('**/readyz');
    await page.reload();
    await page.locator('.conn-connected').waitFor();
    assert.equal(await page.locator('.ready-banner').count(), 0);
  });

  await step('the chat in the dark', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.locator('.scroller').evaluate((el) => { el.scrollTop = el.scrollHeight; });
    await shot('chat-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  await step('sessions: the list, with state, and search', async () => {
    await page.click('nav a[data-route=sessions]');
    await page.locator('.sess-table td', { hasText: sessionKey }).waitFor();
    await page.locator('.sess-table .badge').first().waitFor();
    await shot('sessions');
    await page.fill('#sess-search', 'calculate');
    await page.locator('.hits .hit mark').first().waitFor();
    await shot('search');
  });

  await step('a session\'s log: every event, expandable', async () => {
    await page.locator('.hits .hit').first().click();
    await page.locator('.events .ev.k-tool_call').first().waitFor();
    await page.locator('.events .ev.target').waitFor();
    const n = await page.locator('.events .ev').count();
    const logged = await api('GET', '/v1/sessions/' + ['assistant', sessionKey].map(encodeURIComponent).join('/') + '/events?limit=1000');
    assert.equal(n, logged.events.length);
    await page.locator('.events .ev.k-tool_result summary').first().click();
    await page.locator('.events .ev.k-tool_result .ev-body pre', { hasText: '"duration_ms"' }).first().waitFor();
    await shot('log');
  });

  await step('agents: model, tools policy, budgets', async () => {
    await page.click('nav a[data-route=agents]');
    const card = page.locator('article.agent', { hasText: 'Assistant' });
    await card.waitFor();
    await card.locator('.chip-warn', { hasText: 'clock' }).waitFor();
    await card.locator('dd', { hasText: '$5' }).waitFor();
    await shot('agents');
  });

  await step('agents: a file that does not load is listed with its problem, and cannot chat', async () => {
    const card = page.locator('article.agent', { hasText: 'agents/draft.yaml' });
    await card.locator('.badge.st-invalid').waitFor();
    await card.locator('.problems li', { hasText: /^agents\/draft\.yaml:5: budgets\.max_steps: / }).waitFor();
    assert.equal(await card.getByRole('link', { name: 'Chat' }).count(), 0);
    const listed = (await api('GET', '/v1/agents')).find((a) => a.id === 'draft');
    assert.equal(listed.state, 'invalid');
    await assert.rejects(api('POST', '/v1/sessions/draft/x/messages', { text: 'hi' }), /409 .*agent_invalid/);
    await page.click('nav a[data-route=chat]');
    await page.locator('#agent-pick option[value=draft][disabled]').waitFor({ state: 'attached' });
    await page.goto(URL_ + '/#/chat/draft');
    await page.locator('.problems li', { hasText: 'agents/draft.yaml:5' }).waitFor();
  });

  await step('MCP servers: status and tools', async () => {
    await page.click('nav a[data-route=mcp]');
    await page.locator('.status-dot.sd-connected').first().waitFor({ timeout: 20000 });
    const det = page.locator('details.srv-tools').first();
    await det.locator('summary').click();
    await det.locator('.tools-list li').first().waitFor();
    await shot('mcp');
  });

  await step('usage: totals and a chart per day', async () => {
    await page.click('nav a[data-route=usage]');
    await page.locator('svg.chart').first().waitFor();
    await page.locator('svg.chart rect.b-cost, svg.chart rect.b-out').first().waitFor();
    const cost = await page.locator('.stat', { hasText: 'Output tokens' }).locator('.stat-value').innerText();
    assert.notEqual(cost, '0');
    await shot('usage');
  });

  await step('every control has a name', async () => {
    for (const route of ['chat', 'sessions', 'agents', 'mcp', 'usage']) {
      await page.click(`nav a[data-route=${route}]`);
      await page.waitForTimeout(300);
      const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
        .filter((el) => el.offsetParent !== null || el.closest('.nav'))
        .filter((el) => !(el.getAttribute('aria-label') || el.getAttribute('title') || (el.labels && el.labels.length) ||
          el.textContent.trim() || el.getAttribute('placeholder')))
        .map((el) => el.outerHTML.slice(0, 120)));
      assert.deepEqual(unnamed, [], route);
    }
  });

  await step('a route cannot send the console\'s requests elsewhere', async () => {
    await page.goto(URL_ + '/#/log/../..');
    await page.locator('.error-box, .empty').first().waitFor();
    await page.goto(URL_ + '/#/log/' + encodeURIComponent('//evil.example') + '/x');
    await page.locator('.error-box, .empty').first().waitFor();
    assert.deepEqual(problems, []);
  });

  await step('on a phone: one column and a menu', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(URL_ + '/#/chat/assistant/' + encodeURIComponent(sessionKey));
    await page.locator('details.tool', { hasText: 'calculator' }).first().waitFor();
    // The chat list and the menu slide out of the way when the page becomes narrow.
    await page.waitForFunction(() => ['.chat-side', 'nav.nav'].every((q) => document.querySelector(q).getBoundingClientRect().right <= 1));
    await page.locator('.scroller').evaluate((el) => { el.scrollTop = el.scrollHeight; });
    await shot('phone-chat');
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.locator('nav.nav a[data-route=usage]').waitFor({ state: 'visible' });
    await page.waitForTimeout(300);
    await shot('phone-menu');
    await page.locator('nav.nav a[data-route=usage]').click();
    await page.locator('svg.chart').first().waitFor();
    await page.waitForTimeout(400); // the menu slides away
    await shot('phone-usage');
  });

  await step('log out: the API refuses the browser again', async () => {
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForSelector('#token');
    const res = await page.request.get(URL_ + '/v1/agents');
    assert.equal(res.status(), 401);
  });

  await step('nothing went wrong on the page', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await finish();
}
