// A funnel visitor on the official socket.io-client whose transport drops while a reply is on its
// way, run by tests/api/cluster.rs against the balancer (HAProxy before several processes):
//
//   node conformance/recovering-visitor.mjs BASE_URL VISITOR_ID websocket|polling
//
// Twice, it sends a message (acknowledged), drops its transport at once, and connects again only
// after the reply was sent. Each time the connection must be recovered (the same socket id, so the
// same process: the balancer's cookie took it back there) and the conversation, as the funnel page
// builds it from `conversation` and `message` events, must hold the missed reply exactly once.
// `polling` is a client that cannot upgrade. Exits non-zero with the reason on failure.
import assert from 'node:assert/strict';
import { io } from 'socket.io-client';

const [baseUrl, visitorId, transport] = process.argv.slice(2);
assert.ok(baseUrl && visitorId && ['websocket', 'polling'].includes(transport), 'usage: BASE_URL VISITOR_ID websocket|polling');

/** Resolves with the next `event` of `emitter`, or rejects after `ms`. */
function next(emitter, event, ms = 15_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${ms} ms`)), ms);
    emitter.once(event, (value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

const socket = io(`${baseUrl}/funnel`, {
  auth: { funnel: 'chat', visitorId },
  // Node keeps the balancer's cookie (helpnow_server) only with credentials on, as a browser does.
  withCredentials: true,
  transports: transport === 'polling' ? ['polling'] : ['polling', 'websocket'],
  // The reply comes 1.5-2.5 s after a message: connecting again 3.5 s after the drop misses it.
  reconnectionDelay: 3_500,
  reconnectionDelayMax: 3_500,
  randomizationFactor: 0,
});

try {
  const upgraded = transport === 'websocket' ? next(socket.io.engine, 'upgrade') : null;
  // What the page shows: the last `conversation`, and each `message` after it.
  let shown = (await next(socket, 'conversation')).messages;
  assert.equal(shown.length, 1, 'a new conversation: the greeting');
  socket.on('conversation', (conversation) => {
    shown = conversation.messages;
  });
  socket.on('message', (message) => {
    shown = [...shown, message];
  });
  await upgraded;
  assert.equal(socket.io.engine.transport.name, transport);
  // A browser keeps the balancer's cookie for the next connection; socket.io-client in Node keeps
  // cookies per Engine.IO connection only, so it is carried over by hand.
  const sticky = [...(socket.io.engine._cookieJar?.cookies ?? [])].find(([name]) => name === 'helpnow_server')?.[1];
  assert.ok(sticky, "the balancer's cookie");
  socket.io.opts.extraHeaders = { cookie: `helpnow_server=${sticky.value}` };

  const replies = () => shown.filter((message) => message.role === 'assistant').length;
  for (const text of ['my printer will not print', 'I restarted it and it still does not print']) {
    const before = replies();
    const id = socket.id;
    const answer = await socket.timeout(10_000).emitWithAck('send', { text });
    assert.deepEqual(answer, { ok: true });
    const back = next(socket, 'connect', 20_000);
    socket.io.engine.close();
    await back;
    assert.equal(socket.recovered, true, `recovered after "${text}" (a new session means another process)`);
    assert.equal(socket.id, id, 'the same socket');
    // The reply was sent while the transport was down; a duplicate would be here by now.
    const deadline = Date.now() + 10_000;
    while (replies() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(replies(), before + 1, `the reply to "${text}" exactly once: ${JSON.stringify(shown)}`);
    assert.equal(shown.filter((message) => message.text === text).length, 1, `"${text}" once`);
  }
  console.log(JSON.stringify({ ok: true, transport: socket.io.engine.transport.name, messages: shown.length }));
  socket.disconnect();
  process.exit(0);
} catch (error) {
  console.error(`recovering visitor (${transport}): ${error.stack ?? error}`);
  socket.disconnect();
  process.exit(1);
}
