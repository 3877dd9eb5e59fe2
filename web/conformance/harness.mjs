// Servers and small async helpers for the Socket.IO conformance suites.
//
// - TARGETS: the two implementations every reference test runs against, each started by
//   `target.start(flags)` (or startReference(flags, target)) on a free port with the same command-line flags:
//   - "socket.io 4.8": the real `socket.io` server from npm, set up by reference-server.mjs like the
//     Socket.IO project's own protocol test server: the reference;
//   - "helpnow": our Rust example (examples/socketio_reference.rs, our src/realtime/ code) offering the
//     same namespaces and events. Binary from SOCKETIO_REFERENCE_BIN (default
//     ../target/debug/examples/socketio_reference, built by `cargo test --workspace`).
//   CONFORMANCE_TARGETS=socketio or =helpnow (comma-separated ids) runs only some of them.
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

/** The implementations the reference tests run against; `id` names them in CONFORMANCE_TARGETS and logs. */
const ALL_TARGETS = [
  {
    id: 'socketio',
    name: 'socket.io 4.8',
    /** The reference: its behaviour is what the tests assert. */
    reference: true,
    command: () => [process.execPath, [path.join(webDir, 'conformance', 'reference-server.mjs')]],
  },
  {
    id: 'helpnow',
    name: 'helpnow',
    reference: false,
    command: () => {
      const binary = path.resolve(
        webDir,
        process.env.SOCKETIO_REFERENCE_BIN ?? '../target/debug/examples/socketio_reference',
      );
      if (!existsSync(binary)) {
        throw new Error(`Rust example not found at ${binary} (run \`cargo test --workspace\` or set SOCKETIO_REFERENCE_BIN).`);
      }
      return [binary, []];
    },
  },
];
for (const target of ALL_TARGETS) target.start = (flags) => startReference(flags, target);

const wanted = process.env.CONFORMANCE_TARGETS?.split(',').map((id) => id.trim()).filter(Boolean);
if (wanted) {
  const unknown = wanted.filter((id) => !ALL_TARGETS.some((target) => target.id === id));
  if (unknown.length > 0) throw new Error(`CONFORMANCE_TARGETS: unknown target(s) ${unknown.join(', ')} (socketio, helpnow)`);
}

/** The targets of this run: both unless CONFORMANCE_TARGETS names some. */
export const TARGETS = ALL_TARGETS.filter((target) => !wanted || wanted.includes(target.id));

/**
 * Test options for one target: `{ timeout, todo }`, where `todo` marks a known difference of our
 * implementation from socket.io 4.8 (node:test's todo: the test still runs and reports, but does not
 * fail the suite). `difference` is only applied to our target: the reference is right by definition.
 */
export function testOptions(target, difference, timeout = 20_000) {
  if (target.reference || !difference) return { timeout };
  return { timeout, todo: `differs from socket.io 4.8: ${difference}` };
}

/**
 * Starts one target on a free port with the given flags, e.g.
 * `{ pingInterval: 300, pingTimeout: 200, connectTimeout, upgradeTimeout, maxPayload, recoveryWindow }`,
 * and resolves once it printed `listening on http://127.0.0.1:PORT`. Without a target: socket.io 4.8.
 */
export async function startReference(flags = {}, target = ALL_TARGETS[0]) {
  const [command, prefix] = target.command();

  const port = await freePort();
  const args = [...prefix, '--port', String(port)];
  for (const [name, value] of Object.entries(flags)) {
    // pingInterval -> --ping-interval
    args.push(`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, String(value));
  }

  mkdirSync(resultsDir, { recursive: true });
  const logPath = path.join(resultsDir, `socketio-reference-${target.id}-${port}.log`);
  const log = createWriteStream(logPath);
  log.write(`$ ${command} ${args.join(' ')}\n`);

  const child = spawn(command, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
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
      await within(exit, 5_000, `the ${target.name} server to exit`).catch(() => child.kill('SIGKILL'));
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
    throw new Error(`The ${target.name} server ${reason}; log: ${logPath}`);
  }

  const baseUrl = `http://127.0.0.1:${port}`;
  return { baseUrl, wsUrl: baseUrl.replace('http', 'ws'), port, logPath, stop, target };
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
