// Opens N idle Socket.IO clients over WebSocket (raw protocol: handshake, CONNECT to a namespace,
// answer pings) against a running server, then reports the server's resident memory growth per
// connection. Used for the real-time issue's memory figure until the load generator exists.
//
//   node bench/idle-connections.mjs --url http://127.0.0.1:3000 --pid <server pid> --count 10000
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (i % 2 ? pairs : [...pairs, [arg.replace(/^--/, ''), all[i + 1]]]), []),
);
const url = (args.url ?? 'http://127.0.0.1:3000').replace(/^http/, 'ws');
const pid = Number(args.pid);
const count = Number(args.count ?? 10000);
const namespace = args.namespace ?? '/';
const batch = Number(args.batch ?? 500);

const rssBytes = () => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function connect(index) {
  return new Promise((resolve, reject) => {
    // Spread the client side over 127.0.0.x so source ports never run out.
    const localAddress = `127.0.0.${1 + (index % 200)}`;
    const ws = new WebSocket(`${url}/socket.io/?EIO=4&transport=websocket`, { localAddress, perMessageDeflate: false });
    const connectPacket = namespace === '/' ? '40' : `40${namespace},`;
    ws.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('0')) ws.send(connectPacket);
      else if (text === '2') ws.send('3');
      else if (text.startsWith(connectPacket)) resolve(ws);
    });
    ws.on('error', reject);
  });
}

await sleep(500);
const before = rssBytes();
const sockets = [];
const started = Date.now();
for (let i = 0; i < count; i += batch) {
  const opened = await Promise.all(Array.from({ length: Math.min(batch, count - i) }, (_, j) => connect(i + j)));
  sockets.push(...opened);
}
const seconds = (Date.now() - started) / 1000;
await sleep(2000);
const after = rssBytes();
const result = {
  connections: sockets.length,
  seconds_to_connect: seconds,
  server_rss_before_bytes: before,
  server_rss_after_bytes: after,
  bytes_per_connection: Math.round((after - before) / sockets.length),
};
console.log(JSON.stringify(result));
for (const ws of sockets) ws.terminate();
process.exit(0);
