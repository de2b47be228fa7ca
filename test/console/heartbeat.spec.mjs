// End-to-end test of heartbeats in the web console (harness.mjs says how
// cmd/agentd/heartbeat_test.go runs it): the assistant's heartbeat, every
// second, has nothing to do and answers HEARTBEAT_OK; loud's has
// something to say. The assistant's main chat shows none of its
// heartbeats — those logged before the page opened, those that end
// while it is open, after a reload — and a person's message is answered
// as usual; loud's main chat shows its heartbeat's answer as a message
// under a collapsed "Heartbeat" line.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, shot, finish } from './harness.mjs';

// quietEnds counts the heartbeats of assistant/main that had nothing to do.
async function quietEnds() {
  const r = await api('GET', '/v1/sessions/assistant/main/events?limit=1000');
  const beats = new Set(r.events.filter((e) => e.kind === 'input' && e.data.source === 'heartbeat').map((e) => e.turn));
  return r.events.filter((e) => e.kind === 'turn_end' && beats.has(e.turn) && (e.data.reply || '').trim() === 'HEARTBEAT_OK').length;
}

// waitQuiet waits until more than n quiet heartbeats have ended.
async function waitQuiet(n) {
  for (let i = 0; i < 150; i++) {
    const got = await quietEnds();
    if (got > n) return got;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('no quiet heartbeat after ' + n);
}

// seen is the main chat as a person sees it.
const seen = () => page.locator('.timeline').innerText();

function noHeartbeat(text) {
  assert.ok(!text.includes('HEARTBEAT_OK'), 'the chat shows HEARTBEAT_OK:\n' + text);
  assert.ok(!text.includes('all quiet?'), 'the chat shows the heartbeat prompt:\n' + text);
}

try {
  await step('log in to the main chat after two quiet heartbeats', async () => {
    await waitQuiet(1);
    await page.goto(URL_ + '/#/chat/assistant/main');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await page.waitForSelector('.conn-connected');
    await page.locator('.chat-empty').waitFor();
    noHeartbeat(await seen());
  });

  await step('a heartbeat that ends while the chat is open is not shown', async () => {
    const n = await quietEnds();
    await waitQuiet(n);
    await waitQuiet(n + 1);
    noHeartbeat(await seen());
    assert.equal(await page.locator('.item-heartbeat:visible').count(), 0);
  });

  await step('a person is answered as usual, and the chat still shows no heartbeat', async () => {
    await page.fill('#composer', 'hello');
    await page.keyboard.press('Enter');
    await page.locator('.timeline .bubble.assistant', { hasText: 'got: hello' }).waitFor();
    await waitQuiet(await quietEnds());
    noHeartbeat(await seen());
    await shot('chat-heartbeats-quiet');
  });

  await step('after a reload, the same', async () => {
    await page.reload();
    await page.locator('.timeline .bubble.assistant', { hasText: 'got: hello' }).waitFor();
    const text = await seen();
    noHeartbeat(text);
    assert.ok(text.includes('hello'));
  });

  await step('a heartbeat with something to say is a message under a Heartbeat line', async () => {
    await page.goto(URL_ + '/#/chat/loud/main');
    await page.locator('.timeline .bubble.assistant', { hasText: 'the disk is full' }).first().waitFor();
    const mark = page.locator('.heartbeat-msg summary').first();
    assert.match(await mark.innerText(), /^Heartbeat · /);
    // The prompt is folded under it, not shown as a person's message.
    assert.equal(await page.locator('.bubble.user', { hasText: 'check the disk' }).count(), 0);
    await shot('chat-heartbeat-answer');
  });

  await step('nothing went wrong on the page', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await finish();
}
