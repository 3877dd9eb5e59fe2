import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import { chatApi } from './api';
import { chatReducer, initialChatState, isBusy, serverEvent, type ChatAction } from './chat-state';
import { connectMember, refusalCode, type MemberSocket } from './member-socket';

/** How long a send, a task help or a stop waits for the server's ack. */
export const ACK_TIMEOUT_MS = 15_000;

export const SEND_TIMEOUT_TEXT = "We couldn't send your message. Please check your internet connection and try again.";
export const SEND_FAILED_TEXT = "Sorry, your message couldn't be sent. Please try again.";
export const OFFLINE_TEXT = 'The chat is not connected just now. Please try again in a moment.';
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

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

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
  const requestInFlight = useRef(false);
  const requestCount = useRef(0);
  const callbacks = useRef({ onUpgradeRequired, onReplyDone });
  callbacks.current = { onUpgradeRequired, onReplyDone };

  // The reducer runs here too, so the ref is current before React renders.
  const update = useCallback((action: ChatAction) => {
    stateRef.current = chatReducer(stateRef.current, action);
    dispatch(action);
  }, []);

  /** After a new connection (not a recovered one) the events of a reply may be lost: ask the store. */
  const catchUp = useCallback(async () => {
    const { chatId, reply } = stateRef.current;
    if (chatId === null || reply === null) return;
    try {
      const stored = await chatApi.get(chatId);
      const last = stored?.messages[stored.messages.length - 1];
      if (stored && last?.role === 'assistant') {
        update({ type: 'refreshed', chatId, title: stored.title, messages: stored.messages });
      }
    } catch {
      // The reply may still come over the socket.
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
      if (event) update({ type: 'server', payload: event });
    };

    socket.on('connect', () => {
      const wasConnected = hasConnected;
      hasConnected = true;
      setConnection('connected');
      setConnectionError(null);
      if (wasConnected && !socket.recovered) void catchUp();
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
      update({ type: 'ready', greeting: optionalString(record(ready).greeting) ?? '' });
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

  /** A socket ready for a request, or null with the reason shown. */
  const readySocket = useCallback((): MemberSocket | null => {
    const socket = socketRef.current;
    if (!socket || !socket.connected) {
      setNotice(OFFLINE_TEXT);
      return null;
    }
    return socket;
  }, []);

  /** Resolves true once the server has stored the message. */
  const send = useCallback(
    async (raw: string): Promise<boolean> => {
      const text = raw.trim();
      if (text === '' || requestInFlight.current || isBusy(stateRef.current)) return false;
      const socket = readySocket();
      if (!socket) return false;

      const { chatId } = stateRef.current;
      requestCount.current += 1;
      const request = `local-${requestCount.current}`;
      requestInFlight.current = true;
      setNotice(null);
      update({ type: 'sending', request, text });
      try {
        const reply = record(
          await socket.timeout(ACK_TIMEOUT_MS).emitWithAck('chat:send', chatId === null ? { text } : { chatId, text }),
        );
        const newChatId = optionalString(reply.chatId);
        if (reply.ok === true && newChatId) {
          update({ type: 'sent', request, chatId: newChatId, title: optionalString(reply.title) });
          return true;
        }
        update({ type: 'refused', request });
        refused(reply);
        return false;
      } catch {
        update({ type: 'refused', request });
        setNotice(SEND_TIMEOUT_TEXT);
        return false;
      } finally {
        requestInFlight.current = false;
      }
    },
    [update, readySocket, refused],
  );

  /** AI help on a task: a new chat the server opens with the task's name and items. */
  const askTaskHelp = useCallback(
    async (taskId: string): Promise<boolean> => {
      if (requestInFlight.current || isBusy(stateRef.current)) {
        setNotice('Please wait for the reply before sending another message.');
        return false;
      }
      const socket = readySocket();
      if (!socket) return false;

      requestCount.current += 1;
      const request = `task-${requestCount.current}`;
      requestInFlight.current = true;
      setNotice(null);
      update({ type: 'task-help', request });
      try {
        const reply = record(await socket.timeout(ACK_TIMEOUT_MS).emitWithAck('task:help', { taskId }));
        const chatId = optionalString(reply.chatId);
        if (reply.ok === true && chatId) {
          update({ type: 'task-help-taken', request, chatId, title: optionalString(reply.title) });
          return true;
        }
        update({ type: 'task-help-refused', request });
        refused(reply);
        return false;
      } catch {
        update({ type: 'task-help-refused', request });
        setNotice(SEND_TIMEOUT_TEXT);
        return false;
      } finally {
        requestInFlight.current = false;
      }
    },
    [update, readySocket, refused],
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
    update({ type: 'new-chat' });
  }, [update]);

  /** Opens a stored chat; resolves false (with a notice) when it could not be loaded. */
  const openChat = useCallback(
    async (chatId: string): Promise<boolean> => {
      try {
        const stored = await chatApi.get(chatId);
        if (!stored) throw new Error('no chat');
        setNotice(null);
        update({ type: 'loaded', chatId: stored.id, title: stored.title, messages: stored.messages });
        return true;
      } catch {
        setNotice(OPEN_FAILED_TEXT);
        return false;
      }
    },
    [update],
  );

  /** A chat was deleted: if it is the open one, a new chat takes its place. */
  const forgetChat = useCallback((chatId: string) => update({ type: 'forget', chatId }), [update]);

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
