// What the members page's chat shows, as a reducer over the page's requests and the `/member`
// namespace's events. The server stores chats and writes replies; the page follows one chat (the
// one it has open) and ignores events for the member's other chats (another tab's, say).
import { record } from '../../lib/json';

export const DEFAULT_GREETING = 'Hello! How can I help you today?';

/** Shown when a task help reply comes back empty (spec section 8). */
export const TASK_HELP_FALLBACK =
  "I'd be happy to help with your task! Could you provide a bit more detail about what you're working on?";

export type ChatMessage = {
  /** The server's message id, or a local one for the greeting and for messages not yet stored. */
  id: string;
  role: 'user' | 'assistant';
  text: string;
  /** `streaming`: pieces are still arriving; `error`: a failure notice, not a stored reply. */
  status?: 'streaming' | 'error';
};

export type Reply = {
  /** `waiting`: asked, nothing from the server yet; `typing`: started; `streaming`: pieces arrive. */
  phase: 'waiting' | 'typing' | 'streaming';
  kind: 'chat' | 'task';
  /** `remote`: another tab or device of the member asked; this page never saw the question. */
  origin: 'local' | 'remote';
};

type ServerEvent =
  | { event: 'typing'; chatId: string }
  | { event: 'delta'; chatId: string; messageId: string; text: string }
  | { event: 'done'; chatId: string; messageId: string; text: string; title: string | null; stopped: boolean }
  | { event: 'error'; chatId: string; text: string };

type Snapshot = { chatId: string | null; title: string | null; messages: ChatMessage[] };

export type ChatState = {
  greeting: string;
  /** The open chat; null for a new chat not yet stored. */
  chatId: string | null;
  title: string | null;
  messages: ChatMessage[];
  reply: Reply | null;
  /** The request (a send or task help) waiting for its ack; a later ack for another is stale. */
  pending: string | null;
  /** Events for a chat the server is creating for `pending`: held until its ack names the chat. */
  held: ServerEvent[];
  /** The chat before task help replaced it, restored if the server refuses the task help. */
  beforeTaskHelp: Snapshot | null;
  /** A reply another tab asked for has finished: the page reloads the chat to show the question. */
  stale: boolean;
};

export type ChatAction =
  | { type: 'ready'; greeting: string }
  | { type: 'new-chat' }
  | { type: 'sending'; request: string; text: string }
  | { type: 'sent'; request: string; chatId: string; title: string | null }
  | { type: 'refused'; request: string }
  | { type: 'task-help'; request: string }
  | { type: 'task-help-taken'; request: string; chatId: string; title: string | null }
  | { type: 'task-help-refused'; request: string }
  | { type: 'server'; payload: ServerEvent }
  /** `writing`: the server is still writing a reply in this chat (another tab asked, say). */
  | { type: 'loaded'; chatId: string; title: string | null; messages: ChatMessage[]; writing?: boolean }
  /** The store's copy of the open chat, after a reply this page did not see whole; null: none. */
  | { type: 'refreshed'; chatId: string; title: string | null; messages: ChatMessage[] | null }
  /**
   * The server no longer writes a reply the page was waiting for in this chat (it said so after a
   * reconnect): the store's copy of the chat (null: it could not be read), and no more waiting.
   */
  | { type: 'settled'; chatId: string; title: string | null; messages: ChatMessage[] | null }
  | { type: 'forget'; chatId: string };

function greetingMessage(greeting: string): ChatMessage {
  return { id: 'greeting', role: 'assistant', text: greeting };
}

export function initialChatState(greeting: string = DEFAULT_GREETING): ChatState {
  return {
    greeting,
    chatId: null,
    title: null,
    messages: [greetingMessage(greeting)],
    reply: null,
    pending: null,
    held: [],
    beforeTaskHelp: null,
    stale: false,
  };
}

/** Only the greeting so far: a new greeting from the server may replace it. */
function untouched(state: ChatState): boolean {
  return (
    state.chatId === null &&
    state.pending === null &&
    state.reply === null &&
    state.messages.length === 1 &&
    state.messages[0].id === 'greeting'
  );
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The server's event as the reducer takes it; null for one without a chat id. */
export function serverEvent(name: ServerEvent['event'], payload: unknown): ServerEvent | null {
  const raw = record(payload);
  const chatId = raw.chatId;
  if (typeof chatId !== 'string' || chatId === '') return null;
  switch (name) {
    case 'typing':
      return { event: 'typing', chatId };
    case 'delta':
      return { event: 'delta', chatId, messageId: text(raw.messageId), text: text(raw.text) };
    case 'done':
      return {
        event: 'done',
        chatId,
        messageId: text(raw.messageId),
        text: text(raw.text),
        title: typeof raw.title === 'string' && raw.title !== '' ? raw.title : null,
        stopped: raw.stopped === true,
      };
    case 'error':
      return { event: 'error', chatId, text: text(raw.text) };
  }
}

function startedReply(state: ChatState): Reply {
  return state.reply ?? { phase: 'typing', kind: 'chat', origin: 'remote' };
}

/** The assistant message with this id, the one still streaming, or -1. */
function replyIndex(messages: ChatMessage[], messageId: string): number {
  const byId = messages.findIndex((message) => message.role === 'assistant' && message.id === messageId);
  if (byId !== -1 || messageId !== '') return byId;
  return messages.findIndex((message) => message.status === 'streaming');
}

function withReplyText(
  messages: ChatMessage[],
  messageId: string,
  next: (current: string) => string,
  status?: ChatMessage['status'],
): ChatMessage[] {
  const index = replyIndex(messages, messageId);
  if (index === -1) {
    return [...messages, { id: messageId || 'reply', role: 'assistant', text: next(''), status }];
  }
  const updated = [...messages];
  updated[index] = { ...updated[index], text: next(updated[index].text), status };
  return updated;
}

function withoutStreaming(messages: ChatMessage[]): ChatMessage[] {
  return messages.filter((message) => message.status !== 'streaming');
}

function applyServerEvent(state: ChatState, payload: ServerEvent): ChatState {
  switch (payload.event) {
    case 'typing': {
      const reply = startedReply(state);
      return { ...state, reply: { ...reply, phase: reply.phase === 'streaming' ? 'streaming' : 'typing' } };
    }
    case 'delta':
      return {
        ...state,
        reply: { ...startedReply(state), phase: 'streaming' },
        messages: withReplyText(state.messages, payload.messageId, (current) => current + payload.text, 'streaming'),
      };
    case 'done': {
      const reply = state.reply;
      // The server sends the fallback itself for an empty task reply; this is only a safety net.
      // A reply the member stopped keeps what it had, even nothing.
      const fullText =
        payload.text.trim() === '' && reply?.kind === 'task' && !payload.stopped ? TASK_HELP_FALLBACK : payload.text;
      // A reply stopped before its first word leaves nothing worth a bubble.
      const messages =
        fullText.trim() === ''
          ? withoutStreaming(state.messages)
          : withReplyText(state.messages, payload.messageId, () => fullText);
      return {
        ...state,
        messages,
        reply: null,
        title: payload.title ?? state.title,
        stale: state.stale || reply === null || reply.origin === 'remote',
      };
    }
    case 'error':
      return {
        ...state,
        reply: null,
        messages: [
          ...withoutStreaming(state.messages),
          { id: `error-${state.messages.length}`, role: 'assistant', text: payload.text, status: 'error' },
        ],
      };
  }
}

/** Takes the ack's chat id, and plays the events that came for it before the ack did. */
function adoptChat(state: ChatState, chatId: string, title: string | null): ChatState {
  let next: ChatState = {
    ...state,
    chatId,
    title: title ?? state.title,
    pending: null,
    held: [],
    beforeTaskHelp: null,
  };
  for (const event of state.held) {
    if (event.chatId === chatId) next = applyServerEvent(next, event);
  }
  return next;
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case 'ready':
      if (action.greeting === '') return state;
      return untouched(state) ? initialChatState(action.greeting) : { ...state, greeting: action.greeting };
    case 'new-chat':
      return initialChatState(state.greeting);
    case 'sending':
      return {
        ...state,
        pending: action.request,
        held: [],
        reply: { phase: 'waiting', kind: 'chat', origin: 'local' },
        messages: [...state.messages, { id: action.request, role: 'user', text: action.text }],
      };
    case 'sent':
      if (state.pending !== action.request) return state;
      return adoptChat(state, action.chatId, action.title);
    case 'refused':
      if (state.pending !== action.request) return state;
      return {
        ...state,
        pending: null,
        held: [],
        reply: null,
        messages: state.messages.filter((message) => message.id !== action.request),
      };
    case 'task-help':
      return {
        ...state,
        chatId: null,
        title: null,
        messages: [],
        pending: action.request,
        held: [],
        reply: { phase: 'waiting', kind: 'task', origin: 'local' },
        beforeTaskHelp: state.beforeTaskHelp ?? { chatId: state.chatId, title: state.title, messages: state.messages },
        stale: false,
      };
    case 'task-help-taken':
      if (state.pending !== action.request) return state;
      return adoptChat(state, action.chatId, action.title);
    case 'task-help-refused': {
      if (state.pending !== action.request) return state;
      const before = state.beforeTaskHelp ?? {
        chatId: null,
        title: null,
        messages: [greetingMessage(state.greeting)],
      };
      return { ...state, ...before, pending: null, held: [], reply: null, beforeTaskHelp: null };
    }
    case 'server': {
      const { payload } = action;
      if (state.chatId !== null && payload.chatId === state.chatId) return applyServerEvent(state, payload);
      // The chat the pending request creates has no id here yet: keep its events for the ack.
      if (state.chatId === null && state.pending !== null) return { ...state, held: [...state.held, payload] };
      return state;
    }
    case 'loaded':
      return {
        ...initialChatState(state.greeting),
        chatId: action.chatId,
        title: action.title,
        messages: action.messages,
        reply: action.writing ? { phase: 'typing', kind: 'chat', origin: 'remote' } : null,
      };
    case 'refreshed':
      if (state.chatId !== action.chatId) return state;
      if (action.messages === null) return { ...state, stale: false };
      return { ...state, title: action.title ?? state.title, messages: action.messages, reply: null, stale: false };
    case 'settled':
      if (state.chatId !== action.chatId || state.pending !== null) return state;
      return {
        ...state,
        title: action.title ?? state.title,
        messages:
          action.messages ??
          state.messages.map((message) => (message.status === 'streaming' ? { ...message, status: undefined } : message)),
        reply: null,
        stale: false,
      };
    case 'forget':
      return state.chatId === action.chatId ? initialChatState(state.greeting) : state;
  }
}

/** A reply is owed, or a request waits for its ack: no other message may go out. */
export function isBusy(state: ChatState): boolean {
  return state.reply !== null || state.pending !== null;
}

/** Task help before its first word: the chat shows 'Reviewing task, just a moment...'. */
export function isReviewingTask(state: ChatState): boolean {
  return state.reply?.kind === 'task' && state.messages.length === 0;
}

/** The typing dots: a reply has been asked for or started, and no words of it are shown yet. */
export function showsTyping(state: ChatState): boolean {
  return state.reply !== null && state.reply.phase !== 'streaming' && !isReviewingTask(state);
}
