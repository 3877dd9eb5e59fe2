// Starts the real HelpNow server and a headless Chromium for the browser journeys.
// The server binary comes from HELPNOW_BIN (default ../target/debug/helpnow) and serves web/dist,
// so run `npm run build` first.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = path.resolve(webDir, '..');
export const resultsDir = path.join(webDir, 'test-results');

const STARTUP_TIMEOUT_MS = 60_000;
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the server on a free port and resolves once GET /health answers 200. `env` adds or
 * overrides settings (APP__SECTION__KEY); the public URL is the server's own address by default,
 * so that the browser's Origin is the allowed one.
 */
export async function startServer(env = {}) {
  const binary = path.resolve(webDir, process.env.HELPNOW_BIN ?? '../target/debug/helpnow');
  const staticDir = path.join(webDir, 'dist');
  if (!existsSync(binary)) throw new Error(`Server binary not found at ${binary} (set HELPNOW_BIN).`);
  if (!existsSync(path.join(staticDir, 'index.html'))) {
    throw new Error(`${staticDir}/index.html is missing: run \`npm run build\` first.`);
  }

  const port = await freePort();
  mkdirSync(resultsDir, { recursive: true });
  const logPath = path.join(resultsDir, `server-${port}.log`);
  const log = createWriteStream(logPath);

  const child = spawn(binary, [], {
    cwd: repoRoot,
    env: {
      ...process.env,
      APP_ENV: 'test',
      APP__SERVER__PORT: String(port),
      APP__DATABASE__URL: 'mem://',
      APP__SERVER__STATIC_DIR: staticDir,
      APP__SERVER__PUBLIC_URL: `http://127.0.0.1:${port}`,
      APP__LOG__FILTER: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(log);
  child.stderr.pipe(log);

  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });

  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      const deadline = Date.now() + 5_000;
      while (exited === null && Date.now() < deadline) await sleep(50);
      if (exited === null) child.kill('SIGKILL');
    }
    await new Promise((resolve) => log.end(resolve));
  };

  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited !== null) break;
    try {
      const response = await fetch(`${baseUrl}/health`);
      if (response.status === 200) return { baseUrl, port, logPath, stop };
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }

  await stop();
  const reason = exited !== null ? `exited early (${JSON.stringify(exited)})` : 'did not answer /health in 60 s';
  let output = '';
  try {
    output = readFileSync(logPath, 'utf8');
  } catch {
    // No log written.
  }
  console.error(`--- server log (${logPath}) ---\n${output}\n--- end of server log ---`);
  throw new Error(`HelpNow server ${reason}; log: ${logPath}`);
}

export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  });
}

/**
 * Opens a page that records console errors and uncaught exceptions (a Content-Security-Policy
 * violation shows up as a console error), so journeys can assert the page ran cleanly.
 */
export async function openPage(browser, contextOptions = {}) {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return { context, page, problems };
}

/** Starts server and browser for one test file; call `close` in `after`. */
export async function setUp() {
  const server = await startServer();
  let browser;
  try {
    browser = await launchBrowser();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    server,
    browser,
    baseUrl: server.baseUrl,
    close: async () => {
      await browser.close();
      await server.stop();
    },
  };
}

export const PHONE = { viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
export const DESKTOP = { viewport: { width: 1280, height: 900 } };

/**
 * How many pixels the page is wider than the device's screen (0 or less: no sideways scroll).
 * Measured against the viewport the test gave the page, not `window.innerWidth`: on an emulated
 * phone Chromium widens the layout viewport to a page that overflows, so that comparison never
 * sees the overflow.
 */
export async function sidewaysOverflow(page) {
  const { width } = page.viewportSize();
  return (await page.evaluate(() => document.documentElement.scrollWidth)) - width;
}

// axe-core, run in the page (through the DevTools protocol, which the page's Content-Security-Policy
// does not stop) against the WCAG 2.0, 2.1 and 2.2 rules of levels A and AA.
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22a', 'wcag22aa'];

/** The page's axe violations of every impact, one line per element at fault. */
export async function axeViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(
    (tags) => window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] })
      .then((results) => results.violations.map(({ id, impact, help, nodes }) => ({
        id, impact, help, nodes: nodes.map((node) => `${node.target.join(' ')}: ${node.failureSummary.replace(/\s+/g, ' ')}`),
      }))),
    AXE_TAGS,
  );
  return violations.flatMap(({ id, impact, help, nodes }) => nodes.map((node) => `${id} (${impact}, ${help}) ${node}`));
}

/** Fails with every axe violation on the page (`label` says which page and state). */
export async function assertAccessible(page, label) {
  const violations = await axeViolations(page);
  if (violations.length > 0) {
    throw new Error(`axe found ${violations.length} violation(s) on ${label}:\n  ${violations.join('\n  ')}`);
  }
}

/**
 * The sign-in link (`/?success=true&jwt=...&email=...`) of the newest mail to `email` that carries
 * one, as `server`'s outbox logged it; waits up to 10 s for it.
 */
export async function signInLinkMailedTo(server, email) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const log = readFileSync(server.logPath, 'utf8');
    const links = [...log.matchAll(/http:\/\/127\.0\.0\.1:\d+\/\?success=true&jwt=[A-Za-z0-9_-]+(?:&email=[^\s"]+)?/g)]
      .filter((match) => {
        // The mail the link is in: the outbox's log record before it names its recipient.
        const record = log.lastIndexOf('mail kept in the outbox', match.index);
        return record !== -1 && log.slice(record, match.index).includes(email);
      })
      .map((match) => match[0]);
    if (links.length > 0) return links[links.length - 1];
    await sleep(100);
  }
  throw new Error(`no sign-in link mailed to ${email} in ${server.logPath}`);
}
