import { api } from '../../lib/api';

/** The trial prompt's checkout: what is charged is the server's decision, not this request's. */
import type { CampaignParams } from '../../lib/campaign-params';

export type TrialCheckoutRequest = CampaignParams & {
  /** The visitor's first campaign touch, for the account's acquisition. */
  firstTouch: CampaignParams;
  /** The trial prompt's $1 trial, or the landing page's free one (after signing up there). */
  source: 'chat_trial_prompt' | 'direct_signup';
  isTrial: true;
  cancelUrl: string;
};

/** `url` is where the browser goes next: the provider's hosted page, or a same-site demo path. */
export type CheckoutStart = { sessionId: string; trackingSessionId: string; url?: string | null };

export const trialApi = {
  createCheckout: (request: TrialCheckoutRequest) => api.post<CheckoutStart>('/api/create-checkout.js', request),
};
