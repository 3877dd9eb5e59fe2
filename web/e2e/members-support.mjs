// Members for tests: an account with an active trial, made the way a visitor makes one (sign
// up, start the trial checkout, pay the demo checkout with the test card).

import assert from 'node:assert/strict';

const TEST_CARD = '4242 4242 4242 4242';

async function call(baseUrl, path, { method = 'POST', cookie, body } = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      origin: baseUrl,
      ...(cookie ? { cookie } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return { response, json: text ? JSON.parse(text) : null };
}

/** Signs up `email`; the session cookie (`helpnow_session=…`). */
export async function signUp(baseUrl, email, password = 'correct horse battery') {
  const { response } = await call(baseUrl, '/api/auth/signup', { body: { email, password } });
  const cookie = response.headers
    .getSetCookie()
    .find((value) => value.startsWith('helpnow_session='));
  if (!cookie) throw new Error('sign-up set no session cookie');
  return cookie.split(';')[0];
}

/** Pays the trial checkout for the member signed in with `cookie`. */
export async function payTrial(baseUrl, cookie, email) {
  const { json: started } = await call(baseUrl, '/api/create-checkout.js', {
    cookie,
    body: { source: 'chat_trial_prompt', isTrial: true },
  });
  const checkoutId = new URL(started.url, baseUrl).pathname.split('/').pop();
  await call(baseUrl, `/api/demo-checkout/${checkoutId}/complete`, {
    cookie,
    body: { email, cardNumber: TEST_CARD },
  });
}

/** Signs up `email` and pays the trial checkout: the session cookie of a member with access. */
export async function memberWithTrial(baseUrl, email) {
  const cookie = await signUp(baseUrl, email);
  await payTrial(baseUrl, cookie, email);
  const { json: me } = await call(baseUrl, '/api/auth/me', { method: 'GET', cookie });
  if (!me.user?.access?.hasAccess) throw new Error(`no access after paying: ${JSON.stringify(me)}`);
  return cookie;
}

/**
 * On the demo checkout: pays with the test card, passes checkout success and chooses a password on
 * account setup, then waits for the members page with the trial.
 */
export async function payAndSetUpAccount(page, email, password) {
  await page.getByText('$1.00 due today').waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Card number').fill('4242 4242 4242 4242');
  await page.getByRole('button', { name: 'Pay $1.00 and start trial' }).click();

  await page.waitForURL((url) => url.pathname === '/account-setup', { timeout: 20_000 });
  const params = new URL(page.url()).searchParams;
  assert.equal(params.get('success'), 'true');
  assert.equal(params.get('email'), email);
  await page.getByRole('heading', { name: 'Choose a password' }).waitFor();
  assert.equal(await page.getByLabel('Email').inputValue(), email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Confirm Password').fill(password);
  await page.getByRole('button', { name: 'Access Account' }).click();
  await page.getByText('Trial Active').first().waitFor();
  await page.waitForURL((url) => url.pathname === '/' && url.search === '', { timeout: 10_000 });
  await page.getByRole('navigation', { name: 'Account' }).getByText(email).waitFor();
}
