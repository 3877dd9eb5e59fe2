import { api } from '../../lib/api';

export type DemoCheckout = {
  sessionId: string;
  status: 'open' | 'complete' | 'canceled';
  email: string | null;
  source: string;
  refundableFee: boolean;
  todayCents: number;
  trialDays: number;
  monthlyCents: number;
  cancelUrl: string;
  /** A trial checkout's word on cards that cannot be identified (no trial for them), shown by the pay button. */
  cardNotice: string | null;
};

/** Where the browser goes next: a same-origin path. */
type Redirect = { redirect: string };

export const checkoutApi = {
  demoCheckout: (id: string, signal?: AbortSignal) =>
    api.get<DemoCheckout>(`/api/demo-checkout/${encodeURIComponent(id)}`, signal),
  completeDemoCheckout: (id: string, payment: { email: string; cardNumber: string }) =>
    api.post<Redirect>(`/api/demo-checkout/${encodeURIComponent(id)}/complete`, payment),
  cancelDemoCheckout: (id: string) => api.post<Redirect>(`/api/demo-checkout/${encodeURIComponent(id)}/cancel`, {}),
};
