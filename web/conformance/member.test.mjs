// The `/member` namespace of the HelpNow server (docs/protocol.md, "/member") through the official
// socket.io-client, against a local OpenAI-compatible mock (../e2e/ai-mock.mjs): the handshake's
// refusals, a reply streamed piece by piece and saved with its title, Stop hanging up on the provider,
// every tab of a member seeing the reply, a session secret in `auth.token`, and the busy refusal.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { io } from 'socket.io-client';
import { startAiMock } from '../e2e/ai-mock.mjs';
import { memberWithTrial, signUp } from '../e2e/members-support.mjs';
import { connectedWithin, skipProduct, sleep, startProduct, within } from './harness.mjs';

const T = { timeout: 60_000 };
const GREETING = 'Hello! How can I help you today?';
const LONG_REPLY = Array.from({ length: 30 }, (_, i) => `${i + 1}. Step number ${i + 1}.`).join(' ');

const opened = [];

/** A client of `/member` with every received event recorded in order. */
function open(server, { cookie, auth = {}, transports } = {}) {
  const socket = io(`${server.baseUrl}/member`, {
    forceNew: true,
    reconnection: false,
    auth,
    ...(cookie ? { extraHeaders: { cookie } } : {}),
    ...(transports ? { transports } : {}),
  });
  socket.received = [];
  socket.onAny((event, data) => socket.received.push({ event, data, taken: false }));
  opened.push(socket);
  return socket;
}

/** The next not yet taken `event` (waiting up to `ms`); its data. */
async function next(socket, event, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const entry = socket.received.find((e) => !e.taken && e.event === event);
    if (entry) {
      entry.taken = true;
      return entry.data;
    }
    if (Date.now() > deadline) {
      const seen = socket.received.map((e) => e.event).join(', ');
      throw new Error(`timed out waiting for "${event}" (received: ${seen || 'nothing'})`);
    }
    await sleep(10);
  }
}

function connectError(socket) {
  return within(
    new Promise((resolve, reject) => {
      socket.once('connect_error', resolve);
      socket.once('connect', () => reject(new Error('connected, but a refusal was expected')));
    }),
    10_000,
    'connect_error',
  );
}

const call = (socket, event, data) => socket.timeout(10_000).emitWithAck(event, data);

/** The text of the deltas of `messageId` joined, and the `chat:done` that ends them. */
async function streamedReply(socket, messageId) {
  const done = await next(socket, 'chat:done', 30_000);
  const pieces = socket.received
    .filter((e) => e.event === 'chat:delta' && e.data.messageId === messageId)
    .map((e) => e.data.text);
  return { done, streamed: pieces.join(''), pieces: pieces.length };
}

describe('the /member namespace', { skip: skipProduct }, () => {
  let server;
  let ai;
  let memberCount = 0;
  const newMember = () => memberWithTrial(server.baseUrl, `member${++memberCount}@example.com`);

  before(async () => {
    ai = await startAiMock();
    server = await startProduct(ai.env);
  });
  after(async () => {
    await server?.stop();
    await ai?.close();
  });
  afterEach(() => {
    for (const socket of opened.splice(0)) socket.disconnect();
    ai.state.reply = 'I can help with that. 1. Restart the device. 2. Try again.';
    ai.state.pieceDelayMs = 0;
  });

  it('refuses visitors and members without access, with a code the page can act on', T, async () => {
    const visitor = await connectError(open(server));
    assert.equal(visitor.message, 'Please sign in to chat.');
    assert.deepEqual(visitor.data, { code: 'sign_in_required' });

    const cookie = await signUp(server.baseUrl, 'no-trial@example.com');
    const noAccess = await connectError(open(server, { cookie }));
    assert.equal(noAccess.message, 'Start your trial to chat with your assistant.');
    assert.deepEqual(noAccess.data, { code: 'upgrade_required' });
  });

  for (const transports of [['websocket'], ['polling']]) {
    it(`streams a reply piece by piece and saves it under the first message's title (${transports})`, T, async () => {
      ai.state.pieceDelayMs = 20;
      const cookie = await newMember();
      const socket = open(server, { cookie, transports });
      await connectedWithin(socket, 10_000);
      assert.equal((await next(socket, 'chat:ready')).greeting, GREETING);

      const question = 'How do I make the letters on my screen bigger?';
      const ack = await call(socket, 'chat:send', { text: question });
      assert.equal(ack.ok, true);
      assert.equal(ack.title, 'How do I make the letters on m...');
      const typing = await next(socket, 'chat:typing');
      assert.equal(typing.chatId, ack.chatId);
      const { done, streamed, pieces } = await streamedReply(socket, typing.messageId);
      assert.equal(done.text, 'I can help with that. 1. Restart the device. 2. Try again.');
      assert.equal(streamed.trim(), done.text);
      assert.ok(pieces > 3, `streamed in ${pieces} pieces`);
      assert.equal(done.stopped, false);
      assert.ok(ai.userMessages().includes(question));

      const history = await (await fetch(`${server.baseUrl}/api/chats`, { headers: { cookie } })).json();
      assert.equal(history.chats[0].id, ack.chatId);
      assert.equal(history.chats[0].title, ack.title);
    });
  }

  it('Stop hangs up on the provider and keeps what was written', T, async () => {
    ai.state.reply = LONG_REPLY;
    ai.state.pieceDelayMs = 200;
    const hangUpsBefore = ai.state.hangUps;
    const cookie = await newMember();
    const socket = open(server, { cookie });
    await connectedWithin(socket, 10_000);
    const ack = await call(socket, 'chat:send', { text: 'My laptop will not charge' });
    await next(socket, 'chat:delta');
    assert.deepEqual(await call(socket, 'chat:stop', { chatId: ack.chatId }), { ok: true });
    const done = await next(socket, 'chat:done');
    assert.equal(done.stopped, true);
    assert.ok(LONG_REPLY.startsWith(done.text), done.text);
    assert.ok(done.text.length < LONG_REPLY.length);

    const deadline = Date.now() + 5_000;
    while (ai.state.hangUps === hangUpsBefore) {
      assert.ok(Date.now() < deadline, 'the provider never saw the request end');
      await sleep(20);
    }
    const chat = await (await fetch(`${server.baseUrl}/api/chats/${ack.chatId}`, { headers: { cookie } })).json();
    assert.equal(chat.chat.messages.at(-1).content, done.text);
  });

  it('sends every event to all of the member’s tabs, and refuses a second send while replying', T, async () => {
    ai.state.pieceDelayMs = 100;
    const cookie = await newMember();
    const first = open(server, { cookie });
    const second = open(server, { cookie });
    await Promise.all([connectedWithin(first, 10_000), connectedWithin(second, 10_000)]);
    const ack = await call(first, 'chat:send', { text: 'Is this text message a scam?' });
    const busy = await call(second, 'chat:send', { chatId: ack.chatId, text: 'hello?' });
    assert.deepEqual(busy, {
      ok: false,
      code: 'busy',
      error: 'Please wait for the reply before sending another message.',
    });
    const [a, b] = await Promise.all([next(first, 'chat:done'), next(second, 'chat:done')]);
    assert.equal(a.text, b.text);
    assert.equal(b.chatId, ack.chatId);
  });

  it('takes a session secret in auth.token (clients without cookies)', T, async () => {
    const cookie = await newMember();
    const secret = cookie.split('=')[1];
    const socket = open(server, { auth: { token: secret }, transports: ['websocket'] });
    await connectedWithin(socket, 10_000);
    const ack = await call(socket, 'chat:send', { text: 'How do I update my iPhone?' });
    assert.equal(ack.ok, true);
    await next(socket, 'chat:done');
  });
});
