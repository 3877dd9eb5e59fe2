// The flow studio (issue 47): an admin edits the default flow's greeting in /admin/flows, tries
// the draft in the preview chat (the real funnel page in a frame, on desktop and on a phone),
// and publishes it. A new visitor in another browser gets the new greeting, a visitor who was
// mid-chat keeps the old version, and the preview's visitor is in no figure.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import path from 'node:path';
import { DESKTOP, PHONE, assertAccessible, launchBrowser, openPage, resultsDir, sidewaysOverflow, startServer } from './harness.mjs';
import { adminPage, signInAsAdmin } from './admin-support.mjs';

const ADMIN = 'ops@example.com';
const NEW_GREETING = 'Hello, I am {assistant}, and fixing computers is what I do best. What happened?';
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The assistant's messages of a chat page (or frame), as shown. */
function assistantMessages(scope) {
  return scope.locator('[role="log"] .chat-message--assistant');
}

/** Sends a message in a funnel's chat (a page or a frame) and waits for the reply to it. */
async function say(scope, text) {
  const log = assistantMessages(scope);
  await log.first().waitFor();
  const replies = await log.count();
  await scope.getByLabel('Your question').fill(text);
  await scope.getByLabel('Your question').press('Enter');
  await log.nth(replies).waitFor({ timeout: 20_000 });
  return (await log.nth(replies).locator('.chat-message__text').innerText()).trim();
}

async function greetingOf(scope) {
  const first = assistantMessages(scope).first().locator('.chat-message__text');
  await first.waitFor();
  return (await first.innerText()).trim();
}

/** The admin API's answer for `path`, read with the admin's session. */
async function adminJson(request, apiPath) {
  const response = await request.get(`${server.baseUrl}${apiPath}`);
  assert.equal(response.status(), 200, await response.text());
  return response.json();
}

describe('the flow studio', { concurrency: 1 }, () => {
  test('edit the greeting, try it in the preview, publish: new visitors get it, a visitor mid-chat keeps the old one, the preview counts nowhere', async () => {
    // A visitor already chatting on version 1.
    const visitor = await openPage(browser, DESKTOP);
    await visitor.page.goto(`${server.baseUrl}/chat-help`);
    const oldGreeting = await greetingOf(visitor.page);
    assert.match(oldGreeting, /^Hi, I'm /);
    const firstReply = await say(visitor.page, 'My computer is very slow since yesterday');

    const admin = await adminPage(server, browser, DESKTOP, ADMIN);
    const { page } = admin;
    const flows = await adminJson(page.request, '/api/admin/flows');
    const v1 = flows.flows.find((flow) => flow.name === 'default').script;
    assert.equal(firstReply, v1.followUp.replaceAll('{assistant}', 'Emma'), 'the offline helper answers with the script');

    await page.goto(`${server.baseUrl}/admin/flows?edit=default`);
    const editor = page.getByRole('region', { name: 'Edit “default”' });
    const greeting = editor.getByLabel('Greeting', { exact: true });
    await greeting.fill(NEW_GREETING);
    await editor.getByTestId('flows-count-greeting').getByText(`${NEW_GREETING.length} / 600`).waitFor();
    // A bad placeholder is named at its field, and nothing can be published with it.
    await editor.getByLabel('Follow-up (stage 0)').fill('Tell me about {thing}.');
    await editor.getByRole('button', { name: 'Save draft' }).click();
    await editor.getByText('{thing} is not a placeholder', { exact: false }).first().waitFor();
    await editor.getByLabel('Follow-up (stage 0)').fill(v1.followUp);
    await editor.getByRole('button', { name: 'Save draft' }).click();
    await page.getByTestId('flows-editor-message').getByText(/saved/i).waitFor();

    // The diff against the published version names the greeting.
    const changes = page.getByRole('region', { name: 'Changes' });
    await changes.getByText('Greeting').first().waitFor();

    // Try it: the real funnel page in a frame, running the draft.
    const tryIt = page.getByRole('region', { name: 'Try it' });
    await tryIt.getByRole('button', { name: 'Try it' }).click();
    const frame = page.frameLocator('iframe[title="Preview of the draft"]');
    await frame.getByTestId('preview-banner').waitFor();
    assert.equal(await greetingOf(frame), NEW_GREETING.replace('{assistant}', 'Emma'));
    await say(frame, 'My printer is offline');
    await page.screenshot({ path: path.join(resultsDir, 'flows-1280.png'), fullPage: true });
    await tryIt.getByRole('button', { name: 'Phone' }).click();
    assert.equal(await tryIt.getByTestId('flows-preview-device').getAttribute('data-device'), 'phone');
    const phoneFrame = await page.locator('iframe[title="Preview of the draft"]').boundingBox();
    assert.ok(phoneFrame.width <= 380, `the phone frame is ${phoneFrame.width} px wide`);
    await tryIt.screenshot({ path: path.join(resultsDir, 'flows-preview-phone.png') });

    // Publish, behind its confirmation.
    await editor.getByRole('button', { name: 'Publish draft' }).click();
    const dialog = page.getByRole('dialog', { name: 'Publish version 2' });
    await dialog.getByRole('button', { name: 'Publish version 2' }).click();
    await page.getByTestId('flows-notice').getByText('Version 2 of “default” is published', { exact: false }).waitFor();

    // A new visitor, in another browser, gets the new greeting.
    const newcomer = await openPage(browser, PHONE);
    await newcomer.page.goto(`${server.baseUrl}/chat-help`);
    assert.equal(await greetingOf(newcomer.page), NEW_GREETING.replace('{assistant}', 'Emma'));
    // The visitor mid-chat keeps version 1: the old greeting, and version 1's next script.
    const secondReply = await say(visitor.page, 'It takes minutes to open anything');
    assert.equal(secondReply, v1.troubleshooting.replaceAll('{assistant}', 'Emma'));
    assert.equal(await greetingOf(visitor.page), oldGreeting);

    // The preview's visitor is in no figure: two visitors of the chat funnel, not three.
    for (let tries = 0; ; tries += 1) {
      const { funnels } = await adminJson(page.request, '/api/admin/dashboard?by=campaign');
      const chat = funnels.find((row) => row.funnel === 'chat_funnel');
      if (chat?.visitors === 2) {
        await sleep(1500);
        const again = await adminJson(page.request, '/api/admin/dashboard?by=campaign');
        assert.equal(again.funnels.find((row) => row.funnel === 'chat_funnel').visitors, 2, 'the preview was counted');
        break;
      }
      assert.ok(tries < 40, `the chat funnel's visitors: ${JSON.stringify(funnels)}`);
      await sleep(600);
    }
    for (const context of [visitor.context, newcomer.context]) await context.close();
    assert.deepEqual(visitor.problems, []);
    await admin.context.close();
  });

  test('the Flows page fits a phone and a desktop, and is accessible', async () => {
    for (const device of [DESKTOP, PHONE]) {
      const { page, context, problems } = await openPage(browser, device);
      await signInAsAdmin(server, context, ADMIN);
      await page.goto(`${server.baseUrl}/admin/flows?edit=email`);
      await page.getByRole('region', { name: 'Edit “email”' }).waitFor();
      await page.getByRole('region', { name: 'Drop-off by step' }).waitFor();
      assert.equal(await sidewaysOverflow(page), 0, `no sideways overflow at ${device.viewport.width} px`);
      await assertAccessible(page, `/admin/flows at ${device.viewport.width} px`);
      await page.screenshot({
        path: path.join(resultsDir, `flows-page-${device.viewport.width}.png`),
        fullPage: true,
      });
      assert.deepEqual(problems, []);
      await context.close();
    }
  });
});
