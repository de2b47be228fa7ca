// End-to-end test of the console's Extensions page, controls, widgets and
// artifacts in headless Chromium (harness.mjs says how
// cmd/agentd/console_test.go runs it): a row made through the page with
// an invalid spec is refused with every problem and its pointer, in the
// browser and by agentd, and nothing is saved; fixed, it is saved, then
// disabled, changed, reverted, its history read, and deleted; a control
// flipped on the page changes its row; a widget is a tile on the home
// page; an artifact the scripted model makes shows beside the chat with a
// download. The page loads with no CSP refusal throughout.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, shot, finish } from './harness.mjs';

// snap takes a screenshot without the toasts of earlier steps.
const snap = async (name) => {
  await page.evaluate(() => { for (const t of document.querySelectorAll('.toast')) t.remove(); });
  await shot(name);
};
const row = (type, name) => api('GET', '/v1/extensions/' + type + '/' + encodeURIComponent(name));
const missing = async (type, name) => {
  await assert.rejects(row(type, name), /: 404 /, type + '/' + name + ' exists');
};
const problemsShown = (where) => page.locator(where + ' .ext-problems li');

try {
  await step('log in', async () => {
    await page.goto(URL_ + '/#/extensions');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await page.locator('.ext-group').first().waitFor();
    const types = (await api('GET', '/v1/extensions/schemas')).types.map((t) => t.name);
    assert.ok(types.includes('control'), 'the control type: ' + types);
    const offered = await page.locator('#ext-type option').evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
    assert.deepEqual(offered, types, 'the type filter offers every type');
  });

  await step('the list groups the rows by type and filters by one', async () => {
    const all = (await api('GET', '/v1/extensions')).extensions;
    const shownTypes = await page.locator('.ext-group').evaluateAll((gs) => gs.map((g) => g.dataset.type));
    assert.deepEqual(shownTypes, [...new Set(all.map((r) => r.type))].sort());
    assert.equal(await page.locator('.ext-table tbody tr').count(), all.length);
    await snap('extensions');
    await page.selectOption('#ext-type', 'control');
    await page.waitForFunction(() => [...document.querySelectorAll('.ext-group')].every((g) => g.dataset.type === 'control'));
  });

  const spec1 = { kind: 'bool', value: false, description: 'Agents stay quiet at night' };
  await step('a new extension with an invalid spec: every problem with its pointer, in the browser and from agentd, and nothing saved', async () => {
    // The first type's schema comes late, after another type was picked:
    // the type picked is the one the editor checks against.
    let release;
    const gate = new Promise((resolve) => { release = resolve; });
    const first = (await api('GET', '/v1/extensions/schemas')).types[0].name;
    assert.notEqual(first, 'control');
    await page.route('**/v1/extensions/schemas/' + first, async (route) => { await gate; await route.continue(); });
    await page.getByRole('link', { name: 'New extension' }).click();
    await page.locator('#new-type option[value=control]').waitFor({ state: 'attached' });
    await page.selectOption('#new-type', 'control');
    // The editor starts from an example of the type that fits its schema.
    await page.locator('.ext-new .ext-check .ok').waitFor();
    const late = page.waitForResponse('**/v1/extensions/schemas/' + first);
    release();
    await late;
    await page.unroute('**/v1/extensions/schemas/' + first);
    await page.fill('#ext-spec', JSON.stringify(spec1));
    await page.locator('.ext-new .ext-check .ok').waitFor();
    JSON.parse(await page.inputValue('#ext-spec'));
    await page.fill('#new-name', 'quiet/../hours');
    await page.fill('#ext-spec', JSON.stringify({ kind: 'switch', value: false, description: 7 }, null, 2));
    const local = problemsShown('.ext-new .ext-check');
    await local.filter({ hasText: '/name' }).waitFor();
    await local.filter({ hasText: '/spec/kind' }).waitFor();
    await page.fill('#new-name', 'quiet-hours');
    await local.filter({ hasText: '/name' }).waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Create' }).click();
    const server = problemsShown('.ext-new .ext-server');
    await server.filter({ hasText: '/spec/kind' }).waitFor();
    assert.match(await server.filter({ hasText: '/spec/kind' }).innerText(), /^\/spec\/kind\s+\S/);
    assert.ok((await page.locator('.ext-new .ext-server').innerText()).includes('nothing was saved'));
    await snap('extension-errors');
    await missing('control', 'quiet-hours');
  });

  await step('fixed, it is saved', async () => {
    await page.fill('#ext-spec', JSON.stringify(spec1, null, 2));
    await page.locator('.ext-new .ext-check .ok').waitFor();
    await page.getByRole('button', { name: 'Create' }).click();
    await page.locator('.ext-row h1', { hasText: 'control/quiet-hours' }).waitFor();
    const r = await row('control', 'quiet-hours');
    assert.deepEqual(r.spec, spec1);
    assert.equal(r.provenance, 'user');
    assert.equal(r.enabled, true);
    await page.locator('.ext-status .badge.st-active').waitFor();
  });

  await step('disable it', async () => {
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.locator('.ext-status .badge.st-disabled').waitFor();
    assert.equal((await row('control', 'quiet-hours')).enabled, false);
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.locator('.ext-status .badge.st-active').waitFor();
  });

  await step('change its spec in the editor, checked as it is typed, and save', async () => {
    const spec2 = { ...spec1, description: 'Quiet from 22:00' };
    await page.fill('#ext-spec', '{"kind": "bool", "value": ');
    await problemsShown('.ext-edit .ext-check').filter({ hasText: 'not valid JSON' }).waitFor();
    await page.fill('#ext-spec', JSON.stringify(spec2));
    await page.locator('.ext-edit .ext-check .ok').waitFor();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hist-table tbody tr').length >= 4);
    assert.equal((await row('control', 'quiet-hours')).spec.description, 'Quiet from 22:00');
  });

  await step('the history lists every change with who and when; revert to the first version', async () => {
    const { history } = await api('GET', '/v1/extensions/control/quiet-hours/history');
    assert.deepEqual(history.map((c) => c.op), ['put', 'disable', 'enable', 'put']);
    const ops = await page.locator('.hist-table tbody tr td:nth-child(2)').allInnerTexts();
    assert.deepEqual(ops, ['put', 'enable', 'disable', 'put'], 'newest first');
    assert.match(await page.locator('.hist-table tbody tr').first().locator('td:nth-child(3)').innerText(), /user/);
    await snap('extension');
    page.once('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Revert to version 1' }).click();
    await page.locator('.hist-table tbody tr td:nth-child(2)', { hasText: 'revert' }).waitFor();
    const r = await row('control', 'quiet-hours');
    assert.deepEqual(r.spec, spec1);
    assert.equal(JSON.parse(await page.inputValue('#ext-spec')).description, spec1.description);
  });

  await step('a control flipped on the page changes its row', async () => {
    const before = await row('control', 'quiet-hours');
    await page.locator('#ctl-quiet-hours').check();
    await page.waitForFunction(async () => {
      const r = await fetch('/v1/extensions/control/quiet-hours', { credentials: 'same-origin' }).then((x) => x.json());
      return r.spec.value === true;
    });
    const after = await row('control', 'quiet-hours');
    assert.equal(after.version, before.version + 1);
    assert.equal(after.spec.value, true);
    assert.equal(after.spec.description, spec1.description, 'only the value changed');
    // On the home page too, where it flips back.
    await page.click('nav a[data-route=home]');
    const sw = page.locator('#ctl-quiet-hours');
    await sw.waitFor();
    assert.equal(await sw.isChecked(), true);
    await sw.uncheck();
    await page.waitForFunction(async () => {
      const r = await fetch('/v1/extensions/control/quiet-hours', { credentials: 'same-origin' }).then((x) => x.json());
      return r.spec.value === false;
    });
  });

  await step('drift: a built-in row a person changed is marked and explained, kept by a reseed, replaced by a forced one', async () => {
    const seed = await row('renderer', 'json');
    assert.equal(seed.provenance, 'builtin');
    await api('PUT', '/v1/extensions/renderer/json', { type: 'renderer', name: 'json', spec: { ...seed.spec, title: 'My JSON' } });
    await page.goto(URL_ + '/#/extensions');
    const tr = page.locator('.ext-group[data-type=renderer] tr[data-name=json]');
    await tr.locator('.drift').waitFor();
    await tr.getByRole('link', { name: 'json' }).click();
    await page.locator('.drift-box', { hasText: 'differs from the document built into agentd' }).waitFor();
    await page.getByRole('link', { name: 'Extensions' }).first().click();
    await page.getByRole('button', { name: 'Reseed' }).click();
    await page.locator('.reseed-card dd[data-part=kept]', { hasText: 'renderer/json' }).waitFor();
    assert.equal((await row('renderer', 'json')).spec.title, 'My JSON', 'a reseed keeps what a person changed');
    await page.check('#reseed-force');
    await page.getByRole('button', { name: 'Reseed' }).click();
    await page.locator('.reseed-card h2', { hasText: 'Forced reseed' }).waitFor();
    await page.locator('.reseed-card dd[data-part=updated]', { hasText: 'renderer/json' }).waitFor();
    await tr.locator('.drift').waitFor({ state: 'detached' });
    const back = await row('renderer', 'json');
    assert.deepEqual(back.spec, seed.spec);
    assert.equal(back.drift, false);
  });

  await step('delete, after a confirmation', async () => {
    await page.goto(URL_ + '/#/extensions/control/quiet-hours');
    await page.locator('.ext-row h1', { hasText: 'control/quiet-hours' }).waitFor();
    page.once('dialog', (d) => d.dismiss());
    await page.getByRole('button', { name: 'Delete' }).click();
    await row('control', 'quiet-hours');
    page.once('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.locator('.ext-groups').waitFor();
    await missing('control', 'quiet-hours');
  });

  await step('an artifact the agent makes shows beside the chat, with its versions and a download; the tool\'s result by its renderer', async () => {
    await api('PUT', '/v1/extensions/renderer/artifact-result', { type: 'renderer', name: 'artifact-result', spec: {
      title: 'Artifact', match: { tool: 'artifact' }, view: 'kv', options: { columns: [{ field: 'name', title: 'Name' }, { field: 'version', title: 'Version' }] } } });
    await page.goto(URL_ + '/#/chat/assistant/arts');
    await page.fill('#composer', 'Write the weekly report');
    await page.keyboard.press('Enter');
    const card = page.locator('details.tool.ts-ok', { hasText: 'artifact' });
    await card.waitFor();
    await card.locator('summary').click();
    await card.locator('.tool-render dl.r-kv dt', { hasText: 'Name' }).waitFor();
    assert.deepEqual(await card.locator('.tool-render dd').allInnerTexts(), ['report', '1']);
    const panel = page.locator('.art-panel');
    await panel.waitFor({ state: 'visible' });
    await panel.locator('.art-item', { hasText: 'Weekly report' }).waitFor();
    await panel.locator('.art-body .md h1', { hasText: 'Weekly report' }).waitFor();
    const href = await panel.locator('a.art-download').getAttribute('href');
    assert.match(href, /^\/v1\/artifacts\/report\/download\?version=1$/);
    const res = await page.request.get(URL_ + href);
    assert.equal(res.status(), 200);
    assert.match(res.headers()['content-disposition'] || '', /^attachment/);
    assert.match(await res.text(), /# Weekly report/);
    // A new version shows when the tool has written it; the first stays.
    await page.fill('#composer', 'Please update the report');
    await page.keyboard.press('Enter');
    await panel.locator('.art-body .md li', { hasText: 'version two' }).waitFor();
    assert.deepEqual(await panel.locator('.art-versions option').allInnerTexts(), ['version 2', 'version 1']);
    await snap('chat-artifacts');
    await panel.locator('.art-versions').selectOption('1');
    await panel.locator('.art-body .md li', { hasText: 'the console shows artifacts' }).waitFor();
    assert.match(await panel.locator('a.art-download').getAttribute('href'), /version=1$/);
  });

  await step('a widget is a tile on the home page, shown by its renderer; one whose query fails says why in its tile', async () => {
    await api('PUT', '/v1/extensions/widget/recent', { type: 'widget', name: 'recent', spec: { title: 'Recent sessions', query: { kind: 'sessions', limit: 5 }, size: 'wide' } });
    // An action that may change something: a widget never calls it.
    await api('PUT', '/v1/extensions/action/post-note', { type: 'action', name: 'post-note', spec: {
      description: 'Posts a note', method: 'POST', url: 'https://api.example.com/notes', allow_hosts: ['api.example.com'] } });
    await api('PUT', '/v1/extensions/widget/notes', { type: 'widget', name: 'notes', spec: { title: 'Notes', query: { kind: 'action', action: 'post-note' }, size: 'small' } });
    await api('PUT', '/v1/extensions/widget/spend', { type: 'widget', name: 'spend', spec: { title: 'Spend this week', query: { kind: 'usage', group: 'day', since: '168h' }, renderer: 'usage-chart', size: 'medium', order: -1 } });
    await api('PUT', '/v1/extensions/control/model-tier', { type: 'control', name: 'model-tier', spec: { kind: 'enum', value: 'standard', options: ['cheap', 'standard', 'best'], description: 'Which models the agents use' } });
    await page.click('nav a[data-route=home]');
    const tile = page.locator('.tile[data-name=recent]');
    await tile.locator('h2', { hasText: 'Recent sessions' }).waitFor();
    // Shown by the renderer that matches its content type: the sessions table.
    await tile.locator('.tile-body table th', { hasText: 'Session' }).waitFor();
    await tile.locator('.tile-body table td', { hasText: 'assistant/arts' }).waitFor();
    assert.equal(await tile.locator('.tile-error').count(), 0, await tile.innerText());
    // The usage figures by the usage-chart renderer: a bar chart.
    await page.locator('.tile[data-name=spend] svg.r-chart').waitFor();
    await page.locator('.controls select#ctl-model-tier').waitFor();
    const bad = page.locator('.tile[data-name=notes]');
    await bad.locator('.tile-error', { hasText: 'not read-only' }).waitFor();
    await snap('home');
  });

  await step('a theme picked on the home page colours the console, light and dark, and is remembered', async () => {
    await api('PUT', '/v1/extensions/theme/dusk', { type: 'theme', name: 'dusk', spec: { title: 'Dusk', light: { '--accent': '#b4235a' }, dark: { '--accent': '#f472b6' } } });
    const accent = () => page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim());
    const before = await accent();
    await page.goto(URL_ + '/#/home');
    await page.reload();
    await page.locator('#theme-pick option[value=dusk]').waitFor({ state: 'attached' });
    await page.selectOption('#theme-pick', 'dusk');
    await page.waitForFunction(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() === '#b4235a');
    assert.equal(await page.evaluate(() => document.documentElement.getAttribute('style')), '--accent: #b4235a;', 'only the validated property');
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() === '#f472b6');
    await snap('home-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.reload();
    await page.waitForFunction(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() === '#b4235a');
    await page.selectOption('#theme-pick', '');
    await page.waitForFunction((b) => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() === b, before);
  });

  await step('every control has a name', async () => {
    for (const hash of ['#/home', '#/extensions', '#/extensions/new/control', '#/extensions/agent/assistant', '#/chat/assistant/arts']) {
      await page.goto(URL_ + '/' + hash);
      await page.locator('.screen .loading').first().waitFor({ state: 'detached' });
      await page.waitForTimeout(300);
      const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
        .filter((el) => el.offsetParent !== null || el.closest('.nav'))
        .filter((el) => !(el.getAttribute('aria-label') || el.getAttribute('title') || (el.labels && el.labels.length) ||
          el.textContent.trim() || el.getAttribute('placeholder')))
        .map((el) => el.outerHTML.slice(0, 120)));
      assert.deepEqual(unnamed, [], hash);
    }
  });

  await step('on a phone: the pages fit the screen, the artifacts open when asked', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [hash, name] of [['#/extensions', 'phone-extensions'], ['#/home', 'phone-home']]) {
      await page.goto(URL_ + '/' + hash);
      await page.locator('.screen .loading').first().waitFor({ state: 'detached' });
      await page.waitForTimeout(400);
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= 390, hash + ' is ' + wide + ' px wide');
      await snap(name);
    }
    await page.goto(URL_ + '/#/chat/assistant/arts');
    await page.locator('.art-toggle .n', { hasText: '1' }).waitFor();
    assert.equal(await page.locator('.art-panel').isVisible(), false, 'the panel does not cover the chat by itself');
    await page.locator('.art-toggle').click();
    await page.locator('.art-panel .art-body .md').waitFor();
    await page.getByRole('button', { name: 'Close the artifacts' }).click();
    await page.locator('.art-panel').waitFor({ state: 'hidden' });
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  await step('nothing went wrong on the page: no script error, no CSP refusal, no request elsewhere', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await finish();
}
