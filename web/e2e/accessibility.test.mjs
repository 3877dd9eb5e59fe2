// axe-core (WCAG 2.0-2.2, levels A and AA, every impact) on the main pages, on a desktop screen and
// a phone, each once its content has loaded, and with a dialog open.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DESKTOP, PHONE, assertAccessible, openPage, setUp } from './harness.mjs';

let env;
before(async () => {
  env = await setUp();
});
after(async () => {
  await env?.close();
});

/** Each page with what shows once it has loaded what it fetches. */
const PAGES = [
  ['/landing', (page) => page.getByRole('button', { name: 'Yahoo Mail' }).waitFor()],
  ['/chat-help', (page) => page.getByRole('heading', { name: 'HelpNow Instant Online Help: Connected', exact: true }).waitFor()],
  ['/Chat-Help-2', (page) => page.getByRole('heading', { name: 'HelpNow Instant Online Help: Connected', exact: true }).waitFor()],
  ['/get-help', (page) => page.getByRole('button', { name: 'Get Help Now' }).waitFor()],
  ['/login', (page) => page.getByRole('button', { name: 'Sign in', exact: true }).waitFor()],
  ['/', (page) => page.getByRole('heading', { name: 'HelpNow AI assist, ask anything!' }).waitFor()],
  ['/signup', (page) => page.getByRole('heading', { level: 1 }).waitFor()],
  ['/account-setup', (page) => page.getByRole('heading', { level: 1 }).waitFor()],
  ['/checkout-success', (page) => page.getByRole('heading', { level: 1 }).waitFor()],
];

for (const [name, device] of [['desktop (1280 px)', DESKTOP], ['phone (375 px)', PHONE]]) {
  describe(`accessibility on a ${name}`, () => {
    test('the main pages have no axe violations', async () => {
      // Reduced motion: axe measures colours as they end up, not half-way through a fade.
      const { page, context, problems } = await openPage(env.browser, { ...device, reducedMotion: 'reduce' });
      for (const [path, loaded] of PAGES) {
        await page.goto(`${env.baseUrl}${path}`);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await loaded(page);
        await page.getByRole('status').filter({ hasText: /Loading/ }).waitFor({ state: 'detached' });
        await assertAccessible(page, `${path} at ${device.viewport.width} px`);
      }
      assert.deepEqual(problems, []);
      await context.close();
    });

    test('an open dialog (a legal text, the trial offer) has no axe violations', async () => {
      const { page, context, problems } = await openPage(env.browser, { ...device, reducedMotion: 'reduce' });
      await page.goto(`${env.baseUrl}/landing`);
      await page.getByRole('button', { name: 'Yahoo Mail' }).waitFor();
      await page.getByRole('contentinfo').getByRole('button', { name: 'Privacy Policy' }).click();
      const dialog = page.getByRole('dialog', { name: 'Privacy Policy' });
      await dialog.getByText('Last updated: 4 May 2025').waitFor();
      await assertAccessible(page, `/landing with the Privacy Policy open at ${device.viewport.width} px`);
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });

      // The members page's trial offer, which /?subscribe=true opens.
      await page.goto(`${env.baseUrl}/?subscribe=true`);
      await page.getByRole('dialog', { name: 'Get Unlimited AI Access!' }).waitFor();
      await assertAccessible(page, `/ with the trial offer open at ${device.viewport.width} px`);
      assert.deepEqual(problems, []);
      await context.close();
    });
  });
}
