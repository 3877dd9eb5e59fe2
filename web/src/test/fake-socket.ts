// A stand-in for socket.io-client's Socket in the funnel and members chat tests: records what the
// page emits and lets a test play the server. Tests install it with vi.mock('socket.io-client').

type Listener = (...args: unknown[]) => void;

export type SocketOptions = { path?: string; auth?: Record<string, string>; withCredentials?: boolean };

export type PendingAck = { event: string; payload: unknown; answer: (reply: unknown) => void };

export class FakeSocket {
  readonly namespace: string;
  readonly options: SocketOptions;
  /** As in socket.io-client: whether the socket will (re)connect by itself. */
  active = true;
  connected = false;
  recovered = false;
  connectCalls = 0;
  closedByClient = false;
  readonly acks: PendingAck[] = [];
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly onceOf = new Map<Listener, Listener>();
  private readonly sent: Array<{ event: string; payload: unknown }> = [];

  constructor(namespace: string, options: SocketOptions) {
    this.namespace = namespace;
    this.options = options;
  }

  on(event: string, listener: Listener) {
    const set = this.listeners.get(event) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(event, set);
    return this;
  }

  /** As socket.io-client's: also removes a `once` listener given the listener passed to `once`. */
  off(event: string, listener: Listener) {
    const set = this.listeners.get(event);
    for (const registered of Array.from(set ?? [])) {
      if (registered === listener || this.onceOf.get(registered) === listener) set?.delete(registered);
    }
    return this;
  }

  /** As socket.io-client's: the listener runs once; `off` with the same listener removes it. */
  once(event: string, listener: Listener) {
    const wrapped: Listener = (...args) => {
      this.off(event, wrapped);
      listener(...args);
    };
    this.onceOf.set(wrapped, listener);
    return this.on(event, wrapped);
  }

  /** Rejects as socket.io-client does when no ack comes within `ms`. */
  timeout(ms: number) {
    return { emitWithAck: (event: string, payload: unknown) => this.request(event, payload, ms) };
  }

  emitWithAck(event: string, payload: unknown) {
    return this.request(event, payload);
  }

  connect() {
    this.active = true;
    this.connectCalls += 1;
    return this;
  }

  disconnect() {
    this.active = false;
    this.connected = false;
    this.closedByClient = true;
    return this;
  }

  /** Plays the server accepting the connection; wrap in act(). */
  serverConnect({ recovered = false } = {}) {
    this.connected = true;
    this.recovered = recovered;
    this.serverEmit('connect');
  }

  /** Plays the connection dropping while socket.io-client tries again; wrap in act(). */
  serverDrop() {
    this.connected = false;
    this.serverEmit('disconnect', 'transport close');
  }

  /** Plays the server refusing the connection (socket.io-client then stops trying); wrap in act(). */
  serverRefuse(message: string, data: unknown) {
    this.active = false;
    const error = Object.assign(new Error(message), { data });
    this.serverEmit('connect_error', error);
  }

  /** Plays the server sending `event`; wrap in act(). */
  serverEmit(event: string, ...args: unknown[]) {
    // A copy: a listener may add or remove listeners while they run.
    for (const listener of Array.from(this.listeners.get(event) ?? [])) listener(...args);
  }

  /** The oldest unanswered emit of `event`. */
  takeAck(event: string): PendingAck {
    const index = this.acks.findIndex((ack) => ack.event === event);
    if (index === -1) throw new Error(`no pending '${event}' emit`);
    return this.acks.splice(index, 1)[0];
  }

  emitted(event: string): unknown[] {
    return this.sent.filter((entry) => entry.event === event).map((entry) => entry.payload);
  }

  private request(event: string, payload: unknown, ms?: number): Promise<unknown> {
    this.sent.push({ event, payload });
    return new Promise((resolve, reject) => {
      const timer = ms === undefined ? undefined : setTimeout(() => reject(new Error('operation has timed out')), ms);
      this.acks.push({
        event,
        payload,
        answer: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
      });
    });
  }
}
