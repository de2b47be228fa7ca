// End-to-end test of the console's Agents screen in headless Chromium
// (internal/gateway/agents_browser_test.go serves the API in process with
// a fake agent system of three dynamic agents: a background agent PARENT
// and its sub-agents CHILD, done, and SECOND, running): the tree nests
// the children under their parent with their types and states, each node
// shows its own cost and its subtree's (a turn's cost adds up the tree
// live), a child's Log link opens its log,
// Stop (confirmed) stops an agent, a reconnect reads the tree again, and
// an agent tool's card links to the log of the session its result names.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, frames, step, shot, finish } from './harness.mjs';

const { PARENT, CHILD, SECOND } = process.env;
const node = (id) => page.locator(`li.agent-node[data-agent="${id}"]`);
const row = (id) => node(id).locator('.agent-row').first();

try {
  await step('log in to the Agents screen: the definitions, then the tree of three', async () => {
    await page.goto(URL_ + '/#/agents');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await node(PARENT).waitFor();
    assert.equal(await page.locator('li.agent-node').count(), 3);
    assert.equal(await page.locator('article.agent').count(), 2, 'the two definitions as cards');
  });

  await step('the children are nested under their parent, with types, states and rolled-up costs', async () => {
    assert.equal(await node(PARENT).locator(`li.agent-node[data-agent="${CHILD}"]`).count(), 1);
    assert.equal(await node(PARENT).locator(`li.agent-node[data-agent="${SECOND}"]`).count(), 1);
    const want = {
      [PARENT]: ['background', 'research', 'running', '$0.50', '$0.88'],
      [CHILD]: ['subagent', 'first', 'done', '$0.25', '$0.25'],
      [SECOND]: ['subagent', 'second', 'running', '$0.13', '$0.13'],
    };
    for (const [id, [type, name, state, own, tree]] of Object.entries(want)) {
      const r = row(id);
      assert.equal(await r.locator('.agent-type').textContent(), type, id);
      assert.equal(await r.locator('.agent-name').textContent(), name, id);
      assert.equal(await r.locator('.agent-state').textContent(), state, id);
      assert.equal(await node(id).getAttribute('data-state'), state, id);
      assert.equal(await r.locator('.agent-cost').textContent(), own, id);
      assert.equal(await r.locator('.agent-cost-tree').textContent(), tree, id);
      assert.equal(await r.locator('.agent-stop').isVisible(), state !== 'done', id + ': Stop for a live agent only');
    }
    await page.locator('section.agent-tree').scrollIntoViewIfNeeded();
    await shot('agents-tree');
  });

  await step('a child\'s Log link opens its log', async () => {
    await row(CHILD).locator('a.agent-log').click();
    await page.waitForFunction((id) => location.hash === '#/log/' + id + '/main', CHILD);
    await page.locator('ol.events li').first().waitFor();
    assert.match(await page.locator('ol.events').textContent(), /find the first offer/);
    await page.goBack();
    await node(PARENT).waitFor();
  });

  await step('a turn of an agent adds its cost to it and up the tree, live from the stream', async () => {
    const text = (id, cls) => page.evaluate(([id, cls]) => document.querySelector(`li.agent-node[data-agent="${id}"] .agent-row ${cls}`).textContent, [id, cls]);
    await api('POST', `/v1/sessions/${SECOND}/main/messages`, { text: 'and the second offer?' });
    await page.waitForFunction((id) => document.querySelector(`li.agent-node[data-agent="${id}"] .agent-row .agent-cost`).textContent === '$0.25', SECOND);
    assert.equal(await text(SECOND, '.agent-cost-tree'), '$0.25');
    await page.waitForFunction((id) => document.querySelector(`li.agent-node[data-agent="${id}"] .agent-row .agent-cost-tree`).textContent === '$1.00', PARENT);
    assert.equal(await text(PARENT, '.agent-cost'), '$0.50', 'the parent\'s own cost is its own');
    assert.equal(await text(CHILD, '.agent-cost-tree'), '$0.25', 'a sibling\'s is its own');
    const ends = frames.map((f) => JSON.parse(f)).filter((f) => f.type === 'event' && f.kind === 'turn-end' && f.session === SECOND + '/main');
    assert.equal(ends.length, 1, 'the turn\'s end came over the stream');
    assert.equal(ends[0].data.cost_usd, 0.125);
  });

  await step('Stop asks first, then stops the agent: the tree reads its state again', async () => {
    let asked = '';
    page.once('dialog', (d) => { asked = d.message(); d.dismiss(); });
    await row(SECOND).locator('.agent-stop').click();
    assert.match(asked, /^Stop second\?/);
    assert.equal(await node(SECOND).getAttribute('data-state'), 'running', 'dismissed: nothing stopped');
    page.once('dialog', (d) => d.accept());
    await row(SECOND).locator('.agent-stop').click();
    await page.locator(`li.agent-node[data-agent="${SECOND}"][data-state="stopped"]`).waitFor();
    assert.equal(await row(SECOND).locator('.agent-state').textContent(), 'stopped');
    assert.equal(await row(SECOND).locator('.agent-stop').isVisible(), false);
    const status = await api('GET', '/v1/agents/' + SECOND);
    assert.equal(status.instance.state, 'stopped');
  });

  await step('an agent tool\'s card links to the log of the session its result names; a guard is a warning', async () => {
    const got = await page.evaluate(async (child) => {
      const href = [...document.querySelectorAll('link[rel=modulepreload]')].find((l) => l.href.endsWith('/chat.js')).href;
      const chat = await import(href);
      const link = (name, result, status = 'ok') => {
        const a = chat.agentLogLink({ name, result, status });
        return a ? a.getAttribute('href') + ' ' + a.textContent : null;
      };
      return {
        started: link('start_background_agent', JSON.stringify({ id: child, session: child + '/main' })),
        asked: link('ask_agent', { answer: 'yes', session: child + '/ask:assistant' }),
        sent: link('send_agent_message', { session: 'b/main' }),
        other: link('calculator', { session: 'b/main' }),
        failed: link('ask_agent', 'no such agent', 'error'),
        guard: chat.guardSentence({ op: 'guard', guard: 'max_hops', limit: 10, value: 11, target: 'b' }),
      };
    }, CHILD);
    assert.deepEqual(got, {
      started: `#/log/${CHILD}/main open log`,
      asked: `#/log/${CHILD}/ask%3Aassistant open log`,
      sent: '#/log/b/main open log',
      other: null,
      failed: null,
      guard: 'Refused: a message passed on too many times (limit 10, reached 11) — for b',
    });
  });

  await step('in the parent\'s chat, the start_background_agent card opens the child\'s log; the guard is a warning line', async () => {
    await page.goto(URL_ + '/#/chat/' + PARENT + '/main');
    const card = page.locator('details.tool', { has: page.locator('.tool-name', { hasText: 'start_background_agent' }) });
    await card.waitFor();
    const warn = page.locator('.notice.tone-warn');
    await warn.waitFor();
    assert.equal(await warn.textContent(), 'Refused: too many live sub-agents (limit 2, reached 3) — for a');
    await shot('agents-chat-card');
    await card.locator('a.tool-link').click();
    await page.waitForFunction((id) => location.hash === '#/log/' + id + '/main', SECOND);
    await page.locator('.page-head .mono', { hasText: SECOND + '/main' }).waitFor();
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
