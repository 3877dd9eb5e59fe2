// What the chat funnel page shows, as a reducer over the server's events. The server holds the
// conversation; every `conversation` event replaces the local copy.
import { record } from '../../lib/json';

export type ChatMessage = {
  role: 'assistant' | 'user';
  text: string;
  isFinal: boolean;
  showSubscribeButton: boolean;
};

/** `closed`: the server refused or ended the connection, and socket.io-client will not retry. */
export type ConnectionStatus = 'connecting' | 'connected' | 'reconnecting' | 'closed';

export type ChatState = {
  /** The server's headline; null until the first conversation arrives. */
  headline: string | null;
  messages: ChatMessage[];
  final: boolean;
  typing: boolean;
  /** The visitor's last message waits for the assistant's answer. */
  awaitingReply: boolean;
  notice: string | null;
  connection: ConnectionStatus;
  /** Tells a lost connection from a first one that has not come up yet. */
  hasConnected: boolean;
  closedReason: string | null;
};

export type ChatAction =
  | { type: 'conversation'; conversation: unknown }
  | { type: 'typing'; active: boolean }
  | { type: 'message'; message: unknown }
  | { type: 'sent'; text: string }
  | { type: 'notice'; text: string }
  | { type: 'connected' }
  | { type: 'reconnecting' }
  | { type: 'closed'; reason: string };

export const INITIAL_CHAT_STATE: ChatState = {
  headline: null,
  messages: [],
  final: false,
  typing: false,
  awaitingReply: false,
  notice: null,
  connection: 'connecting',
  hasConnected: false,
  closedReason: null,
};

function toMessage(value: unknown): ChatMessage | null {
  const raw = record(value);
  if (typeof raw.text !== 'string') return null;
  return {
    role: raw.role === 'user' ? 'user' : 'assistant',
    text: raw.text,
    isFinal: raw.isFinal === true,
    showSubscribeButton: raw.showSubscribeButton === true,
  };
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case 'conversation': {
      const raw = record(action.conversation);
      const messages = Array.isArray(raw.messages)
        ? raw.messages.map(toMessage).filter((message): message is ChatMessage => message !== null)
        : [];
      const typing = raw.typing === true;
      return {
        ...state,
        headline: typeof raw.headline === 'string' && raw.headline.trim() !== '' ? raw.headline : state.headline,
        messages,
        final: raw.final === true || messages.some((message) => message.isFinal),
        typing,
        awaitingReply: typing,
        notice: null,
        connection: 'connected',
        hasConnected: true,
        closedReason: null,
      };
    }
    case 'typing':
      return { ...state, typing: action.active, awaitingReply: action.active || state.awaitingReply };
    case 'message': {
      const message = toMessage(action.message);
      if (!message) return state;
      const messages = [...state.messages, message];
      const final = state.final || message.isFinal;
      // A visitor's message arrives here only when another tab sent it; its answer is on the way.
      if (message.role === 'user') return { ...state, messages, final, awaitingReply: true };
      return { ...state, messages, final, typing: false, awaitingReply: false, notice: null };
    }
    case 'sent':
      return {
        ...state,
        messages: [...state.messages, { role: 'user', text: action.text, isFinal: false, showSubscribeButton: false }],
        awaitingReply: true,
        notice: null,
      };
    case 'notice':
      // The service had trouble: no answer is coming for now, so the visitor may write again.
      return { ...state, notice: action.text, typing: false, awaitingReply: false };
    case 'connected':
      return { ...state, connection: 'connected', hasConnected: true, closedReason: null };
    case 'reconnecting':
      return { ...state, connection: 'reconnecting' };
    case 'closed':
      return { ...state, connection: 'closed', closedReason: action.reason, typing: false };
  }
}
