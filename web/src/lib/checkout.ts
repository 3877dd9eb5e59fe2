import { api } from './api';

/** The spec's time-out for the checkout-success call (the client's usual one is 8 s). */
export const CHECKOUT_SUCCESS_TIMEOUT_MS = 15_000;

/** What the server knows about a paid checkout: the success page and the access dialog ask for it. */
export type CheckoutSuccess = {
  /**
   * Where the buyer goes, as the server decided: 'members' (signed in as the account that got the
   * payment), 'setup' (an account this checkout created, without a password yet) or 'sign-in' (an
   * account that existed before: 'Welcome Back!').
   */
  next: 'members' | 'setup' | 'sign-in';
  email: string;
  sessionId: string;
  paymentSessionId: string;
  hasPassword: boolean;
  trialActive: boolean;
  trialEndDate: string | null;
};

/** `search` is a query string (`?session_id=..` or `?session=..`), passed through as the server expects it. */
export function fetchCheckoutSuccess(search: string, signal?: AbortSignal): Promise<CheckoutSuccess> {
  return api.get<CheckoutSuccess>(`/api/checkout-success${search}`, signal, CHECKOUT_SUCCESS_TIMEOUT_MS);
}
