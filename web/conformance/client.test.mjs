// The official socket.io-client (the one the web app uses) against the reference test server, over
// WebSocket only, long-polling only and the default (long-polling, then upgrade to WebSocket), once per
// target of harness.mjs: the real socket.io 4.8 server (reference-server.mjs) and our Rust example
// (examples/socketio_reference.rs); then against the HelpNow server itself (handshakes and Origin checks).
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { io, Manager } from 'socket.io-client';
import { connectedWithin as connected, nextEvent, skipProduct, sleep, startProduct, TARGETS, testOptions, within } from './harness.mjs';
import { engineUrl, parseOpen, PollingSession, RawSocket } from './raw.mjs';

const T = { timeout: 20_000 };
const PING_INTERVAL = 300;
const PING_TIMEOUT = 200;

const VARIANTS = [
  { name: 'WebSocket only', transports: ['websocket'], transport: 'websocket' },
  { name: 'long-polling only', transports: ['polling'], transport: 'polling' },
  { name: 'default (long-polling, then upgrade)', transports: undefined, transport: 'polling' },
];

/** Every client a test opens; `closeClients` (afterEach) disconnects them so nothing outlives its test. */
const opened = [];

function track(socket) {
  opened.push(socket);
  return socket;
}

function closeClients() {
  for (const socket of opened.splice(0)) {
    socket.io.reconnection(false);
    socket.disconnect();
    socket.io.engine?.close();
  }
}

/**
 * A client for `path` on `baseUrl`. forceNew: io() would otherwise share a Manager (and its connection)
 * with earlier tests. Quick reconnection for the recovery tests; none elsewhere unless asked.
 */
function client(baseUrl, path, variant, options = {}) {
  return track(
    io(`${baseUrl}${path}`, {
      forceNew: true,
      transports: variant.transports,
      reconnection: false,
      reconnectionDelay: 100,
      reconnectionDelayMax: 200,
      ...options,
    }),
  );
}


/** The error of the next `connect_error`; fails if the socket connects instead. */
async function connectError(socket, ms = 5_000) {
  const [error] = await within(
    Promise.race([
      nextEvent(socket, 'connect_error', ms),
      nextEvent(socket, 'connect', ms).then(() => {
        throw new Error('connected, but a connect_error was expected');
      }),
    ]),
    ms,
    'connect_error',
  );
  return error;
}

/** Collects the argument lists of every `event` on `socket`. */
function collect(socket, event) {
  const calls = [];
  socket.on(event, (...args) => calls.push(args));
  return calls;
}

async function until(condition, ms, what) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

const MIXED_ARGS = [1, '2', { 3: [true] }, null, [1, 'a', { b: null }], -7.25, false, '', { nested: { deep: ['x'] } }];

for (const target of TARGETS) {
  // No known difference here; a test where ours differs from socket.io 4.8 would take
  // testOptions(target, 'how') instead of T (a todo for ours), as in protocol.test.mjs.
  const T = testOptions(target);

  describe(`[${target.name}] socket.io-client against the reference test server`, () => {
    let server;
    let heartbeatServer;
    let recoveryServer;

    before(async () => {
      server = await target.start();
      heartbeatServer = await target.start({ pingInterval: PING_INTERVAL, pingTimeout: PING_TIMEOUT });
      recoveryServer = await target.start({ recoveryWindow: 120_000 });
    });
    after(async () => {
      closeClients();
      await Promise.all([server?.stop(), heartbeatServer?.stop(), recoveryServer?.stop()]);
    });
    afterEach(closeClients);

    for (const variant of VARIANTS) {
      describe(variant.name, () => {
        const open = (path = '/', options) => client(server.baseUrl, path, variant, options);

        it('connects over the expected transport and receives `auth` with the auth option', T, async () => {
          const socket = open('/', { auth: { token: 'abc', n: 1 } });
          const auth = nextEvent(socket, 'auth');
          // Every variant starts with its first transport (the default one upgrades later).
          assert.equal(socket.io.engine.transport.name, variant.transport);
          await connected(socket);
          assert.equal(typeof socket.id, 'string');
          assert.deepEqual(await auth, [{ token: 'abc', n: 1 }]);
          assert.ok(!socket.recovered, 'not recovered');
        });

        it('receives an empty `auth` without the auth option', T, async () => {
          const socket = open();
          assert.deepEqual(await nextEvent(socket, 'auth'), [{}]);
        });

        it('gets `message-back` with the same mixed arguments', T, async () => {
          const socket = open();
          await connected(socket);
          const back = nextEvent(socket, 'message-back');
          socket.emit('message', ...MIXED_ARGS);
          assert.deepEqual(await back, MIXED_ARGS);
        });

        it('gets its arguments back as the ack of `message-with-ack`', T, async () => {
          const socket = open();
          await connected(socket);
          assert.deepEqual(await socket.timeout(5_000).emitWithAck('message-with-ack', { a: [1, 2] }), { a: [1, 2] });
          assert.equal(await socket.emitWithAck('message-with-ack', 'single'), 'single');
          const acked = new Promise((resolve) => socket.emit('message-with-ack', ...MIXED_ARGS, (...args) => resolve(args)));
          assert.deepEqual(await within(acked, 5_000, 'the ack'), MIXED_ARGS);
        });

        it('acknowledges a server event (server-ack)', T, async () => {
          const socket = open();
          await connected(socket);
          const request = nextEvent(socket, 'server-ack-request');
          const response = nextEvent(socket, 'server-ack-response');
          socket.emit('server-ack', 'a', 1, { b: true });
          const args = await request;
          const ack = args.pop();
          assert.equal(typeof ack, 'function');
          assert.deepEqual(args, ['a', 1, { b: true }]);
          ack('reply', 2, null);
          assert.deepEqual(await response, ['reply', 2, null]);
        });

        it('gets binary arguments back as Buffers, also nested in objects and arrays', T, async () => {
          const socket = open();
          await connected(socket);
          const sent = [
            Buffer.from([1, 2, 3]),
            'text',
            { file: Buffer.from([4, 5]), list: [Buffer.from([6]), 7], empty: Buffer.alloc(0) },
          ];
          const back = nextEvent(socket, 'message-back');
          socket.emit('message', ...sent);
          const received = await back;
          assert.ok(Buffer.isBuffer(received[0]), 'a Buffer');
          assert.deepEqual(received, sent);
          // And as an ack.
          assert.deepEqual(await socket.timeout(5_000).emitWithAck('message-with-ack', Buffer.from([9, 8])), Buffer.from([9, 8]));
        });

        it('multiplexes / and /custom on one Manager', T, async () => {
          const manager = new Manager(server.baseUrl, { transports: variant.transports, reconnection: false });
          const main = track(manager.socket('/', { auth: { ns: 'main' } }));
          const custom = track(manager.socket('/custom', { auth: { ns: 'custom' } }));
          const mainAuth = nextEvent(main, 'auth');
          const customAuth = nextEvent(custom, 'auth');
          await Promise.all([connected(main), connected(custom)]);
          assert.deepEqual(await mainAuth, [{ ns: 'main' }]);
          assert.deepEqual(await customAuth, [{ ns: 'custom' }]);
          assert.notEqual(main.id, custom.id);

          const mainBacks = collect(main, 'message-back');
          const customBacks = collect(custom, 'message-back');
          main.emit('message', 'to main');
          custom.emit('message', 'to custom');
          assert.equal(await custom.timeout(5_000).emitWithAck('message-with-ack', 'custom ack'), 'custom ack');
          await until(() => mainBacks.length + customBacks.length === 2, 5_000, 'both echoes');
          assert.deepEqual(mainBacks, [['to main']]);
          assert.deepEqual(customBacks, [['to custom']]);

          // Leaving one namespace keeps the other (and the shared connection).
          custom.disconnect();
          assert.equal(await main.timeout(5_000).emitWithAck('message-with-ack', 'still here'), 'still here');
        });

        it('is refused /random with connect_error "Invalid namespace"', T, async () => {
          const socket = open('/random');
          const error = await connectError(socket);
          assert.equal(error.message, 'Invalid namespace');
          assert.equal(socket.connected, false);
        });

        it('keeps / connected on a Manager whose /random was refused', T, async () => {
          const manager = new Manager(server.baseUrl, { transports: variant.transports, reconnection: false });
          const main = track(manager.socket('/'));
          const random = track(manager.socket('/random'));
          const [error] = await Promise.all([connectError(random), connected(main)]);
          assert.equal(error.message, 'Invalid namespace');
          assert.equal(await main.timeout(5_000).emitWithAck('message-with-ack', 1), 1);
        });

        it('gets a new session, not a recovered one, after a dropped connection (recovery off)', T, async () => {
          const socket = open('/', { reconnection: true });
          await connected(socket);
          const firstId = socket.id;
          const reconnected = nextEvent(socket, 'connect', 5_000);
          socket.io.engine.close();
          await reconnected;
          assert.ok(!socket.recovered, 'not recovered');
          assert.notEqual(socket.id, firstId);
        });
      });
    }

    describe('default transports: upgrade', () => {
      it('upgrades to WebSocket and delivers 50 events sent during the upgrade in order', T, async () => {
        const socket = client(server.baseUrl, '/', { transports: undefined });
        const backs = collect(socket, 'message-back');
        let sent = 0;
        const sendSome = (count) => {
          for (let i = 0; i < count; i++) socket.emit('message', sent++);
        };
        // Some events while polling, some while the probe pauses polling, the rest after the upgrade.
        socket.on('connect', () => sendSome(20));
        socket.io.engine.once('upgrading', () => sendSome(20));
        assert.equal(socket.io.engine.transport.name, 'polling');
        const upgraded = nextEvent(socket.io.engine, 'upgrade', 10_000);
        await connected(socket);
        await upgraded;
        assert.equal(socket.io.engine.transport.name, 'websocket');
        sendSome(50 - sent);
        await until(() => backs.length >= 50, 5_000, '50 echoes');
        await sleep(100); // nothing more may follow
        assert.deepEqual(backs, Array.from({ length: 50 }, (_, i) => [i]));
      });

      it('keeps the upgraded connection past the upgrade time-out', T, async () => {
        // The probe's time-out once closed the WebSocket it had become, 10 s after every upgrade.
        const quick = await target.start({ upgradeTimeout: 300 });
        try {
          const socket = client(quick.baseUrl, '/', { transports: undefined });
          const upgraded = nextEvent(socket.io.engine, 'upgrade', 10_000);
          await connected(socket);
          await upgraded;
          const disconnects = collect(socket, 'disconnect');
          await sleep(1_000);
          assert.deepEqual(disconnects, []);
          socket.emit('message', 'still here');
          assert.deepEqual(await nextEvent(socket, 'message-back'), ['still here']);
        } finally {
          await quick.stop();
        }
      });
    });

    for (const variant of VARIANTS) {
      describe(`heartbeat (ping-interval ${PING_INTERVAL}, ping-timeout ${PING_TIMEOUT}), ${variant.name}`, () => {
        it('stays connected through ~2 s of pings', T, async () => {
          const socket = client(heartbeatServer.baseUrl, '/', variant);
          await connected(socket);
          const engine = socket.io.engine;
          let pings = 0;
          engine.on('ping', () => pings++);
          const disconnects = collect(socket, 'disconnect');
          await sleep(2_000);
          assert.deepEqual(disconnects, []);
          assert.ok(pings >= 4, `only ${pings} pings in 2 s`);
          assert.equal(socket.connected, true);
          assert.equal(await socket.timeout(5_000).emitWithAck('message-with-ack', 'alive'), 'alive');
        });

        it('is disconnected by the server when its pongs are suppressed', T, async () => {
          const socket = client(heartbeatServer.baseUrl, '/', variant);
          const engine = socket.io.engine;
          // Drop outgoing pongs (engine.io-client answers a ping with _sendPacket("pong")).
          const sendPacket = engine._sendPacket.bind(engine);
          engine._sendPacket = (type, ...rest) => (type === 'pong' ? undefined : sendPacket(type, ...rest));
          await connected(socket);
          const started = Date.now();
          const [reason] = await nextEvent(socket, 'disconnect', PING_INTERVAL + PING_TIMEOUT + 2_000);
          // The server closes first ("transport close"); the client's own timer ("ping timeout") would only
          // fire a ping timeout after the last ping, i.e. about PING_INTERVAL later.
          assert.equal(reason, 'transport close');
          assert.ok(Date.now() - started >= PING_TIMEOUT, 'not before the first ping timed out');
        });
      });
    }

    for (const variant of VARIANTS) {
      describe(`connection state recovery (window 120 s), ${variant.name}`, () => {
        /**
         * Opens a reconnecting client and waits for its first `auth` (whose last argument is an offset).
         * The default variant also waits for the upgrade, so the transport that drops is a known one.
         */
        async function openRecovering(options = {}) {
          const socket = client(recoveryServer.baseUrl, '/', variant, { reconnection: true, ...options });
          const auth = nextEvent(socket, 'auth');
          const upgraded = variant.transports ? null : nextEvent(socket.io.engine, 'upgrade', 10_000);
          await connected(socket);
          await upgraded;
          return { socket, auth: await auth };
        }

        it('appends an offset to every event without ack', T, async () => {
          const { socket, auth } = await openRecovering({ auth: { token: 't' } });
          assert.equal(auth.length, 2);
          assert.deepEqual(auth[0], { token: 't' });
          assert.equal(typeof auth[1], 'string');
          const back = nextEvent(socket, 'message-back');
          socket.emit('message', 1, 'two');
          const args = await back;
          assert.deepEqual(args.slice(0, 2), [1, 'two']);
          assert.equal(typeof args[2], 'string');
          assert.notEqual(args[2], auth[1]);
          // Acks carry no offset.
          assert.equal(await socket.timeout(5_000).emitWithAck('message-with-ack', 'x'), 'x');
        });

        it('recovers after the transport drops: same id, the missed event exactly once', T, async () => {
          const { socket } = await openRecovering();
          const firstId = socket.id;
          const events = []; // the order of what the listeners saw
          const backs = [];
          const auths = [];
          socket.on('message-back', (...args) => {
            backs.push(args);
            events.push('message-back');
          });
          socket.on('auth', (...args) => {
            auths.push(args);
            events.push('auth');
          });
          socket.on('disconnect', (reason) => events.push(`disconnect (${reason})`));
          const reconnected = nextEvent(socket, 'connect', 10_000);

          const dropped = socket.io.engine.transport.name;
          socket.emit('message', 'missed');
          // The client reports "forced close"; the server sees "transport close" and keeps the session.
          // Over WebSocket the close follows the emit within a tick, so the echo can only arrive through
          // recovery; over long-polling the client first waits for the POST, so the echo may come before.
          socket.io.engine.close();

          await reconnected;
          assert.equal(socket.recovered, true);
          assert.equal(socket.id, firstId);
          await until(() => backs.length >= 1 && auths.length >= 1, 5_000, '`message-back` and the new `auth`');
          await sleep(300); // a duplicate would arrive by now
          // Exactly once, and a replayed event comes before the `auth` of the connection handler's second run.
          const replayed = ['disconnect (forced close)', 'message-back', 'auth'];
          const delivered = ['message-back', 'disconnect (forced close)', 'auth'];
          const orders = dropped === 'websocket' ? [replayed] : [replayed, delivered];
          const seen = [...events];
          assert.ok(orders.some((order) => isDeepStrictEqual(seen, order)), `unexpected order: ${JSON.stringify(seen)}`);
          assert.equal(backs[0][0], 'missed');
          assert.equal(typeof backs[0][1], 'string', 'the offset');
          // Its handshake auth is what the client sent: the pid and offset of the recovery.
          assert.deepEqual(Object.keys(auths[0][0]).sort(), ['offset', 'pid']);

          assert.equal(await socket.timeout(5_000).emitWithAck('message-with-ack', 'after'), 'after');
        });

        it('does not recover after an explicit disconnect()', T, async () => {
          const { socket } = await openRecovering();
          const firstId = socket.id;
          socket.disconnect();
          await sleep(100);
          socket.connect();
          await connected(socket);
          assert.ok(!socket.recovered, 'not recovered');
          assert.notEqual(socket.id, firstId);
        });
      });
    }
  });
}

describe('socket.io-client against the HelpNow server', { skip: skipProduct && 'CONFORMANCE_SKIP_PRODUCT=1' }, () => {
  const PUBLIC_URL = 'http://public.helpnow.test';
  const ALLOWED_ORIGIN = 'http://allowed.helpnow.test';
  const FOREIGN_ORIGIN = 'http://evil.example';
  const SETTINGS = { pingInterval: 4_000, pingTimeout: 3_000, maxPayload: 100_000, connectTimeout: 2_000 };
  let server;

  before(async () => {
    server = await startProduct({
      APP__SERVER__PUBLIC_URL: PUBLIC_URL,
      APP__SERVER__ALLOWED_ORIGINS: ALLOWED_ORIGIN,
      APP__REALTIME__PING_INTERVAL_MS: String(SETTINGS.pingInterval),
      APP__REALTIME__PING_TIMEOUT_MS: String(SETTINGS.pingTimeout),
      APP__REALTIME__MAX_PAYLOAD_BYTES: String(SETTINGS.maxPayload),
      APP__REALTIME__CONNECT_TIMEOUT_MS: String(SETTINGS.connectTimeout),
    });
  });
  after(async () => {
    closeClients();
    await server?.stop();
  });
  afterEach(closeClients);

  it('announces the configured realtime settings in the handshake', T, async () => {
    const { sid, ...settings } = await new PollingSession(server.baseUrl).open();
    assert.equal(typeof sid, 'string');
    assert.deepEqual(settings, {
      upgrades: ['websocket'],
      pingInterval: SETTINGS.pingInterval,
      pingTimeout: SETTINGS.pingTimeout,
      maxPayload: SETTINGS.maxPayload,
    });
  });

  for (const variant of VARIANTS.slice(0, 2)) {
    it(`${variant.name}: the keep-alive namespace / is joined`, T, async () => {
      const socket = client(server.baseUrl, '/', variant);
      await connected(socket, 5_000);
      assert.equal(socket.io.engine.transport.name, variant.transport);
    });

    it(`${variant.name}: the handshake succeeds and an unknown namespace is refused with "Invalid namespace"`, T, async () => {
      const socket = client(server.baseUrl, '/nowhere', variant);
      const engineOpened = nextEvent(socket.io, 'open');
      const error = await connectError(socket);
      await engineOpened;
      assert.equal(socket.io.engine.transport.name, variant.transport);
      assert.equal(error.message, 'Invalid namespace');
    });

    it(`${variant.name}: a foreign Origin is refused`, T, async () => {
      const socket = client(server.baseUrl, '/', variant, { extraHeaders: { Origin: FOREIGN_ORIGIN } });
      let engineOpened = false;
      socket.io.on('open', () => {
        engineOpened = true;
      });
      const error = await connectError(socket);
      assert.notEqual(error.message, 'Invalid namespace');
      assert.equal(engineOpened, false);
      if (variant.transport === 'polling') assert.equal(error.description, 403);
    });

    for (const origin of [PUBLIC_URL, ALLOWED_ORIGIN]) {
      it(`${variant.name}: the Origin ${origin} is accepted`, T, async () => {
        const socket = client(server.baseUrl, '/nowhere', variant, { extraHeaders: { Origin: origin } });
        const engineOpened = nextEvent(socket.io, 'open');
        assert.equal((await connectError(socket)).message, 'Invalid namespace');
        await engineOpened;
      });
    }
  }

  it('answers a foreign Origin with 403 {"code":4,"message":"Forbidden"} (polling and WebSocket)', T, async () => {
    const response = await fetch(engineUrl(server.baseUrl), { headers: { Origin: FOREIGN_ORIGIN } });
    assert.equal(response.status, 403);
    assert.deepEqual(await response.json(), { code: 4, message: 'Forbidden' });

    const socket = new RawSocket(engineUrl(server.wsUrl, { transport: 'websocket' }), { headers: { Origin: FOREIGN_ORIGIN } });
    try {
      await socket.waitClosed();
      assert.match(String(socket.refusal?.message), /Unexpected server response: 40[03]/);
    } finally {
      socket.close();
    }
  });

  it('answers a request without Origin, and with the public origin, with a handshake', T, async () => {
    for (const headers of [{}, { Origin: PUBLIC_URL }]) {
      const response = await fetch(engineUrl(server.baseUrl), { headers });
      assert.equal(response.status, 200);
      parseOpen(await response.text());
    }
  });

  it('closes a connection that joins no namespace within the connect timeout', T, async () => {
    const socket = await RawSocket.connect(server.wsUrl);
    try {
      assert.deepEqual(socket.handshake.upgrades, []);
      socket.send('40/nowhere,');
      assert.equal(await socket.next(), '44/nowhere,{"message":"Invalid namespace"}');
      await socket.waitClosed(SETTINGS.connectTimeout + 2_000);
    } finally {
      socket.close();
    }
  });
});
