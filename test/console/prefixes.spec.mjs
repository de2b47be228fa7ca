// End-to-end test of the chat prefixes in the web console (harness.mjs
// says how cmd/agentd/console_test.go runs it): "@researcher …" typed in
// the assistant's chat is answered by researcher in its own session, and
// the answer is shown under the line; the assistant's session never holds
// it. An email address is sent to the assistant as written.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, shot, finish } from './harness.mjs';

let key = '';

try {
  await step('log in', async () => {
    await page.goto(URL_ + '/#/chat/assistant');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await page.waitForSelector('.conn-connected');
    key = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
    assert.match(key, /^web-/);
  });

  await step('@researcher: researcher answers under the line, in its own session', async () => {
    await page.fill('#composer', '@researcher find the 2024 figures');
    await page.keyboard.press('Enter');
    await page.locator('.routed-answer', { hasText: 'got: find the 2024 figures' }).waitFor();
    const to = page.locator('.item-routed .meta a');
    assert.equal(await to.innerText(), 'researcher/assistant:' + key);
    const ev = await api('GET', '/v1/sessions/researcher/' + encodeURIComponent('assistant:' + key) + '/events');
    assert.ok(ev.events.some((e) => e.kind === 'input' && e.data.text === 'find the 2024 figures'));
    await shot('chat-routed');
  });

  await step('an email address goes to the assistant as written', async () => {
    await page.fill('#composer', 'ana@example.com has them');
    await page.keyboard.press('Enter');
    await page.locator('.timeline .bubble.assistant', { hasText: 'got: ana@example.com has them' }).waitFor();
    // The answer shows as it streams (text deltas are live), which can be
    // before the turn's events are committed: read the log until its end is.
    let events = [];
    for (let i = 0; i < 100 && !events.some((e) => e.kind === 'turn_end'); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      events = (await api('GET', '/v1/sessions/assistant/' + encodeURIComponent(key) + '/events')).events;
    }
    const inputs = events.filter((e) => e.kind === 'input').map((e) => e.data.text);
    assert.deepEqual(inputs, ['ana@example.com has them']);
  });

  await step('nothing went wrong on the page', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await finish();
}
