// Times the members' chat end to end with the official socket.io-client: the server started here
// (HELPNOW_BIN, default ../target/debug/helpnow; build web/dist first) against the local
// OpenAI-compatible mock (e2e/ai-mock.mjs, answering at once), one member with a trial.
//
//   node bench/member-chat.mjs --runs 200
//
// Reports, per exchange: the ack (the message stored), the first streamed piece, the whole reply
// stored (`chat:done`); and for Stop: from `chat:stop` to the provider seeing its request end.
// The AI mock answers instantly, so the figures are the server's own work (store writes, the
// actor, the socket), not a model's.
import { io } from 'socket.io-client';
import { startAiMock } from '../e2e/ai-mock.mjs';
import { startServer } from '../e2e/harness.mjs';
import { memberWithTrial } from '../e2e/members-support.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (i % 2 ? pairs : [...pairs, [arg.replace(/^--/, ''), all[i + 1]]]), []),
);
const runs = Number(args.runs ?? 100);

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const summary = (name, values) =>
  `${name.padEnd(34)} median ${percentile(values, 50).toFixed(1).padStart(7)} ms   p95 ${percentile(values, 95)
    .toFixed(1)
    .padStart(7)} ms   max ${Math.max(...values).toFixed(1).padStart(7)} ms`;

function nextEvent(socket, event, ms = 30_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${ms} ms`)), ms);
    socket.once(event, (data) => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

const ai = await startAiMock();
const server = await startServer(ai.env);
try {
  const cookie = await memberWithTrial(server.baseUrl, 'bench@example.com');
  const socket = io(`${server.baseUrl}/member`, { transports: ['websocket'], extraHeaders: { cookie } });
  await nextEvent(socket, 'chat:ready');

  ai.state.reply = 'Restart the router, wait a minute, then try the Wi-Fi again. Tell me if it works.';
  const acked = [];
  const firstPiece = [];
  const stored = [];
  let chatId;
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    const delta = nextEvent(socket, 'chat:delta');
    const done = nextEvent(socket, 'chat:done');
    const ack = await socket.timeout(10_000).emitWithAck('chat:send', chatId ? { chatId, text: `Question ${run}` } : { text: 'Question 0' });
    if (!ack.ok) throw new Error(`refused: ${JSON.stringify(ack)}`);
    chatId = ack.chatId;
    acked.push(performance.now() - started);
    await delta;
    firstPiece.push(performance.now() - started);
    await done;
    stored.push(performance.now() - started);
    // A new chat every 20 exchanges, so the AI's context stays like a real chat's.
    if (run % 20 === 19) chatId = undefined;
  }

  ai.state.reply = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
  ai.state.pieceDelayMs = 20;
  const stopToHangUp = [];
  for (let run = 0; run < Math.min(runs, 50); run += 1) {
    const hangUps = ai.state.hangUps;
    const delta = nextEvent(socket, 'chat:delta');
    const ack = await socket.timeout(10_000).emitWithAck('chat:send', { text: `Long question ${run}` });
    await delta;
    const done = nextEvent(socket, 'chat:done');
    const started = performance.now();
    await socket.timeout(10_000).emitWithAck('chat:stop', { chatId: ack.chatId });
    while (ai.state.hangUps === hangUps) await new Promise((resolve) => setTimeout(resolve, 1));
    stopToHangUp.push(performance.now() - started);
    await done;
  }
  socket.disconnect();

  console.log(`members' chat, ${runs} exchanges on one socket (AI mock answering at once)`);
  console.log(summary('send -> ack (message stored)', acked));
  console.log(summary('send -> first streamed piece', firstPiece));
  console.log(summary('send -> chat:done (reply stored)', stored));
  console.log(summary('chat:stop -> provider hung up', stopToHangUp));
} finally {
  await server.stop();
  await ai.close();
}
