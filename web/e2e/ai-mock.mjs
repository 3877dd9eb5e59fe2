// A local stand-in for an OpenAI-compatible chat-completion API, in its real wire format: a
// streamed answer is server-sent events (`data: {chunk}` with `choices[0].delta.content`, then a
// finish reason and `data: [DONE]`); a plain one is a `chat.completion`. The product reaches it
// through `ai.provider = "openai"` and `ai.base_url`. It records each request and notices when
// the product hangs up on a streamed answer before its end (what the Stop button does).
import { createServer } from 'node:http';

let nextId = 1;

export async function startAiMock() {
  const state = {
    reply: 'I can help with that. 1. Restart the device. 2. Try again.',
    pieceDelayMs: 0,
    // How long the first word waits after the role chunk: what a provider's thinking time looks like.
    firstPieceDelayMs: 0,
    requests: [],
    hangUps: 0,
    completed: 0,
  };

  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }));
        return;
      }
      const request = JSON.parse(body);
      state.requests.push(request);
      const id = `chatcmpl-mock${String(nextId++).padStart(8, '0')}`;
      const created = Math.floor(Date.now() / 1000);
      const text = typeof state.reply === 'function' ? state.reply(request) : state.reply;
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: request.model,
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          }),
        );
        state.completed += 1;
        return;
      }
      const chunk = (delta, finishReason = null) =>
        `data: ${JSON.stringify({
          id,
          object: 'chat.completion.chunk',
          created,
          model: request.model,
          choices: [{ index: 0, delta, finish_reason: finishReason }],
        })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const events = [chunk({ role: 'assistant', content: '' })];
      // Word by word, each with the space after it, so the pieces join back into the reply.
      for (const piece of text.match(/\S+\s*/g) ?? []) events.push(chunk({ content: piece }));
      events.push(chunk({}, 'stop'), 'data: [DONE]\n\n');
      let finished = false;
      res.on('close', () => {
        if (!finished) state.hangUps += 1;
      });
      const send = (index) => {
        if (res.destroyed) return;
        if (index === events.length) {
          finished = true;
          state.completed += 1;
          res.end();
          return;
        }
        res.write(events[index]);
        setTimeout(() => send(index + 1), index === 0 ? state.firstPieceDelayMs : state.pieceDelayMs);
      };
      send(0);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();

  return {
    state,
    /** The settings that point the product at this mock. */
    env: {
      APP__AI__PROVIDER: 'openai',
      APP__AI__BASE_URL: `http://127.0.0.1:${port}/v1`,
      APP__AI__API_KEY: 'sk-mock-key',
    },
    /** The user messages of every request so far. */
    userMessages() {
      return state.requests.flatMap((r) => r.messages.filter((m) => m.role === 'user').map((m) => m.content));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
