// The chat history's HTTP calls (docs/operations.md): chats are written by the real-time channel,
// listed, opened and deleted here.
import { api, apiRequest } from '../../lib/api';
import type { ChatMessage } from './chat-state';
import { record } from '../../lib/json';

export type ChatSummary = { id: string; title: string; listTitle: string; preview: string; timestamp: string };

export type StoredChat = { id: string; title: string | null; messages: ChatMessage[] };

function string(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function parseChatList(value: unknown): ChatSummary[] {
  const chats = record(value).chats;
  if (!Array.isArray(chats)) return [];
  return chats.flatMap((entry: unknown) => {
    const raw = record(entry);
    const id = string(raw.id);
    if (id === '') return [];
    const title = string(raw.title);
    return [
      {
        id,
        title,
        listTitle: string(raw.listTitle) || title || 'New Conversation',
        preview: string(raw.preview),
        timestamp: string(raw.timestamp),
      },
    ];
  });
}

export function parseStoredChat(value: unknown): StoredChat | null {
  const raw = record(record(value).chat);
  const id = string(raw.id);
  if (id === '') return null;
  const messages = Array.isArray(raw.messages) ? raw.messages : [];
  return {
    id,
    title: string(raw.title) || null,
    messages: messages.flatMap((entry: unknown, index: number) => {
      const message = record(entry);
      if (typeof message.content !== 'string') return [];
      return [
        {
          id: string(message.id) || `stored-${index}`,
          role: message.role === 'user' ? ('user' as const) : ('assistant' as const),
          text: message.content,
        },
      ];
    }),
  };
}

export const chatApi = {
  list: (signal?: AbortSignal) => api.get<unknown>('/api/chats', signal).then(parseChatList),
  get: (id: string, signal?: AbortSignal) =>
    api.get<unknown>(`/api/chats/${encodeURIComponent(id)}`, signal).then(parseStoredChat),
  remove: (id: string) => apiRequest<null>(`/api/chats/${encodeURIComponent(id)}`, { method: 'DELETE' }),
};
