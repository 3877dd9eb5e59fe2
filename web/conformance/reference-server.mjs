// The conformance suite's reference: the real `socket.io` server (4.8, from npm), set up like the
// Socket.IO project's own protocol test server (socketio/socket.io-protocol, README "Test suite") and
// offering exactly what our Rust example examples/socketio_reference.rs offers, with the same flags:
//
//   node conformance/reference-server.mjs --port 3000 --ping-interval 300 --ping-timeout 200
//
// - namespaces `/` and `/custom`; on connection it emits `auth` with the handshake's auth;
// - `message` is answered by `message-back` with the same arguments;
// - `message-with-ack` is acknowledged with its arguments;
// - `server-ack` makes the server emit `server-ack-request` with the same arguments and wait (10 s) for
//   the client's acknowledgement, which it sends back as `server-ack-response`;
// - any Origin is allowed (reflected, with credentials); every other namespace is refused
//   (socket.io's own "Invalid namespace").
//
// Flags (times in milliseconds): `--port` (3000), `--ping-interval` (25000), `--ping-timeout` (20000),
// `--connect-timeout` (45000), `--upgrade-timeout` (10000), `--max-payload` (1000000 bytes: engine.io's
// maxHttpBufferSize), `--recovery-window` (0: connection state recovery off). Prints
// `listening on http://127.0.0.1:PORT` once it accepts connections, as the Rust example does.
import { createServer } from 'node:http';
import { Server } from 'socket.io';

/** How long the server waits for a client to acknowledge `server-ack-request` (as the Rust example). */
const CLIENT_ACK_TIMEOUT_MS = 10_000;

function parseFlags(argv) {
  const flags = {
    port: 3000,
    pingInterval: 25_000,
    pingTimeout: 20_000,
    connectTimeout: 45_000,
    upgradeTimeout: 10_000,
    maxPayload: 1_000_000,
    recoveryWindow: 0,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (!/^\d+$/.test(value)) throw new Error(`${flag}: '${value}' is not a whole number`);
    // --ping-interval -> pingInterval
    const name = flag.replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!flag.startsWith('--') || !(name in flags)) throw new Error(`unknown flag ${flag}`);
    flags[name] = Number(value);
  }
  return flags;
}

/** The arguments without a trailing acknowledgement callback (the Rust example never sees one in a payload). */
function withoutAck(args) {
  return typeof args.at(-1) === 'function' ? args.slice(0, -1) : args;
}

function setupNamespace(namespace) {
  namespace.on('connection', (socket) => {
    socket.emit('auth', socket.handshake.auth);

    socket.on('message', (...args) => {
      socket.emit('message-back', ...withoutAck(args));
    });

    socket.on('message-with-ack', (...args) => {
      const ack = args.at(-1);
      if (typeof ack === 'function') ack(...args.slice(0, -1));
    });

    socket.on('server-ack', (...args) => {
      socket.timeout(CLIENT_ACK_TIMEOUT_MS).emit('server-ack-request', ...withoutAck(args), (error, ...answer) => {
        if (!error) socket.emit('server-ack-response', ...answer);
      });
    });
  });
}

let flags;
try {
  flags = parseFlags(process.argv.slice(2));
} catch (error) {
  console.error(`reference-server: ${error.message}`);
  process.exit(2);
}

const httpServer = createServer();
const io = new Server(httpServer, {
  serveClient: false,
  pingInterval: flags.pingInterval,
  pingTimeout: flags.pingTimeout,
  connectTimeout: flags.connectTimeout,
  upgradeTimeout: flags.upgradeTimeout,
  maxHttpBufferSize: flags.maxPayload,
  transports: ['polling', 'websocket'],
  allowUpgrades: true,
  // The Rust example allows any Origin and reflects it, with credentials.
  cors: { origin: true, credentials: true },
  ...(flags.recoveryWindow > 0 && {
    connectionStateRecovery: { maxDisconnectionDuration: flags.recoveryWindow, skipMiddlewares: true },
  }),
});

setupNamespace(io.of('/'));
setupNamespace(io.of('/custom'));

// Refused handshakes and requests end up in the log (web/test-results/), like the Rust example's warnings.
io.engine.on('connection_error', (error) => {
  console.error(`engine.io connection_error: ${error.code} ${error.message} ${JSON.stringify(error.context ?? {})}`);
});

httpServer.listen(flags.port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${httpServer.address().port}`);
});

function shutdown() {
  io.close(() => process.exit(0));
  // Open long-polling requests or WebSockets must not keep the process alive.
  setTimeout(() => process.exit(0), 1_000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
