// From an ad to the operator's dashboard (issue 52): a visitor comes to each funnel from an ad
// with every parameter the ad's address can carry, and the admin finds them in the right row of
// every breakdown; then the operator loads what the ads cost (a Google Ads campaign report as its
// export makes it) and reads the return on ad spend, and a malformed file is refused whole.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import path from 'node:path';
import { DESKTOP, PHONE, assertAccessible, launchBrowser, openPage, resultsDir, sidewaysOverflow, startServer } from './harness.mjs';
import { adminPage, signInAsAdmin } from './admin-support.mjs';

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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends a message in a funnel's chat and waits for the assistant's reply to it. */
async function say(page, text) {
  const log = page.locator('[role="log"] .chat-message--assistant');
  await log.first().waitFor();
  const replies = await log.count();
  await page.getByLabel('Your question').fill(text);
  await page.getByLabel('Your question').press('Enter');
  await page.waitForFunction(
    (n) => document.querySelectorAll('[role="log"] .chat-message--assistant').length > n,
    replies,
    { timeout: 20_000 },
  );
}

/** Each funnel, and how a visitor from an ad (the query `q`) takes its first steps. */
const FUNNELS = [
  {
    funnel: 'chat_funnel',
    visit: async (page, q) => {
      await page.goto(`${server.baseUrl}/chat-help?${q}`);
      await say(page, 'My printer will not print');
    },
  },
  {
    funnel: 'refundable_fee_funnel',
    visit: async (page, q) => {
      await page.goto(`${server.baseUrl}/Chat-Help-2?${q}`);
      await say(page, 'My laptop will not connect to the wifi');
    },
  },
  {
    funnel: 'help_funnel',
    visit: async (page, q) => {
      await page.goto(`${server.baseUrl}/get-help?${q}`);
      await page.getByLabel('Describe your issue').waitFor();
    },
  },
  {
    funnel: 'direct_signup',
    visit: async (page, q) => {
      await page.goto(`${server.baseUrl}/landing?${q}`);
      await page.getByRole('button', { name: 'Gmail' }).click();
      await page.getByRole('button', { name: 'Save Favorites' }).click();
      const dialog = page.getByRole('dialog', { name: 'Create your account' });
      await dialog.getByLabel('Email').fill('lee@example.com');
      await dialog.getByLabel('Password').fill('correct horse battery');
      await dialog.getByRole('button', { name: 'Create Account' }).click();
      await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'));
    },
  },
  {
    funnel: 'chat_trial_prompt',
    visit: async (page, q) => {
      await page.goto(`${server.baseUrl}/?subscribe=true&${q}`);
      await page
        .getByRole('dialog', { name: 'Get Unlimited AI Access!' })
        .getByRole('button', { name: 'Start Your Trial for $1' })
        .click();
      await page.waitForURL((url) => url.pathname.startsWith('/demo-checkout/'));
      // This one pays the $1 setup fee: the revenue the ads' cost is set against below.
      await page.getByLabel('Email').fill('pat@example.com');
      await page.getByLabel('Card number').fill('4242 4242 4242 4242');
      await page.getByRole('button', { name: 'Pay $1.00 and start trial' }).click();
      await page.waitForURL((url) => url.pathname === '/account-setup', { timeout: 20_000 });
    },
  },
];

/** The ad parameters of the `index`th funnel's visitor: each value its own. */
function adOf(index) {
  return {
    campaignid: `770${index}`,
    keyword: `fix ${FUNNELS[index].funnel.replaceAll('_', ' ')}`,
    utm_source: `source-${index}`,
    utm_medium: `medium-${index}`,
    utm_campaign: `campaign-${index}`,
    gclid: `gclid-${index}`,
  };
}

const BREAKDOWNS = { campaign: 'campaignid', keyword: 'keyword', utm_source: 'utm_source', utm_medium: 'utm_medium', utm_campaign: 'utm_campaign' };

/** The dashboard's answer for `query`, read with the admin's session (`request` of its page). */
async function report(request, query) {
  const response = await request.get(`${server.baseUrl}/api/admin/dashboard?${new URLSearchParams(query)}`);
  assert.equal(response.status(), 200, await response.text());
  return response.json();
}

describe('from the ad to the dashboard', () => {
  test('a visitor from an ad, in every funnel, counts in the right row of every breakdown', async (t) => {
    for (const [index, { funnel, visit }] of FUNNELS.entries()) {
      await t.test(funnel, async () => {
        const { page, context, problems } = await openPage(browser, DESKTOP);
        await visit(page, new URLSearchParams(adOf(index)).toString());
        assert.deepEqual(problems, []);
        await context.close();
      });
    }

    const { page, context } = await adminPage(server, browser, DESKTOP, ADMIN);
    // The journeys are counted a moment after the steps (docs/dashboard.md): wait for every
    // funnel's visitor, asking no faster than the admin API's limit allows.
    for (let tries = 0; ; tries += 1) {
      const { funnels } = await report(page.request, { by: 'campaign' });
      if (FUNNELS.every(({ funnel }) => funnels.some((row) => row.funnel === funnel && row.visitors === 1))) break;
      assert.ok(tries < 40, `not every funnel's visitor was counted: ${JSON.stringify(funnels)}`);
      await sleep(600);
    }
    for (const [index, { funnel }] of FUNNELS.entries()) {
      const ad = adOf(index);
      for (const [by, field] of Object.entries(BREAKDOWNS)) {
        const { rows } = await report(page.request, { by, funnel });
        assert.deepEqual(
          rows.map((row) => [row.key, row.visitors]),
          [[ad[field], 1]],
          `${funnel} by ${by}: one visitor, under ${ad[field]}, none under (none)`,
        );
        if (by === 'keyword') assert.equal(rows[0].campaign, ad.campaignid, `${funnel}: the keyword's campaign`);
      }
    }

    // On the page: the UTM source breakdown holds each funnel's source.
    await page.goto(`${server.baseUrl}/admin?by=utm_source`);
    const table = page.getByRole('table', { name: /sort/i });
    for (const index of FUNNELS.keys()) {
      await table.getByRole('row', { name: new RegExp(`^source-${index}\\b`) }).waitFor();
    }
    await context.close();
  });

  test('the ads cost, uploaded as Google Ads exports it, set against the revenue: ROAS per campaign; a malformed file is refused whole', async () => {
    const today = new Date();
    const day = today.toISOString().slice(0, 10);
    const spelled = today.toLocaleDateString('en-US', { month: 'long', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
    // The Campaign report as the Google Ads UI downloads it: its name and date range above the
    // header, the export's own column names, quoted thousands, a currency column, total rows.
    const campaignReport = (trialPromptCost) =>
      [
        'Campaign report',
        `"${spelled} - ${spelled}"`,
        'Day,Campaign ID,Campaign,Campaign status,Clicks,Impr.,CTR,Currency code,Avg. CPC,Cost',
        `${day},7700,"Chat help, US",Enabled,"1,204","12,345",9.75%,USD,1.04,"1,250.00"`,
        `${day},7704,Trial prompt,Enabled,2,40,5.00%,USD,0.20,${trialPromptCost}`,
        `${day},7799,Nobody came,Enabled,3,90,3.33%,USD,1.00,3.00`,
        'Total: Account,--,--,--,"1,209","12,475",9.69%,USD,1.04,"1,253.40"',
        'Total: Search,--,--,--,"1,209","12,475",9.69%,USD,1.04,"1,253.40"',
      ].join('\n');

    for (const device of [DESKTOP, PHONE]) {
      const { page, context, problems } = await openPage(browser, device);
      await signInAsAdmin(server, context, ADMIN);
      await page.goto(`${server.baseUrl}/admin?by=campaign`);
      const costs = page.getByRole('region', { name: 'Ad costs' });
      const upload = async (text) => {
        await costs.getByLabel('Campaign report (CSV)').setInputFiles({
          name: 'Campaign report.csv',
          mimeType: 'text/csv',
          buffer: Buffer.from(text),
        });
        await costs.getByRole('button', { name: 'Upload costs' }).click();
      };
      const width = device.viewport.width;

      if (device === DESKTOP) {
        // One bad amount among good rows: refused, naming its row and column, and nothing stored.
        await costs.getByText('No costs loaded yet.').waitFor();
        await upload(campaignReport('"12,3x"'));
        await costs.getByRole('alert').getByText('Row 5, column Cost: "12,3x" is not an amount.').waitFor();
        const loaded = await page.request.get(`${server.baseUrl}/api/admin/costs`);
        assert.equal((await loaded.json()).days, 0, 'nothing stored from the bad file');

        // The good file, twice: the second replaces the first's day, it does not add to it.
        for (let time = 0; time < 2; time += 1) {
          await upload(campaignReport('0.40'));
          await costs.getByRole('status').getByText(/^Costs loaded for 3 campaigns/).waitFor();
        }
      }

      const campaigns = page.getByRole('table', { name: /Choose a campaign/ });
      // The trial prompt's campaign: $1.00 of fees on $0.40 of ads, 2.50× and $0.60 of profit.
      const prompt = campaigns.getByRole('row', { name: /^7704/ });
      await prompt.getByText('2.50×').waitFor();
      await prompt.getByText('$0.60').waitFor();
      // The chat's campaign spent $1,250.00 for one visitor and nothing back yet.
      const chat = campaigns.getByRole('row', { name: /^7700/ });
      await chat.getByText('-$1,250.00').waitFor();
      // A campaign that spent and brought nobody has its row.
      await campaigns.getByRole('row', { name: /^7799/ }).getByText('$3.00').first().waitFor();
      const revenue = page.getByRole('region', { name: 'Revenue' });
      await revenue.getByText('Return on ad spend', { exact: true }).waitFor();

      await page.screenshot({ path: path.join(resultsDir, `admin-costs-${width}.png`), fullPage: true });
      assert.ok((await sidewaysOverflow(page)) <= 0, `the page scrolls sideways at ${width} px`);
      await assertAccessible(page, `/admin with costs at ${width} px`);
      // The one problem the page saw is the bad file's 400, which it showed as its message.
      const refused = 'console: Failed to load resource: the server responded with a status of 400 (Bad Request)';
      assert.deepEqual(problems, device === DESKTOP ? [refused] : []);
      await context.close();
    }

    // The API's figures behind the page: the total's cost is every campaign's, loaded once.
    const { page, context } = await openPage(browser, DESKTOP);
    await signInAsAdmin(server, context, ADMIN);
    const { total } = await report(page.request, { by: 'campaign', from: day, to: day });
    assert.equal(total.cost.cost_cents, 125_340);
    await context.close();
  });
});
