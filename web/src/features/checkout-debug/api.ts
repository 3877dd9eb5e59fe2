import { api } from '../../lib/api';

/** A checkout as the server keeps it (`paymentSessionId` is the payment provider's id). */
export type DebugCheckout = {
  provider: string;
  paymentSessionId: string;
  sessionId: string | null;
  source: string | null;
  status: string;
  email: string | null;
  userId: string | null;
  refundableFee: boolean;
  createdAt: string;
  completedAt: string | null;
  fulfilledAt: string | null;
};

export type DebugUser = {
  id: string;
  email: string;
  createdAt: string;
  hasPassword: boolean;
  trialStarted: boolean;
  trialEndDate: string | null;
  checkoutSessionId: string | null;
  paymentSessionId: string | null;
  subscriptionId: string | null;
};

export type DebugWebhookEvent = {
  eventId: string;
  eventType: string;
  source: string;
  receivedAt: string;
  processedAt: string | null;
  outcome: string | null;
};

/** A member's page checking the subscription (the spec's `webhook_debug`), newest first. */
export type DebugSubscriptionCheck = {
  email: string | null;
  sessionId: string | null;
  paymentSessionId: string | null;
  checkedAt: string;
  userAgent: string | null;
  origin: string | null;
  pathname: string | null;
};

/** `webhookEvents` holds the last hour's events only; `webhookDebug` the last 30 days' checks. */
export type DebugOverview = {
  checkouts: DebugCheckout[];
  users: DebugUser[];
  webhookEvents: DebugWebhookEvent[];
  webhookDebug?: DebugSubscriptionCheck[];
};

export type CreatedAccount = { created: boolean; userId: string; message: string };

export type WebhookSimulation = {
  type: 'checkout.session.completed';
  sessionId?: string;
  paymentSessionId?: string;
  email: string;
};

export type SimulatedEvent = { eventId: string; outcome: string };

// Admins with debug tools on only: the server answers 404 to everyone else.
export const checkoutDebugApi = {
  overview: (signal?: AbortSignal) => api.get<DebugOverview>('/api/admin/checkout-debug', signal),
  /** 201 `created: true`; 200 `created: false` when the email has an account (a reset mail went out). */
  createAccount: (email: string) => api.post<CreatedAccount>('/api/admin/checkout-debug/accounts', { email }),
  sendReset: (email: string) => api.post<{ message: string }>('/api/admin/checkout-debug/reset', { email }),
  simulateWebhook: (simulation: WebhookSimulation) => api.post<SimulatedEvent>('/api/webhook-test.js', simulation),
};
