// What the console's end-to-end specs share: the browser and its page,
// watched for what the page must not do (script errors, CSP refusals,
// requests to another origin), steps that report as they pass or fail,
// screenshots, the API called directly, and agentd restarted on request.
//
// cmd/agentd/console_test.go starts `agentd serve --listen` against a scripted
// model and runs a spec with:
//
//   URL             the console's address (http://127.0.0.1:PORT)
//   TOKEN           the gateway token (`agentd token`)
//   SCREENSHOT_DIR  where the screenshots go (PNG); empty: none are taken
//   FAILURE_DIR     where a failing step's screenshot goes (default
//                   SCREENSHOT_DIR, else the system's temporary folder)
//   CHROMIUM        the browser (default /usr/bin/chromium)
//
// The Go test also restarts agentd when this script asks: it prints
// "@@restart" and waits for a line "restarted" on its standard input.
//
// Each step prints "ok - name" or "not ok - name"; the last line is
// "N passed, N failed".

import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(new URL('../npm/package.json', import.meta.url));
const { chromium } = require('playwright-core');

export const URL_ = process.env.URL;
export const TOKEN = process.env.TOKEN;
const SHOTS = process.env.SCREENSHOT_DIR || '';
const FAILURES = process.env.FAILURE_DIR || SHOTS || join(tmpdir(), 'agentd-console-failures');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
if (!URL_ || !TOKEN) {
  console.error('console specs: set URL and TOKEN');
  process.exit(2);
}
if (SHOTS) mkdirSync(SHOTS, { recursive: true });
export const base = new URL(URL_);

const lines = createInterface({ input: process.stdin });
const waiting = [];
lines.on('line', (l) => { const w = waiting.shift(); if (w) w(l.trim()); });
const nextLine = () => new Promise((resolve) => waiting.push(resolve));

// restart asks the Go test to restart agentd (same port, same data).
export async function restart() {
  console.log('@@restart');
  const got = await nextLine();
  assert.equal(got, 'restarted');
}

// api calls agentd directly with the token, as another client would.
export async function api(method, path, body) {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// launch starts Chromium, up to three times: on a loaded machine it now
// and then crashes as it starts, before any page of the console loads.
async function launch() {
  for (let i = 1; ; i++) {
    try {
      return await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
          '--disable-sync', '--no-first-run', '--disable-quic'],
      });
    } catch (e) {
      if (i === 3) throw e;
      console.error(`chromium did not start (try ${i}): ${String(e.message).split('\n')[0]}`);
    }
  }
}

export const browser = await launch();
export const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light', deviceScaleFactor: 1 });
export const page = await context.newPage();
page.setDefaultTimeout(15000);

// What the page does that it must not: script errors, CSP refusals,
// requests to another origin.
export const problems = [];
export const frames = [];
page.on('pageerror', (e) => problems.push('page error: ' + e.message));
page.on('console', (m) => {
  if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push('console error: ' + m.text());
});
page.on('request', (r) => {
  const u = new URL(r.url());
  if (u.protocol === 'data:') return;
  if (u.host !== base.host || !['http:', 'ws:', 'https:', 'wss:'].includes(u.protocol)) problems.push('request elsewhere: ' + r.url());
});
// Every refusal of the page's Content-Security-Policy, on every page it loads.
await page.exposeFunction('cspViolation', (what) => problems.push('CSP refused ' + what));
await page.addInitScript(() => {
  document.addEventListener('securitypolicyviolation', (e) => window.cspViolation(e.violatedDirective + ' ' + (e.blockedURI || 'inline')));
});
page.on('websocket', (ws) => {
  ws.on('framereceived', (f) => { if (typeof f.payload === 'string') frames.push(f.payload); });
});

let passed = 0;
let failed = 0;
export async function step(name, fn) {
  try {
    await fn();
    passed++;
    console.log('ok - ' + name);
  } catch (e) {
    failed++;
    console.log('not ok - ' + name + '\n  ' + String(e && e.stack || e).split('\n').join('\n  '));
    mkdirSync(FAILURES, { recursive: true });
    await page.screenshot({ path: join(FAILURES, 'failure-' + name.replace(/\W+/g, '-') + '.png') }).catch(() => {});
    throw e;
  }
}
// shot writes a screenshot of the page, when screenshots were asked for.
export const shot = async (name, opts = {}) => { if (SHOTS) await page.screenshot({ path: join(SHOTS, name + '.png'), ...opts }); };

// finish closes the browser and prints the summary the Go test reads.
export async function finish() {
  await browser.close();
  lines.close();
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}
