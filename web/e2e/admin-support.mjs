// The operator for browser tests: an address in admin.emails, made an admin the way a person
// becomes one (sign up, then prove the address with a mailed password-reset link).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { openPage } from './harness.mjs';
import { signUp } from './members-support.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The password the admin chooses on the reset link. */
export const ADMIN_PASSWORD = 'admin-secret-2';

/** The reset link `server`'s log shows for `email` (the test settings log mail). */
export async function resetLinkFor(server, email) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const log = readFileSync(server.logPath, 'utf8');
    const links = [...log.matchAll(/http:\/\/127\.0\.0\.1:\d+\/login\?reset=[A-Za-z0-9_-]+/g)]
      .filter((match) => log.lastIndexOf(email, match.index) !== -1)
      .map((match) => match[0]);
    if (links.length > 0) return links[links.length - 1];
    await sleep(100);
  }
  throw new Error(`no reset mail to ${email} in ${server.logPath}`);
}

/** `email` (listed in the server's admin.emails), signed in after proving the address with a mailed reset link. */
export async function adminPage(server, browser, device, email) {
  await signUp(server.baseUrl, email, 'first-secret-1');
  const opened = await openPage(browser, device);
  const { page } = opened;
  await page.goto(`${server.baseUrl}/login`);
  await page.getByRole('button', { name: 'Forgot password?' }).click();
  const reset = page.getByRole('form', { name: 'Reset your password' });
  await reset.getByLabel('Email').fill(email);
  await reset.getByRole('button', { name: 'Send reset link' }).click();
  await page.getByText('Password reset email sent!', { exact: false }).waitFor();
  await page.goto(await resetLinkFor(server, email));
  await page.getByLabel('New password', { exact: true }).fill(ADMIN_PASSWORD);
  await page.getByLabel('Confirm Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Save new password' }).click();
  await page.waitForURL((url) => url.pathname === '/');
  await page.getByRole('navigation', { name: 'Account' }).getByText(email).waitFor();
  return opened;
}

/** Signs `context` in as `email`, an admin made by [adminPage] (with the password the reset set). */
export async function signInAsAdmin(server, context, email) {
  const response = await fetch(`${server.baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: server.baseUrl },
    body: JSON.stringify({ email, password: ADMIN_PASSWORD }),
  });
  assert.equal(response.status, 200);
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith('helpnow_session='));
  const [name, value] = cookie.split(';')[0].split('=');
  await context.addCookies([{ name, value, url: server.baseUrl }]);
}
