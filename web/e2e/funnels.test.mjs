// The three marketing funnels as a visitor meets them: the chat funnel (/chat-help), the
// refundable-fee chat funnel (/Chat-Help-2) and the help funnel (/get-help, /funnel), each from the
// ad's landing to the demo checkout and, for two of them, to a signed-in account with a trial that
// remembers the funnel it came from (product spec sections 2, 3, 4, 5 and 9).
//
// The AI is offline, so the replies are config/funnels.toml's scripts and the help funnel's summary
// is the offline summariser's first sentence. The journeys run at the same time in one browser,
// each in its own context (its own visitor cookie, so its own conversation).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DESKTOP, openPage, PHONE, resultsDir, setUp, sidewaysOverflow } from './harness.mjs';
import { payAndSetUpAccount } from './members-support.mjs';

let env;
before(async () => {
  env = await setUp();
});
after(async () => {
  await env?.close();
});

const PRODUCT = 'HelpNow';
const ASSISTANT = 'Emma';

// config/funnels.toml, with {assistant} = Emma.
const EMAIL_FLOW = {
  greeting:
    "Hi, I'm Emma. I help people with email problems every day: signing in, passwords, missing messages and more. What's happening with your email?",
  followUp:
    "I'm sorry you're having trouble with your email. Not being able to get to your messages is stressful, and you're in the right place. Can you tell me which email you use and what you see when it goes wrong?",
  troubleshooting:
    'Thanks for explaining. What have you tried so far, for example resetting your password or signing in from another device?',
};
const DEFAULT_FLOW = {
  greeting: "Hi, I'm Emma. I help people with computer, phone and online problems every day. What's going on?",
  followUp:
    "I'm sorry you're dealing with that. It's really frustrating when things stop working the way they should, and you're in the right place. Can you tell me a little more about what happens?",
  troubleshooting:
    'Thank you for telling me. What have you already tried so far, for example restarting the device or checking your settings?',
};
const FINAL_CHAT =
  "Good news: this is something we can fix together. Your personal assistant is ready to walk you through it step by step, as long as you need. Start your 7-day trial for just $1 and we'll get started right away. Click 'Get started >>' below.";
const FINAL_REFUNDABLE =
  "Good news: this is something we can fix together. Your personal assistant is ready to walk you through it step by step. There's a $1 setup fee, fully refundable at any time, and then 7 days of unlimited help. Click 'Get started >>' below to begin.";
// The server's default intro (actors/src/rules/summary.rs DEFAULT_INTRO): the offline AI writes none.
const HELP_INTRO =
  "We've looked at the issue you described, and it's one our experts help people fix every day. The steps below walk you through the solution.";
const FEE_TEXT = 'The $1 setup fee is refundable at any time (paid back in 5-7 business days).';

// The members page asks for access before the trial is known; checkout.test.mjs allows the same.
const EXPECTED_402 = /Failed to load resource: the server responded with a status of 402/;

/** The conversation as the visitor sees it, in order. */
function conversation(page) {
  return page
    .getByRole('log', { name: 'Conversation' })
    .locator('.chat-message')
    .evaluateAll((elements) =>
      elements.map((element) => ({
        role: element.classList.contains('chat-message--user') ? 'user' : 'assistant',
        text: element.querySelector('.chat-message__text')?.textContent ?? '',
      })),
    );
}

async function assistantCount(page) {
  return (await conversation(page)).filter((message) => message.role === 'assistant').length;
}

/** Waits until the conversation holds `count` messages. */
async function waitForMessages(page, count, timeout = 20_000) {
  await page.waitForFunction(
    (n) => document.querySelectorAll('[role="log"] .chat-message').length >= n,
    count,
    { timeout },
  );
}

/**
 * Sends `text` with Enter (the field must already hold it) and waits for the typing indicator, then
 * for the assistant's reply. Returns the reply's text.
 */
async function sendTypedAndAwaitReply(page) {
  const field = page.getByLabel('Your question');
  const text = (await field.inputValue()).trim();
  const before = await assistantCount(page);
  await field.press('Enter');
  // The message is in the conversation and the field is empty again.
  await page.waitForFunction(
    (sent) => {
      const users = [...document.querySelectorAll('[role="log"] .chat-message--user .chat-message__text')];
      return users.some((element) => element.textContent === sent);
    },
    text,
    { timeout: 10_000 },
  );
  assert.equal(await field.inputValue(), '', 'the field is cleared once the message is taken');
  // 1.5-2.5 s of 'Emma is typing', with the Send button busy.
  await page.getByRole('status').filter({ hasText: `${ASSISTANT} is typing` }).waitFor({ timeout: 5_000 });
  assert.equal(await page.getByRole('button', { name: '...' }).isVisible(), true, "Send reads '...' while busy");
  await page.waitForFunction(
    (n) => document.querySelectorAll('[role="log"] .chat-message--assistant').length > n,
    before,
    { timeout: 15_000 },
  );
  await page.getByRole('status').filter({ hasText: `${ASSISTANT} is typing` }).waitFor({ state: 'hidden' });
  const messages = await conversation(page);
  return messages[messages.length - 1].text;
}

async function sendAndAwaitReply(page, text) {
  await page.getByLabel('Your question').fill(text);
  return sendTypedAndAwaitReply(page);
}

/** The chat window's fixed parts. */
async function expectChatWindow(page, headline) {
  await page.getByRole('heading', { level: 1, name: headline, exact: true }).waitFor();
  await page.getByRole('heading', { name: `${PRODUCT} Instant Online Help: Connected`, exact: true }).waitFor();
  await page.getByText(`${ASSISTANT}, Personal Chat Assistant`, { exact: true }).waitFor();
  assert.equal(await page.getByLabel('Your question').getAttribute('placeholder'), 'Type your question here...');
  assert.equal(await page.getByRole('button', { name: 'Send' }).isDisabled(), true, 'Send is off while the field is empty');
}

/** GET /api/auth/me with the page's cookies. */
async function me(page) {
  const response = await page.request.get(`${env.baseUrl}/api/auth/me`);
  assert.equal(response.status(), 200);
  return (await response.json()).user;
}

describe('marketing funnels', { concurrency: true }, () => {
  test('chat funnel: three messages, the final offer, the automatic checkout 15 s later, then an account that remembers the chat', async (t) => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    const email = 'chat-funnel@example.com';
    const first = 'My Outlook email stopped getting new messages yesterday';
    const secondLines = ['It just says it is up to date.', 'But my phone shows newer mail.'];
    const third = 'I restarted the computer and signed out and back in';

    await page.goto(`${env.baseUrl}/chat-help?keyword=outlook%20email&campaignid=123&utm_source=google`);
    await expectChatWindow(page, 'Need Outlook Email Assistance? Get Instant Expert Assistance Now');
    // 'outlook email' names the email flow by one of its words.
    await waitForMessages(page, 1);
    assert.deepEqual(await conversation(page), [{ role: 'assistant', text: EMAIL_FLOW.greeting }]);

    // Leading spaces are dropped as they are typed.
    const field = page.getByLabel('Your question');
    await field.pressSequentially(`   ${first}`);
    assert.equal(await field.inputValue(), first);
    assert.equal(await sendTypedAndAwaitReply(page), EMAIL_FLOW.followUp);

    // Shift+Enter starts a new line in the field instead of sending.
    await field.pressSequentially(secondLines[0]);
    await field.press('Shift+Enter');
    await field.pressSequentially(secondLines[1]);
    assert.equal(await field.inputValue(), secondLines.join('\n'));
    assert.equal((await conversation(page)).length, 3, 'Shift+Enter sent nothing');
    assert.equal(await sendTypedAndAwaitReply(page), EMAIL_FLOW.troubleshooting);

    assert.equal(await sendAndAwaitReply(page, third), FINAL_CHAT);
    const finalSeenAt = Date.now();
    const getStarted = page.getByRole('button', { name: 'Get started >>' });
    await getStarted.waitFor();
    // The page says when it will go, counting down, and the keyboard is on the button.
    await page.getByText(/^Taking you to the secure checkout in 1[45] s\. Press ‘Get started >>’ to go now\.$/).waitFor();
    assert.equal(await getStarted.evaluate((button) => button === document.activeElement), true);
    await page.getByText(/^Taking you to the secure checkout in (9|10|11) s\./).waitFor();
    assert.deepEqual(await conversation(page), [
      { role: 'assistant', text: EMAIL_FLOW.greeting },
      { role: 'user', text: first },
      { role: 'assistant', text: EMAIL_FLOW.followUp },
      { role: 'user', text: secondLines.join('\n') },
      { role: 'assistant', text: EMAIL_FLOW.troubleshooting },
      { role: 'user', text: third },
      { role: 'assistant', text: FINAL_CHAT },
    ]);
    await page.screenshot({ path: path.join(resultsDir, 'chat-funnel-final.png'), fullPage: true });

    // Without a click, the checkout opens by itself about 15 s after the final message.
    await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'), { timeout: 40_000 });
    const waited = Date.now() - finalSeenAt;
    t.diagnostic(`auto-checkout after ${waited} ms`);
    assert.ok(waited >= 12_000 && waited <= 30_000, `the automatic checkout came ${waited} ms after the final message`);
    await page.getByText('7-day trial, then $20.00/month').waitFor();

    await payAndSetUpAccount(page, email, 'chat-secret');
    const user = await me(page);
    assert.equal(user.email, email);
    assert.equal(user.access.trialActive, true, JSON.stringify(user.access));
    assert.equal(user.access.hasAccess, true);
    assert.equal(user.funnel?.funnel, 'chat_funnel', `the account's funnel record: ${JSON.stringify(user.funnel)}`);
    assert.equal(user.funnel.userIssue, first);
    assert.equal(user.funnel.keyword, 'outlook email');
    assert.equal(user.funnel.campaignid, '123');
    assert.equal(user.funnel.headline, 'Need Outlook Email Assistance? Get Instant Expert Assistance Now');
    assert.deepEqual(user.funnel.userMessages, [first, secondLines.join('\n'), third]);

    assert.deepEqual(problems.filter((problem) => !EXPECTED_402.test(problem)), []);
    await context.close();
  });

  test('refundable-fee funnel: three messages, then Get started opens the $1 checkout at once, and the account remembers the chat', async (t) => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);

    await page.goto(`${env.baseUrl}/Chat-Help-2`);
    await expectChatWindow(page, 'Need Help? Get Instant Expert Help Now!');
    await waitForMessages(page, 1);
    assert.deepEqual(await conversation(page), [{ role: 'assistant', text: DEFAULT_FLOW.greeting }]);

    assert.equal(await sendAndAwaitReply(page, 'My laptop will not connect to the wifi at home'), DEFAULT_FLOW.followUp);
    assert.equal(
      await sendAndAwaitReply(page, 'It shows the network but says it cannot connect'),
      DEFAULT_FLOW.troubleshooting,
    );
    assert.equal(await sendAndAwaitReply(page, 'I turned the router off and on again'), FINAL_REFUNDABLE);

    const clickedAt = Date.now();
    await page.getByRole('button', { name: 'Get started >>' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'), { timeout: 10_000 });
    const waited = Date.now() - clickedAt;
    t.diagnostic(`checkout opened ${waited} ms after the click`);
    assert.ok(waited < 8_000, `the button opened the checkout after ${waited} ms`);
    await page.getByText('$1.00 due today').waitFor();
    await page.getByText(FEE_TEXT).waitFor();
    await page.getByText('7-day trial, then $20.00/month').waitFor();

    // Canceled, the checkout comes back to the conversation, which is all still there; no
    // automatic checkout fires again, and the button opens a checkout again.
    const before = [
      { role: 'assistant', text: DEFAULT_FLOW.greeting },
      { role: 'user', text: 'My laptop will not connect to the wifi at home' },
      { role: 'assistant', text: DEFAULT_FLOW.followUp },
      { role: 'user', text: 'It shows the network but says it cannot connect' },
      { role: 'assistant', text: DEFAULT_FLOW.troubleshooting },
      { role: 'user', text: 'I turned the router off and on again' },
      { role: 'assistant', text: FINAL_REFUNDABLE },
    ];
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForURL((url) => url.pathname === '/Chat-Help-2' && url.search === '');
    await page.getByText('Your checkout was canceled, and nothing was charged. Your conversation is still here.').waitFor();
    await waitForMessages(page, 7);
    assert.deepEqual(await conversation(page), before);
    await page.getByRole('button', { name: 'Get started >>' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'), { timeout: 10_000 });
    await page.getByText('$1.00 due today').waitFor();

    // Without keyword or campaign id, the account still remembers the conversation.
    await payAndSetUpAccount(page, 'refundable-funnel@example.com', 'refund-secret');
    const user = await me(page);
    assert.equal(user.access.trialActive, true, JSON.stringify(user.access));
    assert.equal(
      user.funnel?.funnel,
      'refundable_fee_funnel',
      `the account's funnel record: ${JSON.stringify(user.funnel)}`,
    );
    assert.equal(user.funnel.userIssue, 'My laptop will not connect to the wifi at home');
    assert.equal(user.funnel.keyword ?? null, null);
    assert.equal(user.funnel.headline, 'Need Help? Get Instant Expert Help Now!');

    assert.deepEqual(problems.filter((problem) => !EXPECTED_402.test(problem)), []);
    await context.close();
  });

  test('chat funnel: a reload or a dropped connection loses nothing', async () => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    const first = 'My printer will not print anything from my laptop';
    const second = 'It says the document is queued but nothing comes out';

    await page.goto(`${env.baseUrl}/chat-help`);
    await expectChatWindow(page, 'Need Help? Get Instant Expert Assistance Now!');
    await waitForMessages(page, 1);
    assert.equal(await sendAndAwaitReply(page, first), DEFAULT_FLOW.followUp);
    const afterFirst = [
      { role: 'assistant', text: DEFAULT_FLOW.greeting },
      { role: 'user', text: first },
      { role: 'assistant', text: DEFAULT_FLOW.followUp },
    ];
    assert.deepEqual(await conversation(page), afterFirst);

    await page.reload();
    await waitForMessages(page, 3);
    assert.deepEqual(await conversation(page), afterFirst);

    // Offline: the page says so in plain words; back online, the line goes and the chat goes on.
    const lost = page.getByRole('status').filter({ hasText: 'Connection lost. Reconnecting…' });
    const problemsBeforeOffline = problems.length;
    await context.setOffline(true);
    await lost.waitFor({ timeout: 15_000 });
    await context.setOffline(false);
    await lost.waitFor({ state: 'hidden', timeout: 20_000 });
    // Requests that failed while offline are the network's, and expected.
    const offlineNoise = /net::ERR_INTERNET_DISCONNECTED|WebSocket connection to .* failed/;
    const whileOffline = problems.splice(problemsBeforeOffline);
    assert.deepEqual(whileOffline.filter((problem) => !offlineNoise.test(problem)), []);
    assert.deepEqual(await conversation(page), afterFirst);

    assert.equal(await sendAndAwaitReply(page, second), DEFAULT_FLOW.troubleshooting);
    const afterSecond = [
      ...afterFirst,
      { role: 'user', text: second },
      { role: 'assistant', text: DEFAULT_FLOW.troubleshooting },
    ];
    await page.reload();
    await waitForMessages(page, 5);
    assert.deepEqual(await conversation(page), afterSecond);
    await page.getByRole('heading', { name: `${PRODUCT} Instant Online Help: Connected`, exact: true }).waitFor();

    assert.deepEqual(problems, []);
    await context.close();
  });

  test('help funnel: issue, solution teaser, checkout, and an account that remembers the issue', async (t) => {
    const { page, context, problems } = await openPage(env.browser, DESKTOP);
    const email = 'help-funnel@example.com';
    const lines = ['My printer says it is offline.', 'I already turned it off and on.'];
    const issue = lines.join('\n');

    // /funnel is the same page as /get-help.
    await page.goto(`${env.baseUrl}/funnel`);
    await page.getByRole('heading', { level: 1, name: 'Need Instant Online Help?', exact: true }).waitFor();
    await page.getByText('Enter your issue in the form below to receive an instant answer').waitFor();
    await page.getByLabel('Describe your issue').waitFor();
    await page.getByRole('button', { name: 'Get Help Now' }).waitFor();
    await page.goto(`${env.baseUrl}/funnel?keyword=printer`);
    await page.getByRole('heading', { level: 1, name: 'Need Printer Help? Get Instant Expert Help Now!', exact: true }).waitFor();

    await page.goto(`${env.baseUrl}/get-help?keyword=printer`);
    await page.getByRole('heading', { level: 1, name: 'Need Printer Help? Get Instant Expert Help Now!', exact: true }).waitFor();
    await page.getByText('Enter your issue in the form below to receive an instant answer').waitFor();
    const field = page.getByLabel('Describe your issue');
    await field.pressSequentially(lines[0]);
    await field.press('Shift+Enter');
    await field.pressSequentially(lines[1]);
    assert.equal(await field.inputValue(), issue, 'Shift+Enter adds a line');
    await page.getByRole('heading', { level: 1, name: 'Need Printer Help? Get Instant Expert Help Now!' }).waitFor();

    // 'Analyzing Issue...' may show only for a moment: watched, not required.
    await page.evaluate(() => {
      window.sawAnalyzing = false;
      new MutationObserver(() => {
        if (document.body.textContent.includes('Analyzing Issue...')) window.sawAnalyzing = true;
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await field.press('Enter');

    await page.getByRole('heading', { level: 1, name: 'Solution Found:', exact: true }).waitFor({ timeout: 15_000 });
    t.diagnostic(`'Analyzing Issue...' seen: ${await page.evaluate(() => window.sawAnalyzing)}`);
    // The offline summariser's summary is the issue's first sentence.
    await page.getByText('My printer says it is offline', { exact: true }).waitFor();
    await page.getByText(HELP_INTRO, { exact: true }).waitFor();
    await page.getByRole('heading', { name: 'Apply the solution' }).waitFor();
    await page.getByRole('heading', { name: 'Prevent future issues' }).waitFor();
    await page.getByText('Your complete step-by-step fix is ready.').waitFor();
    const fix = page.getByRole('button', { name: 'Fix my issue for free >' });
    await fix.waitFor();
    // The debug overlay (on in the test settings) lists the two AI calls.
    const overlay = page.getByRole('complementary', { name: 'AI calls (debug)' });
    await overlay.getByText('summary').waitFor();
    await overlay.getByText('intro').waitFor();
    const [fixBox, overlayBox] = [await fix.boundingBox(), await overlay.boundingBox()];
    t.diagnostic(`'Fix my issue' ${JSON.stringify(fixBox)}; debug overlay ${JSON.stringify(overlayBox)}`);
    await page.screenshot({ path: path.join(resultsDir, 'help-funnel-solution.png'), fullPage: true });

    await fix.click();
    await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'), { timeout: 10_000 });
    await page.getByText('7-day trial, then $20.00/month').waitFor();

    // Canceled, the checkout comes back to the solution the visitor had, not an empty form.
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForURL((url) => url.pathname === '/get-help' && url.search === '?keyword=printer');
    await page.getByRole('heading', { level: 1, name: 'Solution Found:', exact: true }).waitFor();
    await page.getByText('Your checkout was canceled, and nothing was charged. Your solution is still here.').waitFor();
    await page.getByText('My printer says it is offline', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Fix my issue for free >' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'), { timeout: 10_000 });
    await payAndSetUpAccount(page, email, 'help-secret');

    const user = await me(page);
    assert.equal(user.email, email);
    assert.equal(user.access.trialActive, true, JSON.stringify(user.access));
    assert.equal(user.funnel?.funnel, 'help_funnel', `the account's funnel record: ${JSON.stringify(user.funnel)}`);
    assert.equal(user.funnel.rawUserInput, issue);
    assert.equal(user.funnel.userIssue, 'My printer says it is offline');
    assert.equal(user.funnel.keyword, 'printer');
    assert.equal(user.funnel.headline, 'Need Printer Help? Get Instant Expert Help Now!');

    assert.deepEqual(problems.filter((problem) => !EXPECTED_402.test(problem)), []);
    await context.close();
  });

  test('chat funnel on a phone: no sideways scrolling, and Send in reach', async (t) => {
    const { page, context, problems } = await openPage(env.browser, PHONE);
    const overflow = () => sidewaysOverflow(page);

    await page.goto(`${env.baseUrl}/chat-help?keyword=outlook%20email&campaignid=123`);
    await page.getByRole('heading', { level: 1, name: 'Need Outlook Email Assistance? Get Instant Expert Assistance Now' }).waitFor();
    await waitForMessages(page, 1);
    assert.ok((await overflow()) <= 0, `the page scrolls sideways by ${await overflow()} px`);

    const send = page.getByRole('button', { name: 'Send' });
    const firstBox = await send.boundingBox();
    t.diagnostic(`Send on first view: ${JSON.stringify(firstBox)} in a ${PHONE.viewport.height} px tall screen`);
    await send.scrollIntoViewIfNeeded();
    assert.equal(await send.isVisible(), true);
    const box = await send.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= PHONE.viewport.width, `Send at ${JSON.stringify(box)}`);

    // A pasted link is one long word; the conversation wraps it rather than widening the page.
    const link = 'https://outlook.live.com/mail/0/options/mail/accounts/popImap/settings-that-never-save';
    assert.equal(await sendAndAwaitReply(page, `Outlook will not save this setting ${link}`), EMAIL_FLOW.followUp);
    assert.ok((await overflow()) <= 0, `after a long message the page scrolls sideways by ${await overflow()} px`);
    await page.screenshot({ path: path.join(resultsDir, 'chat-funnel-phone.png'), fullPage: true });

    assert.deepEqual(problems, []);
    await context.close();
  });

  test('help funnel on a phone: the debug overlay covers nothing, and a long summary ends with ...', async () => {
    const { page, context, problems } = await openPage(env.browser, PHONE);
    await page.goto(`${env.baseUrl}/get-help`);
    await page
      .getByLabel('Describe your issue')
      .fill(
        'My printer says it is offline and will not print anything from my laptop since yesterday evening when the update ran',
      );
    await page.getByRole('button', { name: 'Get Help Now' }).click();
    await page.getByRole('heading', { level: 1, name: 'Solution Found:', exact: true }).waitFor({ timeout: 15_000 });
    const summary = await page.locator('.help-funnel__summary').innerText();
    assert.ok(summary.endsWith('...') && summary.length <= 100, summary);
    const fix = page.getByRole('button', { name: 'Fix my issue for free >' });
    await fix.scrollIntoViewIfNeeded();
    const overlay = page.getByRole('complementary', { name: 'AI calls (debug)' });
    await overlay.waitFor();
    const [a, b] = [await fix.boundingBox(), await overlay.boundingBox()];
    const overlaps = a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
    assert.equal(overlaps, false, `'Fix my issue' ${JSON.stringify(a)}, overlay ${JSON.stringify(b)}`);
    const onTop = await fix.evaluate((button) => {
      const box = button.getBoundingClientRect();
      return document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2)?.closest('button') === button;
    });
    assert.equal(onTop, true, 'nothing sits on the button');
    assert.deepEqual(problems, []);
    await context.close();
  });
});
