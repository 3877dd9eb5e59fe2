// The `/member` namespace's events (DESIGN.md section 3, docs/protocol.md), typed. The session
// cookie signs the connection in, so the handshake carries nothing.
import type { Socket } from 'socket.io-client';
import { record } from '../../lib/json';
import { connectNamespace } from '../../lib/socket';

export type RefusalCode = 'empty' | 'too_long' | 'busy' | 'not_found' | 'upgrade_required' | 'unavailable';

export type Refusal = { ok: false; code: RefusalCode | string; error: string };

export type SendAck = { ok: true; chatId: string; messageId: string; title: string } | Refusal;
export type TaskHelpAck = { ok: true; chatId: string; title: string } | Refusal;
export type StopAck = { ok: boolean };

/** `writing`: the chats whose reply is still being written when this socket joined (older servers: none). */
export type ReadyEvent = { greeting: string; writing?: string[] };
export type TypingEvent = { chatId: string; messageId?: string };
export type DeltaEvent = { chatId: string; messageId: string; text: string };
export type DoneEvent = { chatId: string; messageId: string; text: string; title?: string; stopped?: boolean };
export type ErrorEvent = { chatId: string; text: string };

export type MemberServerEvents = {
  'chat:ready': (ready: ReadyEvent) => void;
  'chat:typing': (typing: TypingEvent) => void;
  'chat:delta': (delta: DeltaEvent) => void;
  'chat:done': (done: DoneEvent) => void;
  'chat:error': (error: ErrorEvent) => void;
};

export type MemberClientEvents = {
  'chat:send': (message: { chatId?: string; text: string }, ack: (reply: SendAck) => void) => void;
  'chat:stop': (request: { chatId: string }, ack: (reply: StopAck) => void) => void;
  'task:help': (request: { taskId: string }, ack: (reply: TaskHelpAck) => void) => void;
};

export type MemberSocket = Socket<MemberServerEvents, MemberClientEvents>;

/** `connect_error` data codes of `/member`. */
export type ConnectRefusal = 'sign_in_required' | 'upgrade_required' | 'unavailable' | 'rate_limited';

export function connectMember(): MemberSocket {
  return connectNamespace<MemberServerEvents, MemberClientEvents>('/member', {});
}

/** The code in a `connect_error`'s data, if the server gave one. */
export function refusalCode(error: unknown): string | null {
  const code = record(record(error).data).code;
  return typeof code === 'string' ? code : null;
}
