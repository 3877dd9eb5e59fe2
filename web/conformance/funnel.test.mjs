// The `/funnel` namespace of the HelpNow server (docs/protocol.md, "/funnel") through the official
// socket.io-client: the handshake (visitor and funnel), the conversation (greeting, replies behind a
// typing indicator, refusals, the final message), the auto-checkout 15 s after the final message and
// the 'Get started >>' button, the one-time checkout link, shared and resumed conversations, and a
// restart on a file database that must lose nothing acknowledged.
//
// The AI is offline in tests, so the replies are the scripts of config/funnels.toml. Each test uses its
// own visitor (or its own server), so the tests run concurrently; the longest ones wait out the 15 s
// auto-checkout countdown.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { io } from 'socket.io-client';
import { connectedWithin, skipProduct, sleep, startProduct, within } from './harness.mjs';

const T = { timeout: 60_000 };

/** The spec's timings: typing 1.5-2.5 s before each reply, the auto-checkout 15 s after the final message. */
const REPLY_MIN_MS = 1_300;
const REPLY_MAX_MS = 3_500;
const CHECKOUT_MIN_MS = 14_000;
const CHECKOUT_MAX_MS = 17_000;

const CHAT_DEFAULT_HEADLINE = 'Need Help? Get Instant Expert Assistance Now!';
const REFUNDABLE_DEFAULT_HEADLINE = 'Need Help? Get Instant Expert Help Now!';
const OUTLOOK_HEADLINE = 'Need Outlook Email Assistance? Get Instant Expert Assistance Now';
const CHECKOUT_PATH = '/api/funnels/checkout/';
const CHECKOUT_FALLBACK = '/?success=demo';
const CHECKOUT_START_COOKIE = 'helpnow_checkout_start';

/** The refusals of `send` (actors/src/funnel/actor.rs, `Refusal`). */
const REFUSED = {
  empty: 'Please type your question first.',
  final: "Your assistant is ready for you: click 'Get started >>' to continue.",
  busy: 'Please wait for the reply before sending another message.',
  too_long: 'Please keep your message under 2,000 characters.',
};

/** A fresh visitor id: 16-64 of [A-Za-z0-9_-]. */
function newVisitor() {
  return `conf_${randomBytes(12).toString('base64url')}`;
}

// --- Clients ------------------------------------------------------------------------------------------

/** The clients each test opened (keyed by its test context), closed in afterEach. */
const openedBy = new Map();

function closeClients(t) {
  for (const socket of openedBy.get(t) ?? []) {
    socket.io.reconnection(false);
    socket.disconnect();
    socket.io.engine?.close();
  }
  openedBy.delete(t);
}

/**
 * A client of `/funnel` on `server` for test `t`, with `auth` as the handshake data. Every event it
 * receives is recorded in order (`socket.received`), so no test can miss an event that arrives before
 * it starts waiting (the `conversation` comes right with the connect). forceNew: one connection each.
 */
function open(t, server, auth, options = {}) {
  const socket = io(`${server.baseUrl}/funnel`, { forceNew: true, reconnection: false, auth, ...options });
  socket.received = [];
  socket.onAny((event, ...args) => socket.received.push({ event, data: args[0], args, at: Date.now(), taken: false }));
  if (!openedBy.has(t)) openedBy.set(t, []);
  openedBy.get(t).push(socket);
  return socket;
}

/** Resolves on `connect` (10 s: a conversation is loaded or started first). */
const connected = (socket) => connectedWithin(socket, 10_000);

/** The error of the next `connect_error`; fails if the socket connects instead. */
function connectError(socket, ms = 10_000) {
  let onConnect;
  let onError;
  const outcome = new Promise((resolve, reject) => {
    onError = resolve;
    onConnect = () => reject(new Error('connected, but a connect_error was expected'));
    socket.once('connect', onConnect);
    socket.once('connect_error', onError);
  });
  return within(outcome, ms, 'connect_error').finally(() => {
    socket.off('connect', onConnect);
    socket.off('connect_error', onError);
  });
}

/** The first not yet taken `event` the socket received (waiting up to `ms`): `{data, args, at}`. */
async function next(socket, event, ms = 5_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const entry = socket.received.find((e) => !e.taken && e.event === event);
    if (entry) {
      entry.taken = true;
      return entry;
    }
    if (Date.now() > deadline) {
      const seen = socket.received.map((e) => `${e.event}${e.taken ? '' : '*'}`).join(', ');
      throw new Error(`timed out after ${ms} ms waiting for "${event}" (received: ${seen || 'nothing'})`);
    }
    await sleep(10);
  }
}

/** The events named `event` received and not taken yet. */
function pending(socket, event) {
  return socket.received.filter((e) => !e.taken && e.event === event);
}

/** Opens a client, waits for the connect and its `conversation`. */
async function join(t, server, auth, options) {
  const socket = open(t, server, auth, options);
  await connected(socket);
  const { data: conversation } = await next(socket, 'conversation');
  return { socket, conversation };
}

/** `send` {text} (or other data) with its ack. */
function send(socket, data) {
  return socket.timeout(5_000).emitWithAck('send', typeof data === 'string' ? { text: data } : data);
}

function pressButton(socket) {
  return socket.timeout(10_000).emitWithAck('checkout', {});
}

/** `typing` {active:true, delayMs}: typing shows for the spec's 1.5-2.5 s before the reply. */
function typingStarted(data) {
  assert.equal(data.active, true);
  assert.ok(Number.isInteger(data.delayMs) && data.delayMs >= 1_500 && data.delayMs <= 2_500, JSON.stringify(data));
  return data.delayMs;
}

/**
 * Sends `text` and takes the whole exchange: ack {ok:true}, `typing` {active:true, delayMs}, the assistant's
 * `message` and `typing` {active:false}. Returns the message, when it arrived and how long it took.
 */
async function exchange(socket, text) {
  // Typing events of earlier exchanges (another client's) are not this one's.
  for (const stale of pending(socket, 'typing')) stale.taken = true;
  const sentAt = Date.now();
  assert.deepEqual(await send(socket, text), { ok: true }, `the ack of "${text}"`);
  const delayMs = typingStarted((await next(socket, 'typing')).data);
  const reply = await next(socket, 'message', REPLY_MAX_MS + 2_000);
  assert.deepEqual((await next(socket, 'typing')).data, { active: false });
  assert.equal(reply.data.role, 'assistant');
  // The reply keeps the delay typing announced (the send came before typing began; measuring
  // from typing's arrival would count how late a busy machine delivered it).
  assert.ok(reply.at - sentAt >= delayMs, `${reply.at - sentAt} ms after the send, announced ${delayMs}`);
  return { message: reply.data, at: reply.at, elapsed: reply.at - sentAt };
}

/** Three visitor messages: returns the final message and when it arrived. */
async function reachFinal(socket) {
  const first = await exchange(socket, 'My email stopped working this morning.');
  const second = await exchange(socket, 'It says my password is wrong but it is not.');
  assertRegularReply(first.message);
  assertRegularReply(second.message);
  const final = await exchange(socket, 'I restarted the computer already.');
  assertFinalMessage(final.message);
  return final;
}

function assertMessageShape(message) {
  assert.deepEqual(Object.keys(message).sort(), ['isFinal', 'role', 'showSubscribeButton', 'text']);
  assert.ok(['assistant', 'user'].includes(message.role), `role ${message.role}`);
  assert.equal(typeof message.text, 'string');
  assert.ok(message.text.length > 0, 'a text');
}

function assertRegularReply(message) {
  assertMessageShape(message);
  assert.equal(message.role, 'assistant');
  assert.equal(message.isFinal, false);
  assert.equal(message.showSubscribeButton, false);
}

function assertFinalMessage(message) {
  assertMessageShape(message);
  assert.equal(message.role, 'assistant');
  assert.equal(message.isFinal, true);
  assert.equal(message.showSubscribeButton, true);
  assert.match(message.text, /Get started >>/);
}

function assertConversationShape(conversation) {
  assert.deepEqual(Object.keys(conversation).sort(), ['final', 'funnel', 'headline', 'id', 'messages', 'stage', 'typing']);
  assert.equal(typeof conversation.id, 'string');
  assert.ok(conversation.id.length > 0, 'an id');
  assert.equal(typeof conversation.headline, 'string');
  assert.equal(typeof conversation.stage, 'number');
  assert.equal(typeof conversation.final, 'boolean');
  assert.equal(typeof conversation.typing, 'boolean');
  assert.ok(Array.isArray(conversation.messages), 'messages');
  conversation.messages.forEach(assertMessageShape);
}

/** A fresh conversation: one assistant greeting, stage 0, not final, nobody typing. */
function assertFresh(conversation, funnel, headline) {
  assertConversationShape(conversation);
  assert.equal(conversation.funnel, funnel);
  assert.equal(conversation.headline, headline);
  assert.equal(conversation.stage, 0);
  assert.equal(conversation.final, false);
  assert.equal(conversation.typing, false);
  assert.equal(conversation.messages.length, 1);
  assertRegularReply(conversation.messages[0]);
}

/** The roles and texts of a conversation's messages, to compare conversations. */
const transcript = (conversation) => conversation.messages.map((m) => `${m.role}: ${m.text}`);

/** GET the checkout link without following the redirect. */
async function getLink(server, url) {
  const response = await fetch(new URL(url, server.baseUrl), { redirect: 'manual' });
  await response.arrayBuffer();
  return {
    status: response.status,
    location: response.headers.get('location'),
    cookies: response.headers.getSetCookie(),
  };
}

/** A plain-words refusal for a visitor: a sentence, nothing technical. */
function assertPlainWords(error) {
  assert.ok(error instanceof Error, 'an Error');
  assert.notEqual(error.message, 'Invalid namespace');
  assert.match(error.message, /^[A-Z][^{}<>_]{15,}[.!]$/, `plain words: ${JSON.stringify(error.message)}`);
}

// --- Tests --------------------------------------------------------------------------------------------

describe('the /funnel namespace (socket.io-client)', { concurrency: true, skip: skipProduct && 'CONFORMANCE_SKIP_PRODUCT=1' }, () => {
  let server;

  before(async () => {
    server = await startProduct();
  });
  after(async () => {
    for (const t of Array.from(openedBy.keys())) closeClients(t);
    await server?.stop();
  });
  afterEach((t) => closeClients(t));

  describe('handshake', { concurrency: true }, () => {
    it('refuses a connection without a visitor (no vid cookie, no visitorId) in plain words', T, async (t) => {
      for (const auth of [{ funnel: 'chat' }, { funnel: 'refundable', visitorId: '' }, { funnel: 'chat', visitorId: 1234567890 }]) {
        const error = await connectError(open(t, server, auth));
        assertPlainWords(error);
        assert.match(error.message, /cookie|reload/i, error.message);
      }
    });

    it('refuses an unknown or missing funnel', T, async (t) => {
      for (const funnel of ['help', 'x', '', 'CHAT', undefined, 7]) {
        const error = await connectError(open(t, server, { funnel, visitorId: newVisitor() }));
        assertPlainWords(error);
      }
    });

    it('refuses a malformed visitorId and accepts 16 and 64 characters', T, async (t) => {
      const base = newVisitor().replace(/[^A-Za-z0-9]/g, 'x');
      for (const visitorId of ['a'.repeat(15), `${base}${'b'.repeat(64)}`.slice(0, 65), `${base}!`, `${base}.x`, `${base}/`]) {
        const error = await connectError(open(t, server, { funnel: 'chat', visitorId }));
        assertPlainWords(error);
      }
      for (const length of [16, 64]) {
        const visitorId = `${base}${'c'.repeat(64)}`.slice(0, length);
        const { conversation } = await join(t, server, { funnel: 'chat', visitorId });
        assertFresh(conversation, 'chat', CHAT_DEFAULT_HEADLINE);
      }
    });

    for (const transports of [['polling'], ['websocket']]) {
      it(`takes the visitor from the vid cookie (${transports[0]}), ahead of auth.visitorId`, T, async (t) => {
        const visitor = newVisitor();
        const cookie = { extraHeaders: { Cookie: `vid=${visitor}` }, transports };
        const { socket, conversation } = await join(t, server, { funnel: 'chat' }, cookie);
        assertFresh(conversation, 'chat', CHAT_DEFAULT_HEADLINE);
        await exchange(socket, 'My printer is offline.');

        // The same visitor by visitorId: the same conversation.
        const byId = await join(t, server, { funnel: 'chat', visitorId: visitor });
        assert.equal(byId.conversation.id, conversation.id);
        assert.equal(byId.conversation.messages.length, 3);

        // The cookie wins over another visitorId.
        const both = await join(t, server, { funnel: 'chat', visitorId: newVisitor() }, cookie);
        assert.equal(both.conversation.id, conversation.id);
      });
    }
  });

  it('starts a conversation with one greeting at stage 0, and the headline from the keyword or the default', T, async (t) => {
    const cases = [
      [{ funnel: 'chat' }, CHAT_DEFAULT_HEADLINE],
      [{ funnel: 'refundable' }, REFUNDABLE_DEFAULT_HEADLINE],
      [{ funnel: 'chat', keyword: 'outlook email' }, OUTLOOK_HEADLINE],
      [{ funnel: 'refundable', keyword: '  OUTLOOK   email ' }, OUTLOOK_HEADLINE],
      [{ funnel: 'chat', keyword: '   ' }, CHAT_DEFAULT_HEADLINE],
    ];
    const greetings = new Map();
    for (const [auth, headline] of cases) {
      const { conversation } = await join(t, server, { ...auth, visitorId: newVisitor(), utm_source: 'google', campaignid: 'x1' });
      assertFresh(conversation, auth.funnel, headline);
      greetings.set(auth.keyword?.trim() ?? '', conversation.messages[0].text);
    }
    // The keyword picks the email flow, whose greeting is not the default one.
    assert.notEqual(greetings.get('outlook email'), greetings.get(''));
  });

  it('answers a message: ack {ok:true}, typing, then the reply after 1.5-2.5 s', T, async (t) => {
    const { socket, conversation } = await join(t, server, { funnel: 'chat', visitorId: newVisitor() });
    assertFresh(conversation, 'chat', CHAT_DEFAULT_HEADLINE);
    const { message, elapsed } = await exchange(socket, 'My laptop is very slow since the update.');
    assertRegularReply(message);
    t.diagnostic(`the replies came after ${elapsed} ms`);
    assert.ok(elapsed >= REPLY_MIN_MS && elapsed <= REPLY_MAX_MS, `the reply came after ${elapsed} ms`);
    // The sender gets no copy of its own message, and nothing else came.
    await sleep(300);
    assert.deepEqual(socket.received.filter((e) => !e.taken).map((e) => e.event), []);

    const second = await exchange(socket, 'It takes five minutes to start.');
    assertRegularReply(second.message);
    assert.ok(second.elapsed >= REPLY_MIN_MS && second.elapsed <= REPLY_MAX_MS, `the second reply came after ${second.elapsed} ms`);
    assert.notEqual(second.message.text, message.text);
  });

  it('refuses empty, non-string, too long and overlapping messages, and stores none of them', T, async (t) => {
    const visitorId = newVisitor();
    const { socket } = await join(t, server, { funnel: 'chat', visitorId });
    const refused = (code) => ({ ok: false, code, error: REFUSED[code] });

    // Raw `send` data: only {text: <string>} carries a message.
    for (const data of [{ text: '' }, { text: '  \n\t ' }, { text: 42 }, { text: null }, { text: ['hi'] }, { text: { a: 1 } }, {}, 'hello', 17, null]) {
      const ack = await socket.timeout(5_000).emitWithAck('send', data);
      assert.equal(ack.ok, false, `${JSON.stringify(data)} is refused`);
      assert.equal(typeof ack.code, 'string');
      assert.equal(typeof ack.error, 'string');
    }
    assert.deepEqual(await send(socket, ''), refused('empty'));
    assert.deepEqual(await send(socket, '   '), refused('empty'));
    assert.deepEqual(await send(socket, { text: 42 }), refused('empty'));
    assert.deepEqual(await socket.timeout(5_000).emitWithAck('send'), refused('empty'));

    assert.deepEqual(await send(socket, 'x'.repeat(2_001)), refused('too_long'));
    assert.deepEqual(await send(socket, 'é'.repeat(2_001)), refused('too_long'));
    // Nothing started for a refused message.
    await sleep(300);
    assert.deepEqual(pending(socket, 'typing'), []);

    // 2,000 characters (not bytes) are taken; while the reply is pending the next one is refused.
    assert.deepEqual(await send(socket, `My screen is broken. ${'é'.repeat(1_979)}`), { ok: true });
    assert.deepEqual(await send(socket, 'Hello?'), refused('busy'));
    typingStarted((await next(socket, 'typing')).data);
    assert.deepEqual(await send(socket, 'Are you there?'), refused('busy'));
    await next(socket, 'message', REPLY_MAX_MS + 2_000);
    assert.deepEqual((await next(socket, 'typing')).data, { active: false });

    // Two messages at once: one is taken, the other is refused as busy.
    const acks = await Promise.all([send(socket, 'First of two.'), send(socket, 'Second of two.')]);
    assert.deepEqual(acks, [{ ok: true }, refused('busy')]);
    await next(socket, 'message', REPLY_MAX_MS + 2_000);

    // An unknown event gets an error ack.
    const unknown = await socket.timeout(5_000).emitWithAck('hello', {});
    assert.equal(typeof unknown?.error, 'string');

    // A new client sees only the taken messages.
    const again = await join(t, server, { funnel: 'chat', visitorId });
    assert.deepEqual(
      again.conversation.messages.map((m) => m.role),
      ['assistant', 'user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(again.conversation.messages[1].text, `My screen is broken. ${'é'.repeat(1_979)}`);
    assert.equal(again.conversation.messages[3].text, 'First of two.');
    assert.equal(again.conversation.stage, 2);
  });

  it('reaches the final message after three messages, opens the checkout 15 s later, and the link works once', T, async (t) => {
    const visitorId = newVisitor();
    const { socket } = await join(t, server, { funnel: 'chat', visitorId, keyword: 'outlook email' });
    const final = await reachFinal(socket);

    // After the final message nothing more is taken.
    assert.deepEqual(await send(socket, 'Thanks!'), { ok: false, code: 'final', error: REFUSED.final });
    const rejoined = await join(t, server, { funnel: 'chat', visitorId });
    assert.equal(rejoined.conversation.final, true);
    assert.equal(rejoined.conversation.stage, 2);
    assert.equal(rejoined.conversation.messages.length, 7);
    assertFinalMessage(rejoined.conversation.messages.at(-1));

    const checkout = await next(socket, 'checkout', CHECKOUT_MAX_MS + 2_000);
    const after = checkout.at - final.at;
    t.diagnostic(`the checkout came ${after} ms after the final message`);
    assert.ok(after >= CHECKOUT_MIN_MS && after <= CHECKOUT_MAX_MS, `the checkout came ${after} ms after the final message`);
    assert.deepEqual(Object.keys(checkout.data), ['url']);
    const { url } = checkout.data;
    assert.ok(url.startsWith(CHECKOUT_PATH), url);
    // Every client of the conversation is sent there.
    assert.deepEqual((await next(rejoined.socket, 'checkout', 2_000)).data, { url });

    const first = await getLink(server, url);
    assert.equal(first.status, 303);
    assert.ok(first.location, 'a Location');
    assert.notEqual(first.location, CHECKOUT_FALLBACK);
    const startCookie = first.cookies.find((c) => c.startsWith(`${CHECKOUT_START_COOKIE}=`));
    assert.ok(startCookie, `sets ${CHECKOUT_START_COOKIE}: ${JSON.stringify(first.cookies)}`);
    assert.match(startCookie, /HttpOnly/i);

    const second = await getLink(server, url);
    assert.equal(second.status, 303);
    assert.equal(second.location, first.location);
    assert.deepEqual(second.cookies.filter((c) => c.startsWith(`${CHECKOUT_START_COOKIE}=`)), []);

    for (const madeUp of [`${CHECKOUT_PATH}nope`, `${CHECKOUT_PATH}${randomBytes(32).toString('base64url')}`]) {
      const response = await getLink(server, madeUp);
      assert.equal(response.status, 303, madeUp);
      assert.equal(response.location, CHECKOUT_FALLBACK, madeUp);
      assert.deepEqual(response.cookies.filter((c) => c.startsWith(`${CHECKOUT_START_COOKIE}=`)), []);
    }

    // Only one auto-checkout.
    await sleep(1_000);
    assert.deepEqual(pending(socket, 'checkout'), []);
  });

  it("opens the checkout at once on the 'Get started >>' button, only after the final message, and then no auto-checkout", T, async (t) => {
    const { socket } = await join(t, server, { funnel: 'refundable', visitorId: newVisitor() });
    const early = await pressButton(socket);
    assert.deepEqual(Object.keys(early), ['error']);
    assert.equal(typeof early.error, 'string');

    await exchange(socket, 'My phone will not charge.');
    assert.deepEqual(Object.keys(await pressButton(socket)), ['error']);
    await exchange(socket, 'It is an Android phone.');
    const final = await exchange(socket, 'I tried another cable.');
    assertFinalMessage(final.message);

    const pressedAt = Date.now();
    const ack = await pressButton(socket);
    const took = Date.now() - pressedAt;
    assert.deepEqual(Object.keys(ack), ['url']);
    assert.ok(ack.url.startsWith(CHECKOUT_PATH), ack.url);
    assert.ok(took < 3_000, `the button's ack took ${took} ms`);

    const link = await getLink(server, ack.url);
    assert.equal(link.status, 303);
    assert.notEqual(link.location, CHECKOUT_FALLBACK);

    // The countdown is off: no `checkout` event until well past the 15 s.
    await sleep(Math.max(0, final.at + CHECKOUT_MAX_MS - Date.now()));
    assert.deepEqual(pending(socket, 'checkout'), []);
  });

  it('opens a checkout that came due while nobody was connected 15 s after the next connect', T, async (t) => {
    const visitorId = newVisitor();
    const { socket } = await join(t, server, { funnel: 'chat', visitorId });
    const final = await reachFinal(socket);
    socket.disconnect();
    await sleep(Math.max(0, final.at + CHECKOUT_MAX_MS - Date.now()));
    assert.deepEqual(pending(socket, 'checkout'), []);

    const back = open(t, server, { funnel: 'chat', visitorId });
    await connected(back);
    const conversation = await next(back, 'conversation');
    assert.equal(conversation.data.final, true);
    // The visitor who comes back sees the conversation for the spec's 15 s first.
    const checkout = await next(back, 'checkout', CHECKOUT_MAX_MS + 3_000);
    const after = checkout.at - conversation.at;
    assert.ok(after >= CHECKOUT_MIN_MS && after <= CHECKOUT_MAX_MS, `the checkout came ${after} ms after the return`);
    assert.ok(checkout.data.url.startsWith(CHECKOUT_PATH), checkout.data.url);
    // Once only.
    const later = await join(t, server, { funnel: 'chat', visitorId });
    await sleep(1_000);
    assert.deepEqual(pending(later.socket, 'checkout'), []);
  });

  it('starts one conversation for clients of a new visitor that connect at the same moment', T, async (t) => {
    const visitorId = newVisitor();
    const joined = await Promise.all([1, 2, 3, 4].map(() => join(t, server, { funnel: 'refundable', visitorId })));
    assert.equal(new Set(joined.map((j) => j.conversation.id)).size, 1, 'one conversation id');
    for (const { conversation } of joined) assertFresh(conversation, 'refundable', REFUNDABLE_DEFAULT_HEADLINE);
  });

  it('shares one conversation between clients of the same visitor and funnel', T, async (t) => {
    const visitorId = newVisitor();
    const a = await join(t, server, { funnel: 'chat', visitorId });
    const b = await join(t, server, { funnel: 'chat', visitorId });
    assert.equal(b.conversation.id, a.conversation.id);
    assert.deepEqual(b.conversation, a.conversation);

    const text = 'My wifi keeps dropping.';
    const { message } = await exchange(a.socket, text);
    // B sees the visitor's message, the typing and the same reply; A gets no echo of its own message.
    assert.deepEqual((await next(b.socket, 'message')).data, { role: 'user', text, isFinal: false, showSubscribeButton: false });
    typingStarted((await next(b.socket, 'typing')).data);
    assert.deepEqual((await next(b.socket, 'message')).data, message);
    assert.deepEqual((await next(b.socket, 'typing')).data, { active: false });
    assert.deepEqual(pending(a.socket, 'message'), []);

    // B answers; A sees it. The conversation's state is shared: A is refused while B's reply is pending.
    const fromB = 'It happens every evening.';
    assert.deepEqual(await send(b.socket, fromB), { ok: true });
    assert.deepEqual((await next(a.socket, 'message')).data, { role: 'user', text: fromB, isFinal: false, showSubscribeButton: false });
    assert.deepEqual(await send(a.socket, 'Hello?'), { ok: false, code: 'busy', error: REFUSED.busy });
    const replyB = await next(b.socket, 'message', REPLY_MAX_MS + 2_000);
    assert.equal(replyB.data.role, 'assistant');
    assert.deepEqual((await next(a.socket, 'message', 2_000)).data, replyB.data);
    await sleep(300);
    assert.deepEqual(pending(b.socket, 'message'), []);
    assert.deepEqual(pending(a.socket, 'message'), []);

    // A client that leaves does not end it for the other.
    a.socket.disconnect();
    await exchange(b.socket, 'I restarted the router.');
  });

  it('gives a client that reconnects the whole conversation, also while a reply is pending', T, async (t) => {
    const visitorId = newVisitor();
    const { socket, conversation } = await join(t, server, { funnel: 'refundable', visitorId, keyword: 'gmail login' });
    await exchange(socket, 'I forgot my Gmail password.');

    // The same socket.io-client Socket disconnects and connects again.
    socket.disconnect();
    await sleep(200);
    socket.connect();
    await connected(socket);
    const resumed = (await next(socket, 'conversation')).data;
    assertConversationShape(resumed);
    assert.equal(resumed.id, conversation.id);
    assert.equal(resumed.headline, 'Need Gmail Login Assistance? Get Instant Expert Assistance Now');
    assert.equal(resumed.stage, 1);
    assert.equal(resumed.typing, false);
    assert.deepEqual(resumed.messages.map((m) => `${m.role}: ${m.text}`).slice(0, 2), [
      `assistant: ${conversation.messages[0].text}`,
      'user: I forgot my Gmail password.',
    ]);
    assert.equal(resumed.messages.length, 3);

    // Leaving while the reply is being written: the new client sees `typing: true` and gets the reply.
    assert.deepEqual(await send(socket, 'The recovery email is old.'), { ok: true });
    socket.disconnect();
    const other = await join(t, server, { funnel: 'refundable', visitorId });
    assert.equal(other.conversation.typing, true);
    assert.equal(other.conversation.messages.length, 4);
    assert.equal(other.conversation.messages.at(-1).text, 'The recovery email is old.');
    const reply = await next(other.socket, 'message', REPLY_MAX_MS + 2_000);
    assertRegularReply(reply.data);
    assert.deepEqual((await next(other.socket, 'typing')).data, { active: false });

    const last = await join(t, server, { funnel: 'refundable', visitorId });
    assert.deepEqual(transcript(last.conversation), [...transcript(other.conversation), `assistant: ${reply.data.text}`]);
    assert.equal(last.conversation.stage, 2);
  });

  it('keeps the chat and refundable conversations of one visitor apart', T, async (t) => {
    const visitorId = newVisitor();
    const chat = await join(t, server, { funnel: 'chat', visitorId });
    const refundable = await join(t, server, { funnel: 'refundable', visitorId });
    assertFresh(chat.conversation, 'chat', CHAT_DEFAULT_HEADLINE);
    assertFresh(refundable.conversation, 'refundable', REFUNDABLE_DEFAULT_HEADLINE);
    assert.notEqual(chat.conversation.id, refundable.conversation.id);

    await exchange(chat.socket, 'My tablet is frozen.');
    await sleep(300);
    assert.deepEqual(refundable.socket.received.filter((e) => !e.taken).map((e) => e.event), []);
    const again = await join(t, server, { funnel: 'refundable', visitorId });
    assert.equal(again.conversation.id, refundable.conversation.id);
    assert.equal(again.conversation.messages.length, 1);
    // And the refundable one takes its own messages while the chat one is untouched.
    await exchange(refundable.socket, 'Something else entirely.');
    const chatAgain = await join(t, server, { funnel: 'chat', visitorId });
    assert.equal(chatAgain.conversation.messages.length, 3);
  });

  it('loses nothing acknowledged across restarts: a pending reply is written, the auto-checkout keeps its deadline', T, async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'helpnow-funnel-'));
    const env = { APP__DATABASE__URL: `surrealkv://${dir}/db` };
    let product = await startProduct(env);
    t.after(async () => {
      await product?.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const restart = async () => {
      await product.stop();
      product = null;
      product = await startProduct(env);
    };

    const visitorId = newVisitor();
    const auth = { funnel: 'chat', visitorId };
    let { socket, conversation } = await join(t, product, auth);
    await exchange(socket, 'My email stopped working.');

    // The second message is acknowledged (stored); the server stops while its reply is pending.
    assert.deepEqual(await send(socket, 'I cannot sign in since yesterday.'), { ok: true });
    typingStarted((await next(socket, 'typing')).data);
    await restart();
    assert.equal(pending(socket, 'message').length, 0, 'the reply was not sent before the stop');

    ({ socket, conversation } = await join(t, product, auth));
    assert.deepEqual(
      conversation.messages.filter((m) => m.role === 'user').map((m) => m.text),
      ['My email stopped working.', 'I cannot sign in since yesterday.'],
    );
    if (conversation.messages.length === 5) {
      // The stopping server still wrote the reply (and stored it): nothing lost either.
      t.diagnostic('the reply was written while the server stopped');
      assertRegularReply(conversation.messages[4]);
      assert.equal(conversation.stage, 2);
    } else {
      // The missed reply comes: typing (in the conversation or as an event), then the message.
      assert.equal(conversation.messages.length, 4);
      assert.equal(conversation.stage, 1);
      if (!conversation.typing) typingStarted((await next(socket, 'typing')).data);
      const missed = await next(socket, 'message', REPLY_MAX_MS + 2_000);
      assertRegularReply(missed.data);
      assert.deepEqual((await next(socket, 'typing')).data, { active: false });
    }

    // The final message; the server stops about 5 s into the 15 s countdown.
    const final = await exchange(socket, 'I tried resetting the password.');
    assertFinalMessage(final.message);
    await sleep(Math.max(0, final.at + 5_000 - Date.now()));
    await restart();
    ({ socket, conversation } = await join(t, product, auth));
    const rejoinedAfter = Date.now() - final.at;
    assert.equal(conversation.final, true);
    assert.equal(conversation.messages.length, 7);
    assert.ok(rejoinedAfter < CHECKOUT_MIN_MS - 1_000, `rejoined ${rejoinedAfter} ms after the final message (too late to measure)`);

    const checkout = await next(socket, 'checkout', CHECKOUT_MAX_MS + 5_000);
    const after = checkout.at - final.at;
    t.diagnostic(`rejoined ${rejoinedAfter} ms and got the checkout ${after} ms after the final message`);
    assert.ok(after >= CHECKOUT_MIN_MS && after <= CHECKOUT_MAX_MS + 1_000, `the checkout came ${after} ms after the final message`);
    assert.ok(checkout.data.url.startsWith(CHECKOUT_PATH), checkout.data.url);
    const link = await getLink(product, checkout.data.url);
    assert.equal(link.status, 303);
    assert.notEqual(link.location, CHECKOUT_FALLBACK);
  });
});
