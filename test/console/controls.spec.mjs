// End-to-end test of the console's controls as agentd is set up by
// default, without gateway.remote_admin (harness.mjs says how
// cmd/agentd/console_test.go runs it): a control is flipped on the home
// page with the console's login alone, and a change the token may not
// make over TCP is refused with a reason and changes nothing.

import assert from 'node:assert/strict';
import { URL_, TOKEN, api, page, problems, step, finish } from './harness.mjs';

const control = () => api('GET', '/v1/extensions/control/quiet-hours');

try {
  await step('log in', async () => {
    await api('PUT', '/v1/extensions/control/quiet-hours', { type: 'control', name: 'quiet-hours', spec: { kind: 'bool', value: false, description: 'Agents stay quiet at night' } });
    await page.goto(URL_ + '/#/home');
    await page.fill('#token', TOKEN);
    await page.keyboard.press('Enter');
    await page.locator('#ctl-quiet-hours').waitFor();
  });

  await step('a control is flipped on the home page with the login alone', async () => {
    const before = await control();
    await page.locator('#ctl-quiet-hours').check();
    await page.waitForFunction(async () => {
      const r = await fetch('/v1/extensions/control/quiet-hours', { credentials: 'same-origin' }).then((x) => x.json());
      return r.spec.value === true;
    });
    const after = await control();
    assert.equal(after.version, before.version + 1);
    assert.equal(after.updated_by, 'user:console');
  });

  await step('a change that needs remote_admin is refused with the reason, and nothing changes', async () => {
    const before = await control();
    await page.goto(URL_ + '/#/extensions/control/quiet-hours');
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.locator('.toast-error', { hasText: 'remote_admin' }).waitFor();
    await page.locator('.ext-status .badge.st-active').waitFor();
    const after = await control();
    assert.equal(after.version, before.version);
    assert.equal(after.enabled, true);
  });

  await step('nothing went wrong on the page', async () => {
    assert.deepEqual(problems, []);
  });
} catch {
  // reported by step
} finally {
  await finish();
}
