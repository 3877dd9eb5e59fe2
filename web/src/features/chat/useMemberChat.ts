import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import { chatApi } from './api';
import { chatReducer, initialChatState, isBusy, serverEvent, type ChatAction } from './chat-state';
import { connectMember, refusalCode, type MemberSocket } from './member-socket';
import { record } from '../../lib/json';

/** How long a send, a task help or a stop waits for the server's ack. */
export const ACK_TIMEOUT_MS = 15_000;

export const SEND_TIMEOUT_TEXT = "We couldn't send your message. Please check your internet connection and try again.";
export const SEND_FAILED_TEXT = "Sorry, your message couldn't be sent. Please try again.";
export const OFFLINE_TEXT = 'The chat is not connected just now. Please try again in a moment.';
/** How long a request waits for a socket that is still connecting. */
const CONNECT_WAIT_MS = 5_000;

/** Resolves true once `socket` connects within `ms`; false at once if it is not even trying. */
function connectedSoon(socket: MemberSocket, ms: number): Promise<boolean> {
  if (socket.connected) return Promise.resolve(true);
  if (!socket.active) return Promise.resolve(false);
  return new Promise((resolve) => {
    const connected = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      socket.off('connect', connected);
      resolve(false);
    }, ms);
    socket.once('connect', connected);
  });
}
export const OPEN_FAILED_TEXT = 'We could not open this conversation. Please try again.';
export const CONNECTION_CLOSED_TEXT = 'The chat was disconnected.';

/**
 * `off`: no connection is wanted (a visitor, or no access); `reconnecting`: it was up and is lost,
 * socket.io-client is trying again; `closed`: the server refused or ended it, nothing retries.
 */
export type Connection = 'off' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

type Options = {
  /** Connect: a signed-in member with access (DESIGN 6 decides on the server; this only avoids a refusal). */
  enabled: boolean;
  /** The server says the member has no active trial or subscription. */
  onUpgradeRequired: () => void;
  /** Any of the member's chats got a finished reply: the history list has changed. */
  onReplyDone?: () => void;
};

function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** The socket a request emits on: its ack times out after ACK_TIMEOUT_MS. */
type TimedSocket = ReturnType<MemberSocket['timeout']>;

/** A send's or a task help's part in `request`; `id` names the request in the chat state. */
type RequestHandlers = {
  /** Marks the request pending (the socket is ready) and gives its emit. */
  start: (id: string) => (socket: TimedSocket) => Promise<unknown>;
  onTaken: (id: string, chatId: string, title: string | null) => void;
  onRefused: (id: string) => void;
  /** What a request for a chat the page has since left resolves to. */
  staleResult: boolean;
};

/** The member's chat on `/`: one `/member` socket, the open chat, and what may be asked of it. */
export function useMemberChat({ enabled, onUpgradeRequired, onReplyDone }: Options) {
  const [state, dispatch] = useReducer(chatReducer, undefined, () => initialChatState());
  const [connection, setConnection] = useState<Connection>('off');
  const [connectionError, setConnectionError] = useState<string | null>(null);
  /** Why the last request did not go through, shown by the input. */
  const [notice, setNotice] = useState<string | null>(null);

  const socketRef = useRef<MemberSocket | null>(null);
  // Callbacks read these without waiting for a render (a quick second Enter, say).
  const stateRef = useRef(state);
  stateRef.current = state;
  /**
   * The send or task help waiting for its ack; null once it is answered, or once the page has moved
   * to another chat (its ack then changes nothing, and the next question may go at once).
   */
  const requestInFlight = useRef<string | null>(null);
  /**
   * The chats whose reply the server is writing: the list in the last `chat:ready`, kept up to date
   * by the replies' events (for any chat of the member).
   */
  const writing = useRef(new Set<string>());
  const requestCount = useRef(0);
  const callbacks = useRef({ onUpgradeRequired, onReplyDone });
  callbacks.current = { onUpgradeRequired, onReplyDone };

  // The reducer runs here too, so the ref is current before React renders.
  const update = useCallback((action: ChatAction) => {
    stateRef.current = chatReducer(stateRef.current, action);
    dispatch(action);
  }, []);

  /**
   * After every `chat:ready`: a reply the page waits for that the server is no longer writing has
   * ended while the events could not arrive (stored, failed or stopped): show the store's copy of
   * the chat and stop waiting. A reply still being written goes on sending its events, and the
   * page shows it coming.
   */
  const catchUp = useCallback(async () => {
    const { chatId, reply, pending } = stateRef.current;
    // A request still waiting for its ack: the ack (or its time-out) settles it.
    if (chatId === null || pending !== null) return;
    if (writing.current.has(chatId)) {
      // A reply the page did not know of (its send's ack was lost with the connection, say).
      if (reply === null) update({ type: 'server', payload: { event: 'typing', chatId } });
      return;
    }
    if (reply === null) return;
    // A reply for the chat that begins meanwhile (another tab) brings its own events.
    const stillSettled = () => stateRef.current.chatId === chatId && !writing.current.has(chatId);
    try {
      const stored = await chatApi.get(chatId);
      if (stillSettled()) {
        update({ type: 'settled', chatId, title: stored?.title ?? null, messages: stored?.messages ?? null });
      }
    } catch {
      if (stillSettled()) update({ type: 'settled', chatId, title: null, messages: null });
    }
  }, [update]);

  useEffect(() => {
    if (!enabled) {
      setConnection('off');
      return undefined;
    }
    const socket = connectMember();
    socketRef.current = socket;
    let hasConnected = false;
    setConnection('connecting');
    setConnectionError(null);

    const server = (name: 'typing' | 'delta' | 'done' | 'error', payload: unknown) => {
      const event = serverEvent(name, payload);
      if (!event) return;
      if (name === 'typing' || name === 'delta') writing.current.add(event.chatId);
      else writing.current.delete(event.chatId);
      update({ type: 'server', payload: event });
    };

    socket.on('connect', () => {
      hasConnected = true;
      setConnection('connected');
      setConnectionError(null);
    });
    socket.on('disconnect', (reason) => {
      if (socket.active) setConnection(hasConnected ? 'reconnecting' : 'connecting');
      else if (reason !== 'io client disconnect') {
        setConnection('closed');
        setConnectionError(CONNECTION_CLOSED_TEXT);
      }
    });
    socket.on('connect_error', (error) => {
      if (refusalCode(error) === 'upgrade_required') {
        setConnection('closed');
        callbacks.current.onUpgradeRequired();
        return;
      }
      // socket.io-client retries a failed transport by itself, but not a refusal by the server.
      if (socket.active) {
        setConnection(hasConnected ? 'reconnecting' : 'connecting');
        return;
      }
      setConnection('closed');
      setConnectionError(error.message || CONNECTION_CLOSED_TEXT);
    });
    socket.on('chat:ready', (ready) => {
      const { greeting, writing: writingNow } = record(ready);
      writing.current = new Set(
        Array.isArray(writingNow) ? writingNow.filter((id): id is string => typeof id === 'string' && id !== '') : [],
      );
      update({ type: 'ready', greeting: optionalString(greeting) ?? '' });
      void catchUp();
    });
    socket.on('chat:typing', (typing) => server('typing', typing));
    socket.on('chat:delta', (delta) => server('delta', delta));
    socket.on('chat:error', (error) => server('error', error));
    socket.on('chat:done', (done) => {
      server('done', done);
      callbacks.current.onReplyDone?.();
    });

    return () => {
      socket.disconnect();
      if (socketRef.current === socket) socketRef.current = null;
    };
  }, [enabled, update, catchUp]);

  // A reply another tab asked for has finished here: the stored chat also has its question.
  useEffect(() => {
    if (!state.stale || state.chatId === null || state.reply !== null) return undefined;
    const chatId = state.chatId;
    const controller = new AbortController();
    chatApi
      .get(chatId, controller.signal)
      .then((stored) => {
        update({ type: 'refreshed', chatId, title: stored?.title ?? null, messages: stored?.messages ?? null });
      })
      .catch(() => {
        if (!controller.signal.aborted) update({ type: 'refreshed', chatId, title: null, messages: null });
      });
    return () => controller.abort();
  }, [state.stale, state.chatId, state.reply, update]);

  /** The server's refusal: the upgrade modal for lost access, else its text by the input. */
  const refused = useCallback((reply: Record<string, unknown>) => {
    if (reply.code === 'upgrade_required') {
      callbacks.current.onUpgradeRequired();
      return;
    }
    setNotice(optionalString(reply.error) ?? SEND_FAILED_TEXT);
  }, []);

  /**
   * A socket ready for a request, or null with the reason shown. A socket still connecting (the
   * page just opened, or a short drop) is waited for a few seconds rather than refused; nothing is
   * emitted before it connects, so socket.io's buffer never sends a message twice.
   */
  const readySocket = useCallback((): MemberSocket | null | Promise<MemberSocket | null> => {
    const socket = socketRef.current;
    // A connected socket is answered at once, so the request goes out in the same tick.
    if (socket?.connected) return socket;
    const refuse = () => {
      setNotice(OFFLINE_TEXT);
      return null;
    };
    if (!socket) return refuse();
    return connectedSoon(socket, CONNECT_WAIT_MS).then((connected) => (connected ? socket : refuse()));
  }, []);

  /**
   * One send or task help: at most one at a time, sent once the socket is ready, and settled by its
   * ack (taken or refused) or by the ack's time-out. `start` runs once the socket is ready: it marks
   * the request pending and gives what to emit. A request for a chat the page has left (New Chat,
   * or another chat opened) resolves `staleResult`: its answer changes nothing here.
   */
  const request = useCallback(
    async (prefix: string, { start, onTaken, onRefused, staleResult }: RequestHandlers): Promise<boolean> => {
      requestCount.current += 1;
      const id = `${prefix}-${requestCount.current}`;
      requestInFlight.current = id;
      const ready = readySocket();
      const socket = ready instanceof Promise ? await ready : ready;
      if (requestInFlight.current !== id) return false;
      if (!socket) {
        requestInFlight.current = null;
        return false;
      }
      setNotice(null);
      const emit = start(id);
      const current = () => stateRef.current.pending === id;
      try {
        const reply = record(await emit(socket.timeout(ACK_TIMEOUT_MS)));
        if (!current()) return staleResult;
        const chatId = optionalString(reply.chatId);
        if (reply.ok === true && chatId) {
          onTaken(id, chatId, optionalString(reply.title));
          return true;
        }
        onRefused(id);
        refused(reply);
        return false;
      } catch {
        if (!current()) return staleResult;
        onRefused(id);
        setNotice(SEND_TIMEOUT_TEXT);
        return false;
      } finally {
        if (requestInFlight.current === id) requestInFlight.current = null;
      }
    },
    [readySocket, refused],
  );

  /**
   * Resolves true once the server has stored the message; false when it did not, and the text
   * should go back into the field. A request for a chat the page has left (New Chat, or another
   * chat opened) resolves true: its answer changes nothing here.
   */
  const send = useCallback(
    (raw: string): Promise<boolean> => {
      const text = raw.trim();
      if (text === '' || requestInFlight.current !== null || isBusy(stateRef.current)) return Promise.resolve(false);
      return request('local', {
        start: (id) => {
          const { chatId } = stateRef.current;
          update({ type: 'sending', request: id, text });
          return (socket) => socket.emitWithAck('chat:send', chatId === null ? { text } : { chatId, text });
        },
        onTaken: (id, chatId, title) => update({ type: 'sent', request: id, chatId, title }),
        onRefused: (id) => update({ type: 'refused', request: id }),
        staleResult: true,
      });
    },
    [update, request],
  );

  /** AI help on a task: a new chat the server opens with the task's name and items. */
  const askTaskHelp = useCallback(
    (taskId: string): Promise<boolean> => {
      if (requestInFlight.current !== null || isBusy(stateRef.current)) {
        setNotice('Please wait for the reply before sending another message.');
        return Promise.resolve(false);
      }
      return request('task', {
        start: (id) => {
          update({ type: 'task-help', request: id });
          return (socket) => socket.emitWithAck('task:help', { taskId });
        },
        onTaken: (id, chatId, title) => update({ type: 'task-help-taken', request: id, chatId, title }),
        onRefused: (id) => update({ type: 'task-help-refused', request: id }),
        staleResult: false,
      });
    },
    [update, request],
  );

  /** Cuts the reply being written; the server sends what it kept in `chat:done`. */
  const stop = useCallback(() => {
    const { chatId, reply } = stateRef.current;
    const socket = socketRef.current;
    if (!socket || chatId === null || reply === null) return;
    socket
      .timeout(ACK_TIMEOUT_MS)
      .emitWithAck('chat:stop', { chatId })
      .catch(() => {
        // The reply then ends by itself; nothing else to do.
      });
  }, []);

  const newChat = useCallback(() => {
    setNotice(null);
    requestInFlight.current = null;
    update({ type: 'new-chat' });
  }, [update]);

  /**
   * Opens a stored chat; resolves false (with a notice) when it could not be loaded. A chat whose
   * reply the server is still writing shows it coming (its events follow).
   */
  const openChat = useCallback(
    async (chatId: string): Promise<boolean> => {
      const wasWriting = writing.current.has(chatId);
      try {
        const stored = await chatApi.get(chatId);
        if (!stored) throw new Error('no chat');
        setNotice(null);
        requestInFlight.current = null;
        const writingNow = writing.current.has(stored.id);
        update({
          type: 'loaded',
          chatId: stored.id,
          title: stored.title,
          messages: stored.messages,
          writing: writingNow,
        });
        // The reply ended while the chat was being read: the copy may be from before it was stored.
        if (wasWriting && !writingNow) {
          chatApi
            .get(stored.id)
            .then((again) => {
              if (again && !writing.current.has(stored.id)) {
                update({ type: 'settled', chatId: stored.id, title: again.title, messages: again.messages });
              }
            })
            .catch(() => {
              // The first copy stays.
            });
        }
        return true;
      } catch {
        setNotice(OPEN_FAILED_TEXT);
        return false;
      }
    },
    [update],
  );

  /** A chat was deleted: if it is the open one, a new chat takes its place. */
  const forgetChat = useCallback(
    (chatId: string) => {
      if (stateRef.current.chatId === chatId) requestInFlight.current = null;
      update({ type: 'forget', chatId });
    },
    [update],
  );

  /** After the server refused or ended the connection. */
  const reconnect = useCallback(() => {
    const socket = socketRef.current;
    if (!socket) return;
    setConnection('connecting');
    setConnectionError(null);
    socket.connect();
  }, []);

  return {
    state,
    busy: isBusy(state),
    connection,
    connectionError,
    notice,
    send,
    askTaskHelp,
    stop,
    newChat,
    openChat,
    forgetChat,
    reconnect,
  };
}

export type MemberChat = ReturnType<typeof useMemberChat>;
