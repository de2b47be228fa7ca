// An app (extension type `app`) in headless Chromium, driven with
// playwright-core (installed by `npm ci --prefix test/npm`): the browser
// enforces the app's own Content-Security-Policy, and the app calls the
// API with the console's login.
//
// internal/gateway/webext_browser_test.go serves an app "probe" and an
// artifact "page" behind the token and runs this file with:
//
//   URL       the API's address (http://127.0.0.1:PORT)
//   TOKEN     the gateway token
//   CHROMIUM  the browser (default /usr/bin/chromium)
//
// Each step prints "ok - name" or "not ok - name"; the last line is
// "N passed, N failed".

import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const require = createRequire(new URL('../npm/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const URL_ = process.env.URL;
const TOKEN = process.env.TOKEN;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
if (!URL_ || !TOKEN) {
  console.error('app.spec.mjs: set URL and TOKEN');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic'],
});
const context = await browser.newContext({ acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(15000);
const refused = [];
page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) refused.push(m.text()); });
let dialogs = 0;
page.on('dialog', (d) => { dialogs++; d.dismiss(); });

let passed = 0, failed = 0;
async function step(name, fn) {
  try {
    await fn();
    passed++;
    console.log('ok - ' + name);
  } catch (e) {
    failed++;
    console.log('not ok - ' + name + ': ' + (e && e.stack || e));
  }
}

await step('an app needs a login', async () => {
  const res = await page.goto(URL_ + '/apps/probe/');
  assert.equal(res.status(), 401);
});

await step('the console login opens it', async () => {
  const res = await page.request.post(URL_ + '/v1/auth/login', { data: { token: TOKEN } });
  assert.equal(res.status(), 200);
  const app = await page.goto(URL_ + '/apps/probe/');
  assert.equal(app.status(), 200);
  assert.match(app.headers()['content-security-policy'], /script-src 'self';/);
});

await step("the app's own script runs and calls the API with the login", async () => {
  await page.waitForFunction(() => document.getElementById('out').textContent !== 'waiting');
  assert.equal(await page.textContent('#out'), 'widgets 200');
});

await step('an inline script does not run', async () => {
  assert.notEqual(await page.title(), 'inline ran');
  assert.equal(dialogs, 0);
  assert.ok(refused.some((t) => /inline script/i.test(t)), 'no CSP refusal of the inline script: ' + refused.join(' | '));
});

await step('an inline style does not apply', async () => {
  const color = await page.$eval('#styled', (e) => getComputedStyle(e).color);
  assert.notEqual(color, 'rgb(255, 0, 0)');
});

await step("the app's stylesheet applies", async () => {
  const color = await page.$eval('#out', (e) => getComputedStyle(e).color);
  assert.equal(color, 'rgb(0, 128, 0)');
});

await step('a request to another origin is refused', async () => {
  await page.waitForFunction(() => document.getElementById('ext').textContent !== 'waiting');
  assert.equal(await page.textContent('#ext'), 'blocked');
  assert.ok(refused.some((t) => /connect-src/i.test(t)), 'no CSP refusal of the connection: ' + refused.join(' | '));
});

await step("an artifact's HTML downloads, never renders", async () => {
  const downloaded = page.waitForEvent('download');
  await page.goto(URL_ + '/v1/artifacts/page/download').catch(() => {});
  const d = await downloaded;
  assert.equal(d.suggestedFilename(), 'page.html');
  assert.equal(dialogs, 0);
});

await browser.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
