// Proving an address takes the account (issue 46, item 1), the owner's side: a stranger signed up
// first with the operator's address and paid signed out with it; the operator opens the link the
// mail brought, is asked for a new password at once, chooses it, and is the admin, while the
// stranger's browser is signed out for good.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertAccessible, DESKTOP, launchBrowser, openPage, PHONE, resultsDir, sidewaysOverflow, signInLinkMailedTo, startServer } from './harness.mjs';

const OWNER = 'operator@example.com';
let server;
let browser;

before(async () => {
  server = await startServer({ APP__ADMIN__EMAILS: OWNER });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});


/** The stranger's moves, through the API from the stranger's own browser (its cookies kept). */
async function strangerSignsUpAndPays(page) {
  const post = (url, data) => page.request.post(`${server.baseUrl}${url}`, { data, headers: { origin: server.baseUrl } });
  assert.equal((await post('/api/auth/signup', { email: OWNER, password: 'strangers1' })).status(), 201);
  await post('/api/auth/logout', {});
  const started = await (await post('/api/create-checkout.js', { source: 'chat_trial_prompt' })).json();
  const paid = await post(`/api/demo-checkout/${started.sessionId}/complete`, {
    email: OWNER,
    cardNumber: '4242 4242 4242 4242',
  });
  const { redirect } = await paid.json();
  const success = await page.request.get(`${server.baseUrl}/api/checkout-success?${redirect.split('?')[1]}`);
  assert.equal((await success.json()).next, 'sign-in', 'held for the address, not granted to the stranger');
  // Signed in again with the password the stranger chose, before the owner proves the address.
  assert.equal((await post('/api/auth/login', { email: OWNER, password: 'strangers1' })).status(), 200);
}

describe('an address taken back by its owner', () => {
  test('the owner opens the mailed link, chooses a new password, and is the admin; the stranger is out', async () => {
    const stranger = await openPage(browser, DESKTOP);
    await strangerSignsUpAndPays(stranger.page);
    await stranger.page.goto(`${server.baseUrl}/`);
    await stranger.page.getByRole('navigation', { name: 'Account' }).getByText(OWNER).waitFor();

    const owner = await openPage(browser, DESKTOP);
    const { page } = owner;
    await page.goto(await signInLinkMailedTo(server, OWNER));
    // Straight to a new password: nothing else answers this session until it has one.
    await page.waitForURL((url) => url.pathname === '/account-setup');
    await page.getByRole('heading', { name: 'Choose a password' }).waitFor();
    await page.getByText('Your email address is confirmed. For your safety, choose a new password before you go on.', { exact: false }).waitFor();
    assert.equal(await page.getByLabel('Email').inputValue(), OWNER);
    await page.screenshot({ path: path.join(resultsDir, 'takeover-choose-password.png'), fullPage: true });
    await assertAccessible(page, '/account-setup after a mailed link took the account over');
    // Another page of the app leads back here.
    await page.goto(`${server.baseUrl}/admin`);
    await page.waitForURL((url) => url.pathname === '/account-setup');

    await page.getByLabel('Password', { exact: true }).fill('owners-own1');
    await page.getByLabel('Confirm Password').fill('owners-own1');
    await page.getByRole('button', { name: 'Access Account' }).click();
    await page.getByRole('heading', { name: 'Welcome to HelpNow!' }).waitFor();
    await page.waitForURL((url) => url.pathname === '/');

    // The payment the owner made waits for the owner, and the dashboard is the owner's.
    await page.getByText('A payment is waiting for you').waitFor();
    await page.goto(`${server.baseUrl}/admin`);
    await page.getByRole('heading', { level: 1 }).filter({ hasText: /dashboard/i }).waitFor();

    // The stranger's browser is signed out, and the stranger's password no longer works.
    await stranger.page.reload();
    await stranger.page.getByRole('link', { name: 'Login' }).first().waitFor();
    const refused = await stranger.page.request.get(`${server.baseUrl}/api/admin/dashboard`);
    assert.equal(refused.status(), 404);
    const login = await stranger.page.request.post(`${server.baseUrl}/api/auth/login`, {
      data: { email: OWNER, password: 'strangers1' },
      headers: { origin: server.baseUrl },
    });
    assert.equal(login.status(), 401);

    // The wrong password (401) and the admin page's refusal to the stranger are answers, not faults.
    const expected = /Failed to load resource: the server responded with a status of (401|403|404)/;
    assert.deepEqual(owner.problems.filter((problem) => !expected.test(problem)), []);
    await owner.context.close();
    await stranger.context.close();
  });

  test('the new-password page reads well on a phone', async () => {
    const { page, context } = await openPage(browser, PHONE);
    // A member who signed up with a password and later opens a mailed link: the same page.
    const email = 'phone@example.com';
    const post = (url, data) => page.request.post(`${server.baseUrl}${url}`, { data, headers: { origin: server.baseUrl } });
    assert.equal((await post('/api/auth/signup', { email, password: 'first-one1' })).status(), 201);
    await post('/api/auth/logout', {});
    const started = await (await post('/api/create-checkout.js', { source: 'chat_trial_prompt' })).json();
    const paid = await post(`/api/demo-checkout/${started.sessionId}/complete`, { email, cardNumber: '4242 4242 4242 4242' });
    const { redirect } = await paid.json();
    await page.request.get(`${server.baseUrl}/api/checkout-success?${redirect.split('?')[1]}`);
    await page.goto(await signInLinkMailedTo(server, email));
    await page.waitForURL((url) => url.pathname === '/account-setup');
    await page.getByLabel('Confirm Password').waitFor();
    const overflow = await sidewaysOverflow(page);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone`);
    await page.screenshot({ path: path.join(resultsDir, 'takeover-choose-password-phone.png'), fullPage: true });
    await context.close();
  });
});
