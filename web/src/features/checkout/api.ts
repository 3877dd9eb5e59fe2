import { api } from '../../lib/api';

/** The spec's time-out for the checkout-success call (the client's usual one is 8 s). */
export const CHECKOUT_SUCCESS_TIMEOUT_MS = 15_000;

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
};

/** Where the browser goes next: a same-origin path. */
type Redirect = { redirect: string };

export type CheckoutSuccess = {
  email: string;
  sessionId: string;
  paymentSessionId: string;
  hasPassword: boolean;
  trialActive: boolean;
  trialEndDate: string | null;
};

export const checkoutApi = {
  demoCheckout: (id: string, signal?: AbortSignal) =>
    api.get<DemoCheckout>(`/api/demo-checkout/${encodeURIComponent(id)}`, signal),
  completeDemoCheckout: (id: string, payment: { email: string; cardNumber: string }) =>
    api.post<Redirect>(`/api/demo-checkout/${encodeURIComponent(id)}/complete`, payment),
  cancelDemoCheckout: (id: string) => api.post<Redirect>(`/api/demo-checkout/${encodeURIComponent(id)}/cancel`, {}),
  /** `search` is the success page's own query string, passed through as the server expects it. */
  checkoutSuccess: (search: string, signal?: AbortSignal) =>
    api.get<CheckoutSuccess>(`/api/checkout-success${search}`, signal, CHECKOUT_SUCCESS_TIMEOUT_MS),
};
