/** What the members page does about its query string (spec 4, 'Members page URL handling'). */
export type UrlAction =
  | { kind: 'none' }
  /** Parameters that need nothing (any more): take them off the address. */
  | { kind: 'clean' }
  | { kind: 'account-setup'; to: string }
  /** `jwt` null: the server signs in with the checkout's cookie instead. */
  | { kind: 'token-sign-in'; jwt: string | null; email: string }
  | { kind: 'notice'; notice: 'canceled' | 'checkout-failed' }
  | { kind: 'existing-account'; email: string }
  | { kind: 'trial-prompt' }
  | { kind: 'access'; session: string };

/** `email`: the signed-in member's address. */
export type Viewer = { signedIn: boolean; hasAccess: boolean; email?: string };

function param(params: URLSearchParams, name: string): string {
  return params.get(name)?.trim() ?? '';
}

/** Checked in the spec's order; the first that applies wins. */
export function urlAction(params: URLSearchParams, viewer: Viewer): UrlAction {
  const success = param(params, 'success');
  const email = param(params, 'email');
  const session = param(params, 'session');

  if (success === 'true') {
    if (email && session) {
      const query = new URLSearchParams({ success: 'true', email, session });
      const paymentSessionId = param(params, 'session_id');
      if (paymentSessionId) query.set('session_id', paymentSessionId);
      return { kind: 'account-setup', to: `/account-setup?${query}` };
    }
    const jwt = param(params, 'jwt') || null;
    // A mailed link is used by a browser signed in to the account it was mailed to: it proves
    // the address (a payment held for it waits for that proof). A browser signed in to another
    // account does not switch to the link's unasked, and the checkout's cookie signs in only a
    // signed-out one.
    if (viewer.signedIn && !(jwt && email && email.toLowerCase() === viewer.email?.toLowerCase())) {
      return { kind: 'clean' };
    }
    return { kind: 'token-sign-in', jwt, email };
  }
  if (success === 'demo') return { kind: 'notice', notice: 'checkout-failed' };
  if (param(params, 'existing') === 'true' && email) return { kind: 'existing-account', email };
  if (param(params, 'canceled') === 'true') return { kind: 'notice', notice: 'canceled' };
  if (param(params, 'subscribe') === 'true') {
    // Someone who already has access has nothing to subscribe to.
    return viewer.hasAccess ? { kind: 'clean' } : { kind: 'trial-prompt' };
  }
  if (session) return { kind: 'access', session };
  return { kind: 'none' };
}
