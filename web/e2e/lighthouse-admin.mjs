// Lighthouse (mobile preset) on /admin signed in as an admin (issue 52), on a fresh server:
// `node e2e/lighthouse-admin.mjs [out-dir]`. Not part of the test
// run: Lighthouse comes from the npm registry (npx), and its scores are figures for
// docs/benchmarks.md, not a gate.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { freePort, launchBrowser, startServer, DESKTOP } from './harness.mjs';
import { adminPage, signInAsAdmin } from './admin-support.mjs';

const out = process.argv[2] ?? 'test-results';
const ADMIN = 'ops@example.com';
const server = await startServer({ APP__ADMIN__EMAILS: ADMIN });
const browser = await launchBrowser();
// Lighthouse drives a Chromium of our own that holds the admin's session cookie (a Cookie header
// passed as --extra-headers does not reach the page's fetches), and keeps it (--disable-storage-reset).
const port = await freePort();
const chrome = spawn('/usr/bin/chromium', [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  `--remote-debugging-port=${port}`,
  `--user-data-dir=${mkdtempSync(path.join(os.tmpdir(), 'lighthouse-'))}`,
  'about:blank',
], { stdio: 'ignore' });
try {
  const { context } = await adminPage(server, browser, DESKTOP, ADMIN);
  await context.close();
  for (let tries = 0; ; tries += 1) {
    const up = await fetch(`http://127.0.0.1:${port}/json/version`).then((r) => r.ok, () => false);
    if (up) break;
    if (tries > 100) throw new Error('Chromium did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const cdp = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
  await signInAsAdmin(server, cdp.contexts()[0], ADMIN);
  // Lighthouse opens its own tab; this connection only set the cookie.
  await cdp.close();
  for (const view of ['/admin', '/admin?by=keyword&compare=1']) {
    const name = view === '/admin' ? 'admin' : 'admin-keywords';
    const file = path.join(out, `lighthouse-${name}.json`);
    execFileSync(
      'npx',
      [
        '--yes',
        'lighthouse@13',
        `${server.baseUrl}${view}`,
        `--port=${port}`,
        '--disable-storage-reset',
        '--only-categories=performance,accessibility,best-practices',
        '--output=json',
        `--output-path=${file}`,
      ],
      { env: { ...process.env, CHROME_PATH: '/usr/bin/chromium' }, stdio: 'inherit' },
    );
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const score = (category) => Math.round(report.categories[category].score * 100);
    const metric = (id) => report.audits[id].displayValue;
    console.log(
      `${view}: performance ${score('performance')}, accessibility ${score('accessibility')}, best practices ${score('best-practices')}; ` +
        `FCP ${metric('first-contentful-paint')}, LCP ${metric('largest-contentful-paint')}, TBT ${metric('total-blocking-time')}, CLS ${metric('cumulative-layout-shift')}`,
    );
    const failed = Object.values(report.audits).filter(
      (audit) => audit.score !== null && audit.score < 1 && report.categories.accessibility.auditRefs.some((ref) => ref.id === audit.id),
    );
    for (const audit of failed) console.log(`  accessibility: ${audit.id}: ${audit.title}`);
  }
} finally {
  chrome.kill();
  await browser.close();
  await server.stop();
}
