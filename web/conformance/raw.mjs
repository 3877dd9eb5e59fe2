// Raw Engine.IO v4 clients (HTTP long-polling through fetch, WebSocket through `ws`) for the
// protocol suite: no socket.io-client in between, so the tests see the exact packet strings.
import WebSocket from 'ws';
import { within } from './harness.mjs';

/** The record separator between the packets of an EIO=4 polling payload. */
export const SEPARATOR = '\x1e';

/** `${base}/socket.io/?EIO=4&transport=polling` plus extra query parameters (`null` drops one). */
export function engineUrl(base, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries({ EIO: '4', transport: 'polling', ...params })) {
    if (value !== null && value !== undefined) query.set(key, value);
  }
  return `${base}/socket.io/?${query}`;
}

/** Parses an Engine.IO open packet (`0{...}`). */
export function parseOpen(packet) {
  if (typeof packet !== 'string' || !packet.startsWith('0')) throw new Error(`not an open packet: ${packet}`);
  return JSON.parse(packet.slice(1));
}

/** A long-polling session: handshake, then GET (poll) and POST (send) with its sid. */
export class PollingSession {
  constructor(baseUrl, headers = {}) {
    this.baseUrl = baseUrl;
    this.headers = headers;
  }

  /** Performs the handshake and returns the open packet's JSON. */
  async open() {
    const response = await fetch(engineUrl(this.baseUrl), { headers: this.headers });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`handshake answered ${response.status}: ${body}`);
    this.handshake = parseOpen(body);
    this.sid = this.handshake.sid;
    return this.handshake;
  }

  get url() {
    return engineUrl(this.baseUrl, { sid: this.sid });
  }

  /** One GET: `{ status, packets }` (the body split on the record separator). */
  async poll(timeoutMs = 5_000) {
    const response = await within(fetch(this.url, { headers: this.headers }), timeoutMs, 'a polling GET');
    const body = await response.text();
    return { status: response.status, contentType: response.headers.get('content-type'), body, packets: body.split(SEPARATOR) };
  }

  /** One POST of the given packets, joined by the record separator: `{ status, body }`. */
  async send(...packets) {
    const response = await fetch(this.url, { method: 'POST', headers: this.headers, body: packets.join(SEPARATOR) });
    return { status: response.status, body: await response.text() };
  }

  /** Polls until `count` packets arrived (they may be spread over several GETs), pings excluded. */
  async receive(count, timeoutMs = 5_000) {
    const packets = [];
    const deadline = Date.now() + timeoutMs;
    while (packets.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out with ${packets.length}/${count} packets: ${JSON.stringify(packets)}`);
      const { status, packets: got } = await this.poll(left);
      if (status !== 200) throw new Error(`poll answered ${status} with ${packets.length}/${count} packets`);
      packets.push(...got.filter((packet) => packet !== '2'));
    }
    return packets;
  }
}

/**
 * A raw WebSocket whose frames are queued: `next()` takes the next one (text as a string, binary as a
 * Buffer), `closed` resolves with `{ code, reason }` once the connection is gone (also when the
 * handshake was refused: then `refusal` holds the error, e.g. "Unexpected server response: 400").
 */
export class RawSocket {
  constructor(url, { headers = {}, skipPings = true } = {}) {
    this.skipPings = skipPings;
    this.frames = [];
    this.waiters = [];
    this.refusal = null;
    this.ws = new WebSocket(url, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', resolve);
      this.ws.once('close', () => reject(new Error(`closed before opening (${this.refusal?.message ?? 'no error'})`)));
    });
    this.opened.catch(() => {}); // Tests that expect a refusal never await `opened`.
    this.closed = new Promise((resolve) => {
      this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    this.ws.on('error', (error) => {
      this.refusal ??= error;
    });
    this.ws.on('message', (data, isBinary) => {
      const frame = isBinary ? Buffer.from(data) : data.toString();
      if (this.skipPings && frame === '2') return;
      const waiter = this.waiters.shift();
      if (waiter) waiter(frame);
      else this.frames.push(frame);
    });
  }

  /** Opens a websocket-only session and consumes its open packet. */
  static async connect(wsBase, options) {
    const socket = new RawSocket(engineUrl(wsBase, { transport: 'websocket' }), options);
    socket.handshake = parseOpen(await socket.next());
    return socket;
  }

  /** Opens a session and connects to a namespace: consumes the open, CONNECT and `auth` packets. */
  static async connectNamespace(wsBase, connectPacket = '40') {
    const socket = await RawSocket.connect(wsBase);
    socket.send(connectPacket);
    socket.connectReply = await socket.next();
    socket.authPacket = await socket.next();
    return socket;
  }

  next(timeoutMs = 5_000) {
    if (this.frames.length > 0) return Promise.resolve(this.frames.shift());
    let waiter;
    const frame = new Promise((resolve) => {
      waiter = resolve;
      this.waiters.push(resolve);
    });
    const ended = this.closed.then(({ code }) => {
      throw new Error(`connection closed (${code}) while waiting for a frame`);
    });
    return within(Promise.race([frame, ended]), timeoutMs, 'a WebSocket frame').finally(() => {
      this.waiters = this.waiters.filter((w) => w !== waiter);
    });
  }

  async nextFrames(count, timeoutMs = 5_000) {
    const frames = [];
    for (let i = 0; i < count; i++) frames.push(await this.next(timeoutMs));
    return frames;
  }

  send(data) {
    this.ws.send(data);
  }

  /** Resolves with `{ code, reason }` once closed, or rejects after `timeoutMs`. */
  waitClosed(timeoutMs = 5_000) {
    return within(this.closed, timeoutMs, 'the WebSocket to close');
  }

  get isOpen() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  close() {
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.OPEN) this.ws.terminate();
  }
}
