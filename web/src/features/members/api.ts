import { api } from '../../lib/api';
import type { User } from '../../lib/auth';

/** A payment made signed out with the member's address, waiting for the member's answer. */
export type HeldPayment = { id: string; paidAt: string | null; setupFee: boolean; expiresAt: string | null };

export const membersApi = {
  /**
   * Signs in with a one-time token: the `jwt` of a link, or without one the HttpOnly cookie the
   * checkout success page left (the browser sends it; this page cannot read it).
   */
  redeemToken: (token?: string) =>
    api.post<{ user: User }>('/api/auth/token', token === undefined ? {} : { token }),
  cancelSubscription: () => api.post<{ message: string }>('/api/billing/cancel', {}),
  refundFee: () => api.post<{ message: string }>('/api/billing/refund-fee', {}),
  /**
   * Payments held for the member's address; before the member proved the address (the link
   * mailed with the payment), none, and `waitingForProof` says whether some wait.
   */
  heldPayments: () => api.get<{ held: HeldPayment[]; waitingForProof?: boolean }>('/api/billing/held'),
  claimHeld: (id: string) =>
    api.post<{ message: string }>(`/api/billing/held/${encodeURIComponent(id)}/claim`, {}),
  declineHeld: (id: string) =>
    api.post<{ message: string }>(`/api/billing/held/${encodeURIComponent(id)}/decline`, {}),
};
