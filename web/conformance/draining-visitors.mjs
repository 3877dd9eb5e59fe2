// Funnel visitors on the official socket.io-client, talking through the balancer while a process
// behind it is stopped (SIGTERM) or replaced; run by tests/api/cluster.rs and scripts/cluster-upgrade:
//
//   node conformance/draining-visitors.mjs BASE_URL VISITORS SECONDS [RUN_NAME]
//
// Each visitor joins the chat funnel and talks: a message, its acknowledgement, the reply, a
// moment, the next, until the funnel's final message; then it starts over as a new visitor. It
// keeps socket.io-client's own reconnection (the web app's settings), over WebSocket only (Node's
// client keeps the balancer's cookie per Engine.IO connection, so long-polling would need the
// cookie carried by hand; what is measured here is the time to be served again). It prints
// `ready` once every visitor has its conversation, runs SECONDS (or until a line `stop` on its
// standard input, or its end), lets the replies on their way arrive, and prints one JSON line:
// - visitors; acknowledged and acknowledgedTexts (the messages the server acknowledged);
//   unacknowledged (sends whose acknowledgement never came: on their way as the connection moved);
// - moved (connections that dropped), visitorsMoved (visitors whose connection dropped at least
//   once), waits (ms from each drop to the `conversation` event after it, longest first);
// - the violations: lost (an acknowledged message missing from the conversation as the server
//   then gave it), doubled (a message shown twice once the page applies the web app's rules),
//   unanswered (a message without a reply after it), errors.
// Exits 0 (the caller judges the figures), 2 on bad arguments.
import { io } from 'socket.io-client';

const [baseUrl, visitorsArg, secondsArg, runName = `draining-${process.pid}`] = process.argv.slice(2);
const visitorCount = Number(visitorsArg);
const seconds = Number(secondsArg);
if (!baseUrl || !(visitorCount > 0) || !(seconds > 0)) {
  console.error('usage: BASE_URL VISITORS SECONDS [RUN_NAME]');
  process.exit(2);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const said = (message) => `${message.role}: ${message.text}`;

const report = {
  visitors: 0,
  acknowledged: 0,
  acknowledgedTexts: [],
  unacknowledged: [],
  moved: 0,
  visitorsMoved: 0,
  waits: [],
  lost: [],
  doubled: [],
  unanswered: [],
  errors: [],
};
let stopping = false;

/** One visitor: a socket, and the conversation as the funnel page builds it (chat-state.ts). */
class Visitor {
  constructor(slot, round) {
    this.id = `${runName}-visitor-${slot}-${round}`;
    this.acked = [];
    this.shown = null;
    this.downAt = null;
    this.connected = new Promise((resolve) => {
      this.joined = resolve;
    });
    report.visitors += 1;
    this.socket = io(`${baseUrl}/funnel`, {
      auth: { funnel: 'chat', visitorId: this.id },
      withCredentials: true,
      transports: ['websocket'],
    });
    this.socket.on('conversation', (conversation) => {
      this.shown = [...conversation.messages];
      this.check('conversation');
      if (this.downAt !== null) {
        report.waits.push(Date.now() - this.downAt);
        this.downAt = null;
      }
      this.joined();
    });
    this.socket.on('message', (message) => {
      if (this.shown === null) return;
      this.shown.push(message);
      this.check('message');
    });
    this.socket.on('connect_error', (error) => {
      // The server refused the namespace (no reconnection follows): say why.
      if (!this.socket.active) {
        report.errors.push(`${this.id}: refused: ${error.message}`);
        console.error(`${this.id}: refused: ${error.message} ${JSON.stringify(error.data ?? null)}`);
        this.refused = true;
        this.joined();
      }
    });
    this.socket.on('disconnect', (reason) => {
      if (reason === 'io client disconnect') return;
      report.moved += 1;
      if (!this.hasMoved) report.visitorsMoved += 1;
      this.hasMoved = true;
      this.downAt = Date.now();
    });
  }

  /** The page's view holds no message twice (the run's texts are all different). */
  check(event) {
    const seen = new Set();
    for (const message of this.shown) {
      const text = said(message);
      if (seen.has(text)) report.doubled.push(`${this.id} after ${event}: "${text}"`);
      seen.add(text);
    }
  }

  replies() {
    return (this.shown ?? []).filter((message) => message.role === 'assistant').length;
  }

  isFinal() {
    return (this.shown ?? []).some((message) => message.isFinal);
  }

  /** Sends until the funnel's final message (three messages), or until the run ends. */
  async talk() {
    await this.connected;
    if (this.refused) return;
    let attempt = 0;
    for (let n = 1; n <= 3 && !stopping; ) {
      attempt += 1;
      const text = `${this.id} message ${n}.${attempt}: my printer will not print`;
      const before = this.replies();
      let answer;
      try {
        answer = await this.socket.timeout(10_000).emitWithAck('send', { text });
      } catch {
        // Not acknowledged (it was on its way as the connection moved): the page says so and
        // keeps the text; the visitor sends it again (a new text here, as it may have been
        // stored after all).
        report.unacknowledged.push(text);
        continue;
      }
      if (answer?.code === 'busy' || answer?.code === 'unavailable') {
        await sleep(300);
        continue;
      }
      // A message not acknowledged may have been stored after all: the funnel may be at its end.
      if (answer?.code === 'final') return;
      if (!answer?.ok) {
        report.errors.push(`${this.id}: "${text}" refused: ${JSON.stringify(answer)}`);
        return;
      }
      n += 1;
      this.acked.push(text);
      report.acknowledged += 1;
      report.acknowledgedTexts.push(text);
      // As chat-state.ts: the visitor's own message once acknowledged (unless a `conversation`
      // given meanwhile, after a reconnection, already holds it).
      if (!(this.shown ?? []).some((message) => message.role === 'user' && message.text === text)) {
        this.shown = [...(this.shown ?? []), { role: 'user', text, isFinal: false }];
      }
      this.check('send');
      const deadline = Date.now() + 15_000;
      while (this.replies() === before && Date.now() < deadline) await sleep(50);
      await sleep(100 + Math.random() * 400);
    }
  }

  /** Waits for the replies on their way, then checks the conversation against what was acknowledged. */
  async settle() {
    const deadline = Date.now() + 15_000;
    const owed = () => {
      const last = this.shown?.at(-1);
      return this.downAt !== null || (last && last.role === 'user');
    };
    while (owed() && Date.now() < deadline) await sleep(100);
    const texts = (this.shown ?? []).map(said);
    for (const text of this.acked) {
      if (!texts.includes(`user: ${text}`)) report.lost.push(`${this.id}: "${text}"`);
    }
    const shown = this.shown ?? [];
    shown.forEach((message, index) => {
      if (message.role !== 'user') return;
      const next = shown[index + 1];
      if (!next || next.role !== 'assistant') report.unanswered.push(`${this.id}: "${message.text}"`);
    });
    this.socket.disconnect();
  }
}

async function slot(n, started) {
  for (let round = 0; ; round += 1) {
    const visitor = new Visitor(n, round);
    if (round === 0) started.push(visitor.connected);
    await visitor.talk();
    if (stopping || !visitor.isFinal()) {
      return visitor;
    }
    await visitor.settle();
  }
}

const started = [];
const slots = Array.from({ length: visitorCount }, (_, n) => slot(n, started));
await Promise.all(started);
console.log('ready');
// The run ends after SECONDS, or sooner when a line `stop` comes on the standard input.
const stopLine = new Promise((resolve) => {
  let buffered = '';
  process.stdin.on('data', (chunk) => {
    buffered += chunk;
    if (buffered.split('\n').includes('stop')) resolve();
  });
  process.stdin.on('end', resolve);
});
await Promise.race([sleep(seconds * 1000), stopLine]);
process.stdin.destroy();
stopping = true;
const last = await Promise.all(slots);
await Promise.all(last.map((visitor) => visitor.settle()));
report.waits.sort((a, b) => b - a);
console.log(JSON.stringify(report));
process.exit(0);
