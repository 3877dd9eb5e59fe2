// A funnel visitor on the official socket.io-client whose transport drops while a reply is on its
// way, run by tests/api/cluster.rs against the balancer (HAProxy before several processes):
//
//   node conformance/recovering-visitor.mjs BASE_URL VISITOR_ID websocket|polling
//
// Twice, it sends a message (acknowledged), drops its transport at once, and connects again only
// after the reply was sent. Each time the connection must be recovered (the same socket id, so the
// same process: the balancer's cookie took it back there) and the conversation, as the funnel page
// builds it from `conversation` and `message` events, must hold the missed reply exactly once.
// Exactly once over the whole run, too: every event is kept as it came, and the page's view is
// checked after each one, so a message the server sends twice is caught even when a later
// `conversation` (which the page takes as the whole conversation) would cover it up.
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

// Messages carry no id: a message is its role and text (the run's are all different).
const said = (message) => `${message.role}: ${message.text}`;
// Every `conversation` and `message` event, as it came: none replaced, merged or dropped.
const received = [];
// What the page shows, built as the funnel page builds it (chat-state.ts): the last `conversation`,
// each `message` after it, and the visitor's own message once the server acknowledged it.
let shown = null;
// Each time the page's view held a message twice, or a `conversation` took back a message the
// page showed (what a duplicate `message` before it would look like).
const repeats = [];
function check(event) {
  const seen = new Set();
  for (const message of shown) {
    if (seen.has(said(message))) repeats.push(`${event}: "${said(message)}" shown twice`);
    seen.add(said(message));
  }
}
socket.on('conversation', (conversation) => {
  received.push({ conversation: conversation.messages.map(said) });
  const event = `event ${received.length} (conversation)`;
  // The conversation as the server holds it: what the page showed, then what it missed.
  const taken = (shown ?? []).filter((message, index) => said(message) !== said(conversation.messages[index] ?? {}));
  if (taken.length > 0) repeats.push(`${event} took back ${JSON.stringify(taken.map(said))}`);
  shown = conversation.messages;
  check(event);
});
socket.on('message', (message) => {
  received.push({ message: said(message) });
  shown = [...(shown ?? []), message];
  check(`event ${received.length} (message)`);
});

try {
  const upgraded = transport === 'websocket' ? next(socket.io.engine, 'upgrade') : null;
  await next(socket, 'conversation');
  assert.equal(shown.length, 1, 'a new conversation: the greeting');
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
    shown = [...shown, { role: 'user', text, isFinal: false, showSubscribeButton: false }];
    check(`"${text}" sent`);
    const back = next(socket, 'connect', 20_000);
    socket.io.engine.close();
    await back;
    assert.equal(socket.recovered, true, `recovered after "${text}" (a new session means another process)`);
    assert.equal(socket.id, id, 'the same socket');
    // The reply was sent while the transport was down; a duplicate would be here by now.
    const deadline = Date.now() + 10_000;
    while (replies() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
    const events = JSON.stringify(received);
    assert.deepEqual(repeats, [], `no message twice, nor taken back, after "${text}": ${events}`);
    const messages = received.filter((event) => 'message' in event).map((event) => event.message);
    assert.equal(new Set(messages).size, messages.length, `no \`message\` event twice: ${events}`);
    assert.equal(replies(), before + 1, `the reply to "${text}" exactly once: ${events}`);
    assert.equal(shown.filter((message) => message.text === text).length, 1, `"${text}" once: ${events}`);
  }
  console.log(
    JSON.stringify({ ok: true, transport: socket.io.engine.transport.name, messages: shown.length, events: received.length }),
  );
  socket.disconnect();
  process.exit(0);
} catch (error) {
  console.error(`recovering visitor (${transport}): ${error.stack ?? error}`);
  socket.disconnect();
  process.exit(1);
}
