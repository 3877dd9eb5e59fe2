import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { DESKTOP, openPage, PHONE, setUp, sidewaysOverflow } from './harness.mjs';

let env;
before(async () => {
  env = await setUp();
});
after(async () => {
  await env?.close();
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The reset link of the newest mail to `email`, as the outbox logged it. */
async function resetLinkFor(email) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const log = readFileSync(env.server.logPath, 'utf8');
    const links = [...log.matchAll(/http:\/\/127\.0\.0\.1:\d+\/login\?reset=[A-Za-z0-9_-]+/g)]
      .filter((match) => log.lastIndexOf(email, match.index) !== -1)
      .map((match) => match[0]);
    if (links.length > 0) return links[links.length - 1];
    await sleep(100);
  }
  throw new Error(`no reset mail to ${email} in ${env.server.logPath}`);
}

describe('accounts', () => {
  test('sign up, sign out, sign in, and reset the password by the mailed link', async () => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    const email = 'journey@example.com';

    await page.goto(`${env.baseUrl}/signup`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('first-secret');
    await page.getByRole('button', { name: 'Create Account' }).click();
    await page.waitForURL((url) => url.pathname === '/');
    await page.getByRole('navigation', { name: 'Account' }).getByText(email).waitFor();

    // The cookie is not readable by the page.
    assert.equal(await page.evaluate(() => document.cookie.includes('helpnow_session')), false);
    const cookies = await context.cookies();
    const session = cookies.find((cookie) => cookie.name === 'helpnow_session');
    assert.ok(session?.httpOnly && session.sameSite === 'Lax', JSON.stringify(session));

    await page.getByRole('link', { name: 'Logout' }).click();
    await page.waitForURL((url) => url.pathname === '/login');
    await page.getByRole('link', { name: 'Login' }).waitFor();

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('wrong-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByText(
        'Invalid email or password. If you signed up through our instant checkout, you may need to reset your password.',
      )
      .waitFor();
    await page.getByLabel('Password').fill('first-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/');
    await page.getByRole('link', { name: 'Logout' }).click();
    await page.waitForURL((url) => url.pathname === '/login');

    await page.getByRole('button', { name: 'Forgot password?' }).click();
    const reset = page.getByRole('form', { name: 'Reset your password' });
    await reset.getByLabel('Email').fill(email);
    await reset.getByRole('button', { name: 'Send reset link' }).click();
    await page
      .getByText(
        "Password reset email sent! Check your inbox for instructions to reset your password. If you don't see it, check your spam folder.",
      )
      .waitFor();

    const link = await resetLinkFor(email);
    await page.goto(link);
    await page.getByLabel('New password', { exact: true }).fill('second-secret');
    await page.getByLabel('Confirm Password').fill('second-secret');
    await page.getByRole('button', { name: 'Save new password' }).click();
    await page.waitForURL((url) => url.pathname === '/');
    await page.getByRole('navigation', { name: 'Account' }).getByText(email).waitFor();

    // The link was single use.
    await page.goto(link);
    await page.getByText('This password reset link has expired or was already used. Please request a new one.').waitFor();
    // The wrong password (401) and the spent link (410) are answers the page shows; nothing else failed.
    const expected = /Failed to load resource: the server responded with a status of (401|410)/;
    assert.deepEqual(problems.filter((problem) => !expected.test(problem)), []);
    await context.close();
  });

  test('the sign-in page reads well on a phone', async () => {
    const { page, context, problems } = await openPage(env.browser, PHONE);
    await page.goto(`${env.baseUrl}/login`);
    await page.getByRole('heading', { name: 'Sign in to your account' }).waitFor();
    await page.getByRole('link', { name: 'Need an account? Sign up' }).waitFor();
    const overflow = await sidewaysOverflow(page);
    assert.ok(overflow <= 0, `no sideways scrolling (${overflow} px)`);
    assert.deepEqual(problems, []);
    await context.close();
  });
});
