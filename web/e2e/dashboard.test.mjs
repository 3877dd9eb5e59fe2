// The operator's dashboard (issue 19) as an operator meets it: visitors come from ad campaigns
// through the funnels, one pays the $1 trial and has the fee back, and the admin (an address in
// admin.emails, proved by a mailed link) opens /admin and reads the counts, rates and revenue per
// funnel, campaign and keyword. Anyone else finds nothing there.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertAccessible, DESKTOP, launchBrowser, openPage, PHONE, resultsDir, sidewaysOverflow, startServer } from './harness.mjs';
import { adminPage, signInAsAdmin } from './admin-support.mjs';
import { payAndSetUpAccount } from './members-support.mjs';

const ADMIN = 'ops@example.com';
let server;
let browser;
before(async () => {
  server = await startServer({ APP__ADMIN__EMAILS: ADMIN });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});


/** Sends each message and waits for the assistant's reply to it. */
async function chat(page, messages) {
  for (const text of messages) {
    const replies = await page.locator('[role="log"] .chat-message--assistant').count();
    await page.getByLabel('Your question').fill(text);
    await page.getByLabel('Your question').press('Enter');
    await page.waitForFunction(
      (n) => document.querySelectorAll('[role="log"] .chat-message--assistant').length > n,
      replies,
      { timeout: 20_000 },
    );
  }
}

/** A table row's cells (the row header first) as text. */
async function rowCells(row) {
  return row.locator('th, td').allInnerTexts();
}

describe('the operator dashboard', () => {
  test('visitors from campaigns through the funnels to a trial and a refund, read per funnel, campaign and keyword', async (t) => {
    // Ann: the refundable-fee chat from campaign 222 ('wifi'), to the $1 trial, then her fee back.
    const ann = await openPage(browser, DESKTOP);
    await ann.page.goto(`${server.baseUrl}/Chat-Help-2?campaignid=222&keyword=wifi&utm_source=google&utm_medium=cpc`);
    await ann.page.locator('[role="log"] .chat-message--assistant').first().waitFor();
    await chat(ann.page, [
      'My laptop will not connect to the wifi at home',
      'It shows the network but says it cannot connect',
      'I turned the router off and on again',
    ]);
    await ann.page.getByRole('button', { name: 'Get started >>' }).click();
    await ann.page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'), { timeout: 10_000 });
    await payAndSetUpAccount(ann.page, 'ann@example.com', 'ann-secret-1');
    await ann.page.getByRole('button', { name: 'Refund my $1 setup fee' }).click();
    await ann.page.getByRole('button', { name: 'Yes, refund my $1' }).click();
    await ann.page.getByText('Your $1 setup fee has been refunded.', { exact: false }).waitFor();

    // Bob: the chat funnel from campaign 111 ('printer'), one message, then gone.
    const bob = await openPage(browser, DESKTOP);
    await bob.page.goto(`${server.baseUrl}/chat-help?campaignid=111&keyword=printer`);
    await bob.page.locator('[role="log"] .chat-message--assistant').first().waitFor();
    await chat(bob.page, ['My printer will not print']);

    // Cat: the help funnel from campaign 111 ('scanner'), to the solution, no checkout.
    const cat = await openPage(browser, DESKTOP);
    await cat.page.goto(`${server.baseUrl}/get-help?campaignid=111&keyword=scanner`);
    await cat.page.getByLabel('Describe your issue').fill('My scanner is not found by the computer.');
    await cat.page.getByLabel('Describe your issue').press('Enter');
    await cat.page.getByRole('heading', { level: 1, name: 'Solution Found:', exact: true }).waitFor({ timeout: 15_000 });

    // A member who is not an admin finds nothing at /admin, and neither does the API answer her.
    await ann.page.goto(`${server.baseUrl}/admin`);
    await ann.page.getByText('This page is not available.').waitFor();
    const refused = await ann.page.request.get(`${server.baseUrl}/api/admin/dashboard`);
    assert.equal(refused.status(), 404);

    const { page, problems } = await adminPage(server, browser, DESKTOP, ADMIN);
    await page.goto(`${server.baseUrl}/admin`);
    const funnels = page.getByRole('table', { name: /how far they got/ });
    const refundable = funnels.getByRole('row', { name: /Refundable-fee chat/ });
    await refundable.waitFor();
    // Visitors, first message, final message, checkout, trial, paid, retained: 1, 1, 1, 1, 1, 0, 0.
    const cells = await rowCells(refundable);
    t.diagnostic(`refundable-fee funnel: ${JSON.stringify(cells)}`);
    assert.deepEqual(
      cells.slice(1, 8).map((cell) => cell.split('\n')[0]),
      ['1', '1', '1', '1', '1', '0', '0'],
    );
    assert.equal(cells[8], '100.0%', 'visitor to trial');
    assert.equal(cells[9], '$0.00', 'the $1 fee taken and given back');
    const chatRow = await rowCells(funnels.getByRole('row', { name: /Chat funnel/ }));
    assert.deepEqual(chatRow.slice(1, 5).map((cell) => cell.split('\n')[0]), ['1', '1', '0', '0']);
    const help = await rowCells(funnels.getByRole('row', { name: /Help form/ }));
    assert.deepEqual(help.slice(1, 5).map((cell) => cell.split('\n')[0]), ['1', '1', '1', '0']);

    const revenue = page.getByRole('region', { name: 'Revenue' });
    await revenue.getByText('Setup fees taken').waitFor();
    assert.equal(await revenue.locator('dd').first().innerText(), '$1.00');
    assert.equal(await revenue.locator('dd').nth(1).innerText(), '$1.00');

    // Per campaign, then campaign 111's keywords.
    const campaigns = page.getByRole('table', { name: /Choose a campaign/ });
    const c222 = await rowCells(campaigns.getByRole('row', { name: /^222/ }));
    assert.deepEqual(c222.slice(0, 6), ['222', '1', '1', '1', '1', '1']);
    const c111 = await rowCells(campaigns.getByRole('row', { name: /^111/ }));
    assert.deepEqual(c111.slice(0, 4), ['111', '2', '2', '1']);
    await page.screenshot({ path: path.join(resultsDir, 'admin-dashboard.png'), fullPage: true });
    await assertAccessible(page, '/admin');

    await campaigns.getByRole('button', { name: '111' }).click();
    await page.getByRole('heading', { name: 'Keywords of campaign 111' }).waitFor();
    const keywords = page.getByRole('table', { name: 'Click a column to sort.' });
    assert.deepEqual((await rowCells(keywords.getByRole('row', { name: /^printer/ }))).slice(0, 3), ['printer', '1', '1']);
    assert.deepEqual((await rowCells(keywords.getByRole('row', { name: /^scanner/ }))).slice(0, 4), ['scanner', '1', '1', '1']);

    // The CSV of the keywords, as the link downloads it.
    const href = await page.getByRole('link', { name: 'Download CSV' }).last().getAttribute('href');
    const csv = await page.request.get(`${server.baseUrl}${href}`);
    assert.equal(csv.status(), 200);
    const text = await csv.text();
    assert.match(text, /^keyword,campaign,visitors,/);
    assert.match(text, /\nprinter,111,1,1,0,/);

    assert.deepEqual(problems, []);
    for (const opened of [ann, bob, cat]) await opened.context.close();
  });

  test('on a phone the dashboard reads without sideways scrolling of the page', async () => {
    const { page, context, problems } = await openPage(browser, PHONE);
    await signInAsAdmin(server, context, ADMIN);
    await page.goto(`${server.baseUrl}/admin`);
    await page.getByRole('table', { name: /how far they got/ }).waitFor();
    await page.getByRole('region', { name: 'Live' }).getByText('Conversations open').waitFor();
    const overflow = await sidewaysOverflow(page);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    await page.screenshot({ path: path.join(resultsDir, 'admin-dashboard-phone.png'), fullPage: true });
    await page
      .getByRole('region', { name: 'Delete an account' })
      .screenshot({ path: path.join(resultsDir, 'admin-delete-account-phone.png') });
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('an admin deletes an account on its owner\'s request: the owner is signed out for good, the figures stay', async () => {
    // Ann (the first test's paying visitor) asks for her data to be deleted; her browser is
    // still signed in.
    const ann = await openPage(browser, DESKTOP);
    const signedIn = await fetch(`${server.baseUrl}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.baseUrl },
      body: JSON.stringify({ email: 'ann@example.com', password: 'ann-secret-1' }),
    });
    assert.equal(signedIn.status, 200);
    const annCookie = signedIn.headers.getSetCookie().find((value) => value.startsWith('helpnow_session='));
    const [annName, annValue] = annCookie.split(';')[0].split('=');
    await ann.context.addCookies([{ name: annName, value: annValue, url: server.baseUrl }]);
    await ann.page.goto(`${server.baseUrl}/`);
    await ann.page.getByRole('navigation', { name: 'Account' }).getByText('ann@example.com').waitFor();

    const { page, context, problems } = await openPage(browser, DESKTOP);
    await signInAsAdmin(server, context, ADMIN);
    await page.goto(`${server.baseUrl}/admin`);
    const section = page.getByRole('region', { name: 'Delete an account' });
    await section.getByLabel('Email address').fill('ann@example.com');
    // The account is found first: its address, plan and since when, before anything is deleted.
    await section.getByRole('button', { name: 'Find the account' }).click();
    const found = section.getByRole('group', { name: 'The account ann@example.com' });
    await found.getByText(/Free trial until/).waitFor();
    await section.getByRole('button', { name: 'Delete this account' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete account' });
    await dialog.getByText('Are you sure you want to delete the account ann@example.com?', { exact: false }).waitFor();
    // The admin's own password again: a session left open is not enough.
    await dialog.getByLabel('Your password').fill('admin-secret-2');
    await page.screenshot({ path: path.join(resultsDir, 'admin-delete-account.png') });
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    const done = section.getByRole('status');
    await done.waitFor();
    assert.match(
      await done.innerText(),
      /^The account ann@example\.com and everything it held were deleted\. Its subscription was canceled\. Gone with it: 0 chats, 0 tasks, 1 funnel conversation and \d+ analytics events\.$/,
    );
    await section.screenshot({ path: path.join(resultsDir, 'admin-account-deleted.png') });

    // Her browser is signed out and her password no longer opens anything.
    await ann.page.goto(`${server.baseUrl}/`);
    await ann.page.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Login' }).waitFor();
    assert.equal(await ann.page.getByText('ann@example.com').count(), 0);
    const again = await fetch(`${server.baseUrl}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.baseUrl },
      body: JSON.stringify({ email: 'ann@example.com', password: 'ann-secret-1' }),
    });
    assert.equal(again.status, 401);

    // The day's figures name no one, and stay: her trial still counts for campaign 222.
    await page.reload();
    const refundable = page.getByRole('table', { name: /how far they got/ }).getByRole('row', { name: /Refundable-fee chat/ });
    await refundable.waitFor();
    assert.deepEqual(
      (await rowCells(refundable)).slice(1, 6).map((cell) => cell.split('\n')[0]),
      ['1', '1', '1', '1', '1'],
    );
    assert.deepEqual(problems, []);
    await ann.context.close();
    await context.close();
  });
});
