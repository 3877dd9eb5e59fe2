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

describe('legal dialogs', () => {
  test('a footer button opens the text, and Close and Escape shut it', async () => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    await page.goto(`${env.baseUrl}/landing`);

    const opener = page.getByRole('button', { name: 'Privacy Policy' });
    await opener.click();
    const dialog = page.getByRole('dialog', { name: 'Privacy Policy' });
    await dialog.getByText('Last updated: 4 May 2025').waitFor();
    const text = await dialog.textContent();
    assert.match(text, /HelpNow/);
    assert.match(text, /under 13/);
    assert.doesNotMatch(text, /\{\{/, 'the server filled in every placeholder');
    assert.equal(await dialog.getAttribute('aria-modal'), 'true');

    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await opener.evaluate((element) => element === document.activeElement), true, 'focus is back');

    await page.getByRole('button', { name: 'Contact Us' }).click();
    const contact = page.getByRole('dialog', { name: 'Contact Us' });
    await contact.getByRole('link', { name: 'support@helpnow.example' }).waitFor();
    assert.match(await contact.textContent(), /Monday to Friday, 9:00 to 18:00 Eastern Time/);
    await page.keyboard.press('Escape');
    await contact.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Refund Policy' }).click();
    const refund = page.getByRole('dialog', { name: 'Refund Policy' });
    await refund.getByText('5-7 business days').first().waitFor();
    await page.mouse.click(5, 5); // the backdrop
    await refund.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Terms & Conditions' }).click();
    const terms = page.getByRole('dialog', { name: 'Terms & Conditions' });
    await terms.getByText('at least 18 years old').waitFor();
    await page.keyboard.press('Escape');
    await terms.waitFor({ state: 'detached' });

    assert.deepEqual(problems, []);
    await context.close();
  });

  test('Tab stays inside an open dialog', async () => {
    const { page, context } = await openPage(env.browser, DESKTOP);
    await page.goto(`${env.baseUrl}/landing`);
    await page.getByRole('button', { name: 'Contact Us' }).click();
    const dialog = page.getByRole('dialog', { name: 'Contact Us' });
    await dialog.getByRole('link', { name: 'support@helpnow.example' }).waitFor();
    for (let presses = 0; presses < 8; presses += 1) {
      await page.keyboard.press(presses % 3 === 2 ? 'Shift+Tab' : 'Tab');
      assert.equal(await dialog.evaluate((element) => element.contains(document.activeElement)), true);
    }
    await context.close();
  });
});
