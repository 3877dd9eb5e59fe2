// Servers and small async helpers for the Socket.IO conformance suites.
//
// - startReference(flags): the Rust reference example (examples/socketio_reference.rs), which mirrors the
//   Socket.IO project's test server. Binary from SOCKETIO_REFERENCE_BIN (default
//   ../target/debug/examples/socketio_reference, built by `cargo test --workspace`).
// - startProduct(env): the HelpNow server itself, started by ../e2e/harness.mjs (HELPNOW_BIN, needs web/dist).
// Logs go to web/test-results/.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort, resultsDir, startServer } from '../e2e/harness.mjs';

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = path.resolve(webDir, '..');
const STARTUP_TIMEOUT_MS = 30_000;

/** Set CONFORMANCE_SKIP_PRODUCT=1 to run only the reference-example suites (e.g. while calibrating). */
export const skipProduct = process.env.CONFORMANCE_SKIP_PRODUCT === '1';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves or rejects like `promise`, but rejects after `ms` so no test can hang on a missing event. */
export function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The arguments of the next `event` on an EventEmitter-like object (on/once/off), within `ms`. */
export function nextEvent(emitter, event, ms = 5_000) {
  let listener;
  const fired = new Promise((resolve) => {
    listener = (...args) => resolve(args);
    emitter.once(event, listener);
  });
  return within(fired, ms, `event "${event}"`).finally(() => emitter.off(event, listener));
}

function printLog(logPath) {
  let output = '';
  try {
    output = readFileSync(logPath, 'utf8');
  } catch {
    // No log written.
  }
  console.error(`--- server log (${logPath}) ---\n${output}\n--- end of server log ---`);
}

/**
 * Starts the reference example on a free port with the given flags, e.g.
 * `{ pingInterval: 300, pingTimeout: 200, connectTimeout, upgradeTimeout, maxPayload, recoveryWindow }`,
 * and resolves once it printed `listening on http://127.0.0.1:PORT`.
 */
export async function startReference(flags = {}) {
  const binary = path.resolve(
    webDir,
    process.env.SOCKETIO_REFERENCE_BIN ?? '../target/debug/examples/socketio_reference',
  );
  if (!existsSync(binary)) {
    throw new Error(`Reference example not found at ${binary} (run \`cargo test --workspace\` or set SOCKETIO_REFERENCE_BIN).`);
  }

  const port = await freePort();
  const args = ['--port', String(port)];
  for (const [name, value] of Object.entries(flags)) {
    // pingInterval -> --ping-interval
    args.push(`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, String(value));
  }

  mkdirSync(resultsDir, { recursive: true });
  const logPath = path.join(resultsDir, `socketio-reference-${port}.log`);
  const log = createWriteStream(logPath);
  log.write(`$ ${binary} ${args.join(' ')}\n`);

  const child = spawn(binary, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.pipe(log, { end: false });

  let exited = null;
  const exit = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
  });

  const expected = `listening on http://127.0.0.1:${port}`;
  const listening = new Promise((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      log.write(`${line}\n`);
      if (line.trim() === expected) resolve(true);
    });
  });

  const stop = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      await within(exit, 5_000, 'the reference example to exit').catch(() => child.kill('SIGKILL'));
    }
    await new Promise((resolve) => log.end(resolve));
  };

  let ok = false;
  try {
    ok = await within(Promise.race([listening, exit.then(() => false)]), STARTUP_TIMEOUT_MS, `"${expected}"`);
  } catch {
    // Timed out: reported below.
  }
  if (!ok) {
    await stop();
    printLog(logPath);
    const reason = exited !== null ? `exited early (${JSON.stringify(exited)})` : `did not print "${expected}"`;
    throw new Error(`Reference example ${reason}; log: ${logPath}`);
  }

  const baseUrl = `http://127.0.0.1:${port}`;
  return { baseUrl, wsUrl: baseUrl.replace('http', 'ws'), port, logPath, stop };
}

/** Starts the HelpNow server with extra settings (e.g. APP__REALTIME__PING_INTERVAL_MS). */
export async function startProduct(env = {}) {
  const server = await startServer(env);
  return { ...server, wsUrl: server.baseUrl.replace('http', 'ws') };
}

/** Resolves on a socket.io-client socket's `connect`, rejects with the error on `connect_error`. */
export function connectedWithin(socket, ms = 5_000) {
  if (socket.connected) return Promise.resolve();
  let onConnect;
  let onError;
  const outcome = new Promise((resolve, reject) => {
    onConnect = resolve;
    onError = reject;
    socket.once('connect', onConnect);
    socket.once('connect_error', onError);
  });
  return within(outcome, ms, 'connect').finally(() => {
    socket.off('connect', onConnect);
    socket.off('connect_error', onError);
  });
}
