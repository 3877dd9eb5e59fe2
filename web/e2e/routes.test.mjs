import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DESKTOP, openPage, setUp } from './harness.mjs';

let env;
before(async () => {
  env = await setUp();
});
after(async () => {
  await env?.close();
});

describe('routes', () => {
  test('an unknown path ends on /', async () => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    await page.goto(`${env.baseUrl}/no-such-page`);
    await page.waitForURL((url) => url.pathname === '/');
    await page.getByRole('heading', { level: 1, name: 'Welcome to HelpNow' }).waitFor();
    await page.getByRole('heading', { name: 'HelpNow AI assist, ask anything!' }).waitFor();
    await page.getByRole('button', { name: 'Select Additional Shortcuts' }).waitFor();
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('every page of the route table opens, with the legal links everywhere and the site footer everywhere but /chat-help', async () => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    const paths = ['/', '/landing', '/get-help', '/funnel', '/chat-help', '/Chat-Help-2', '/email-help', '/login',
      '/signup', '/members', '/account-setup', '/checkout-success', '/checkout-debug', '/admin', '/admin/checkout-debug',
      '/demo-checkout/demo123'];
    for (const routePath of paths) {
      const response = await page.goto(`${env.baseUrl}${routePath}`);
      assert.equal(response.status(), 200, routePath);
      // /members is where sign-in leads: the members page at /; the checkout debug page lives under
      // the dashboard.
      const moved = { '/members': '/', '/checkout-debug': '/admin/checkout-debug' };
      const expected = moved[routePath] ?? routePath;
      await page.waitForURL((url) => url.pathname === expected);
      await page.getByRole('heading', { level: 1 }).waitFor();
      const legalLinks = await page.getByRole('button', { name: 'Privacy Policy' }).count();
      assert.equal(legalLinks, 1, `legal links on ${routePath}`);
      // The chat funnels bring their own footer with the four dialogs; /chat-help has no other.
      const siteFooters = await page.locator('.site-footer').count();
      assert.equal(siteFooters, ['/chat-help', '/Chat-Help-2', '/email-help'].includes(routePath) ? 0 : 1,
        `site footer on ${routePath}`);
    }
    // Opened cold, /demo-checkout/demo123 names no checkout and /account-setup finds no finished
    // checkout: their API answers 404, which the pages show. Nothing else may fail.
    const expected = /Failed to load resource: the server responded with a status of 404/;
    assert.deepEqual(problems.filter((problem) => !expected.test(problem)), []);
    await context.close();
  });

  test('unknown API paths answer JSON 404', async () => {
    const response = await fetch(`${env.baseUrl}/api/no-such-thing`);
    assert.equal(response.status, 404);
    const body = await response.json();
    assert.equal(typeof body.error, 'string');
    assert.equal(typeof body.message, 'string');
  });
});
