import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DESKTOP, PHONE, openPage, resultsDir, setUp } from './harness.mjs';

let env;
before(async () => {
  env = await setUp();
});
after(async () => {
  await env?.close();
});

const tiles = (page) => page.getByRole('list', { name: /sites you can add/i }).getByRole('button');

async function openLanding(options = DESKTOP) {
  const opened = await openPage(env.browser, options);
  await opened.page.goto(`${env.baseUrl}/landing`);
  await tiles(opened.page).first().waitFor();
  return opened;
}

describe('landing page', () => {
  test('shows the hero, How It Works and the pricing blurb', async () => {
    const { page, context, problems } = await openLanding();
    const hero = await page.getByRole('heading', { level: 1 }).textContent();
    assert.ok(hero.startsWith('Easily Access Your Favorite Sites. Select Your Shortcuts...'), hero);
    await page.getByRole('heading', { name: 'How It Works' }).waitFor();
    await page.getByText('Free 7-Day Trial, Then Only $20/month. No commitments.', { exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'HelpNow' }).getAttribute('href'), '/');
    // Every icon the server names is served and is a real image (once the browser is done
    // loading them: right after the first paint some may still be on their way).
    await page.waitForFunction(() =>
      [...document.querySelectorAll('.shortcut-tile__icon')].every((image) => image.complete),
    );
    const broken = await page.$$eval('.shortcut-tile__icon', (images) =>
      images.filter((image) => !image.complete || image.naturalWidth === 0).map((image) => image.src),
    );
    assert.deepEqual(broken, []);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('Show More shows all 24 sites and Show Less goes back to 10', async () => {
    const { page, context, problems } = await openLanding();
    assert.equal(await tiles(page).count(), 10);
    await page.getByRole('button', { name: 'Show More' }).click();
    assert.equal(await tiles(page).count(), 24);
    assert.equal(await tiles(page).last().textContent(), 'Viber✓');
    await page.getByRole('button', { name: 'Show Less' }).click();
    assert.equal(await tiles(page).count(), 10);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('selecting a site shows Save Favorites, which sticks while far below and opens the signup modal', async () => {
    const { page, context, problems } = await openLanding({ ...PHONE, viewport: { width: 375, height: 600 } });
    await page.getByRole('button', { name: 'Show More' }).click();
    assert.equal(await page.getByRole('button', { name: 'Save Favorites' }).count(), 0);

    await page.evaluate(() => window.scrollTo(0, 0));
    const yahoo = page.getByRole('button', { name: 'Yahoo Mail' });
    await yahoo.click();
    assert.equal(await yahoo.getAttribute('aria-pressed'), 'true');
    assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem('selectedIcons'))), ['Yahoo Mail']);

    // The in-page button sits below 24 tiles, far under the screen: the bar is fixed on screen.
    const save = page.getByRole('button', { name: 'Save Favorites' });
    await page.locator('.save-favorites__bar[data-sticky="true"]').waitFor();
    assert.equal(await page.locator('.save-favorites__bar').evaluate((bar) => getComputedStyle(bar).position), 'fixed');
    const box = await save.boundingBox();
    assert.ok(box && box.y >= 0 && box.y + box.height <= 600, `sticky button on screen: ${JSON.stringify(box)}`);

    // Scrolled down to its place, the button is back in the page.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await page.locator('.save-favorites__bar[data-sticky="false"]').waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator('.save-favorites__bar[data-sticky="true"]').waitFor();

    await save.click();
    const dialog = page.getByRole('dialog', { name: 'Create your account' });
    await dialog.waitFor();
    assert.equal(await dialog.getByRole('link', { name: 'Log in' }).getAttribute('href'), '/login');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('Save Favorites -> sign up -> the free 7-day trial the blurb promises -> members page with the trial', async () => {
    const { page, context, problems } = await openLanding();
    await page.getByText('Free 7-Day Trial, Then Only $20/month. No commitments.').waitFor();
    await page.getByRole('button', { name: 'Gmail' }).click();
    await page.getByRole('button', { name: 'Save Favorites' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create your account' });
    await dialog.getByText(/nothing is charged today/).waitFor();
    await dialog.getByLabel('Email').fill(`e2e-${Date.now()}@example.com`);
    await dialog.getByLabel('Password').fill('correct horse battery');
    await dialog.getByRole('button', { name: 'Create Account' }).click();

    // The checkout says what is charged, and when: nothing today.
    await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'));
    await page.getByText('$0.00 due today').waitFor();
    await page.getByText('7-day free trial, then $20.00/month').waitFor();
    await page.getByText(/^First \$20\.00 charge on .+\. Cancel before then and you pay nothing more\.$/).waitFor();
    assert.equal(await page.getByText(/setup fee/).count(), 0, 'no fee on the free trial');
    await page.screenshot({ path: path.join(resultsDir, 'free-trial-checkout.png'), fullPage: true });
    await page.getByLabel('Card number').fill('4242 4242 4242 4242');
    await page.getByRole('button', { name: 'Start free trial' }).click();

    await page.waitForURL((url) => url.pathname === '/' && url.search === '');
    await page.getByRole('dialog', { name: /^Welcome to / }).getByRole('button', { name: /^Start Using / }).click();
    await page.getByText('Trial Active').first().waitFor();
    assert.equal(await page.getByRole('button', { name: 'Refund my $1 setup fee' }).count(), 0, 'no fee was taken');
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('a site can be chosen with the keyboard alone', async () => {
    const { page, context, problems } = await openLanding();
    let focused = '';
    for (let presses = 0; presses < 40 && focused !== 'Yahoo Mail'; presses += 1) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.textContent?.replace('✓', '') ?? '');
    }
    assert.equal(focused, 'Yahoo Mail', 'Tab reaches the first site');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, 'none', 'the focused site shows a focus ring');

    await page.keyboard.press('Enter');
    assert.equal(await page.getByRole('button', { name: 'Yahoo Mail' }).getAttribute('aria-pressed'), 'true');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    assert.equal(await page.getByRole('button', { name: 'YouTube' }).getAttribute('aria-pressed'), 'true');
    await page.getByRole('button', { name: 'Save Favorites' }).waitFor();
    assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem('selectedIcons'))), [
      'Yahoo Mail',
      'YouTube',
    ]);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('fits a phone screen without sideways scrolling', async () => {
    const { page, context, problems } = await openLanding(PHONE);
    const overflow = () =>
      page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.equal(await overflow(), 0, 'collapsed grid');
    await page.getByRole('button', { name: 'Show More' }).click();
    await page.getByRole('button', { name: 'Instagram' }).click();
    assert.equal(await overflow(), 0, 'all 24 sites and the save bar');
    await page.screenshot({ path: path.join(resultsDir, 'landing-phone.png'), fullPage: true });
    await page.getByRole('button', { name: 'Terms & Conditions' }).click();
    await page.getByRole('dialog', { name: 'Terms & Conditions' }).getByText('Last updated: 4 May 2025').waitFor();
    assert.equal(await overflow(), 0, 'legal dialog open');
    await page.screenshot({ path: path.join(resultsDir, 'legal-dialog-phone.png') });
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('desktop screenshot', async () => {
    const { page, context } = await openLanding();
    await page.screenshot({ path: path.join(resultsDir, 'landing-desktop.png'), fullPage: true });
    await page.getByRole('button', { name: 'Zoom' }).click();
    await page.getByRole('button', { name: 'Save Favorites' }).click();
    await page.getByRole('dialog', { name: 'Create your account' }).waitFor();
    await page.screenshot({ path: path.join(resultsDir, 'signup-modal-desktop.png') });
    await context.close();
  });
});
