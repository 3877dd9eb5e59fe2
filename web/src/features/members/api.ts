import { api } from '../../lib/api';
import type { User } from '../../lib/auth';

export const membersApi = {
  /**
   * Signs in with a one-time token: the `jwt` of a link, or without one the HttpOnly cookie the
   * checkout success page left (the browser sends it; this page cannot read it).
   */
  redeemToken: (token?: string) =>
    api.post<{ user: User }>('/api/auth/token', token === undefined ? {} : { token }),
  cancelSubscription: () => api.post<{ message: string }>('/api/billing/cancel', {}),
  refundFee: () => api.post<{ message: string }>('/api/billing/refund-fee', {}),
};
