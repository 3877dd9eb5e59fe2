// The `/funnel` namespace's events (DESIGN.md section 3, docs/protocol.md), typed.
import type { Socket } from 'socket.io-client';
import { connectNamespace } from '../../lib/socket';
import type { CampaignParams } from '../../lib/campaign-params';
import type { ChatFunnelKind } from './headline';

export type WireMessage = {
  role: 'assistant' | 'user';
  text: string;
  isFinal: boolean;
  showSubscribeButton: boolean;
};

export type WireConversation = {
  id: string;
  funnel: ChatFunnelKind;
  headline: string;
  stage: number;
  final: boolean;
  typing?: boolean;
  messages: WireMessage[];
};

export type SendRefusal = 'empty' | 'final' | 'busy' | 'too_long' | 'unavailable';

export type SendAck = { ok: true } | { ok: false; code: SendRefusal; error: string };

export type CheckoutAck = { url: string } | { error: string };

export type FunnelServerEvents = {
  /** The whole conversation, on every connect and reconnect: it replaces what the page holds. */
  conversation: (conversation: WireConversation) => void;
  typing: (typing: { active: boolean }) => void;
  message: (message: WireMessage) => void;
  /** When the automatic checkout will open (15 s after the final message), from now. */
  countdown: (countdown: { checkoutInMs: number }) => void;
  /** The automatic checkout, 15 s after the final message. */
  checkout: (checkout: { url: string }) => void;
  notice: (notice: { code: string; text: string }) => void;
};

export type FunnelClientEvents = {
  send: (message: { text: string }, ack: (reply: SendAck) => void) => void;
  checkout: (request: Record<string, never>, ack: (reply: CheckoutAck) => void) => void;
};

export type FunnelSocket = Socket<FunnelServerEvents, FunnelClientEvents>;

/**
 * The visitor is the server's HttpOnly `vid` cookie, so the handshake carries no visitor id. A
 * preview of a draft flow (`preview`) carries its id: the server runs the draft, counted nowhere.
 */
export function connectFunnel(funnel: ChatFunnelKind, params: CampaignParams, preview: string | null = null): FunnelSocket {
  const auth: Record<string, string> = { funnel, ...params };
  if (preview) auth.preview = preview;
  return connectNamespace<FunnelServerEvents, FunnelClientEvents>('/funnel', auth);
}
