import { urlAction, type Viewer } from './url-actions';

const VISITOR: Viewer = { signedIn: false, hasAccess: false };
const NO_ACCESS: Viewer = { signedIn: true, hasAccess: false };
const MEMBER: Viewer = { signedIn: true, hasAccess: true };

function actionFor(query: string, viewer: Viewer = VISITOR) {
  return urlAction(new URLSearchParams(query), viewer);
}

describe('urlAction', () => {
  it('sends success=true with an email and a session to account setup, whoever is looking', () => {
    for (const viewer of [VISITOR, NO_ACCESS, MEMBER]) {
      expect(actionFor('success=true&email=ann%40example.com&session=s1&session_id=cs_1', viewer)).toEqual({
        kind: 'account-setup',
        to: '/account-setup?success=true&email=ann%40example.com&session=s1&session_id=cs_1',
      });
    }
    expect(actionFor('success=true&email=ann%40example.com&session=s1')).toEqual({
      kind: 'account-setup',
      to: '/account-setup?success=true&email=ann%40example.com&session=s1',
    });
  });

  it('signs a visitor in with the jwt, or else with the checkout cookie', () => {
    expect(actionFor('success=true&jwt=abc')).toEqual({ kind: 'token-sign-in', jwt: 'abc', email: '' });
    expect(actionFor('success=true')).toEqual({ kind: 'token-sign-in', jwt: null, email: '' });
    // An email without a session is kept to prefill the sign-in if the token does not work.
    expect(actionFor('success=true&email=ann%40example.com')).toEqual({
      kind: 'token-sign-in',
      jwt: null,
      email: 'ann@example.com',
    });
  });

  it('only tidies the address when someone is already signed in after a checkout', () => {
    expect(actionFor('success=true', NO_ACCESS)).toEqual({ kind: 'clean' });
    expect(actionFor('success=true', MEMBER)).toEqual({ kind: 'clean' });
  });

  it('uses a mailed link when signed in to the account it was mailed to (it proves the address), not another', () => {
    const ann = { ...NO_ACCESS, email: 'ann@example.com' };
    expect(urlAction(new URLSearchParams('success=true&jwt=abc&email=Ann%40example.com'), ann)).toEqual({
      kind: 'token-sign-in',
      jwt: 'abc',
      email: 'Ann@example.com',
    });
    expect(urlAction(new URLSearchParams('success=true&jwt=abc&email=bob%40example.com'), ann)).toEqual({
      kind: 'clean',
    });
    expect(urlAction(new URLSearchParams('success=true&jwt=abc'), ann)).toEqual({ kind: 'clean' });
  });

  it('shows the notices for a failed and a canceled checkout', () => {
    expect(actionFor('success=demo')).toEqual({ kind: 'notice', notice: 'checkout-failed' });
    expect(actionFor('canceled=true', NO_ACCESS)).toEqual({ kind: 'notice', notice: 'canceled' });
  });

  it('greets an existing account only when the email is known', () => {
    expect(actionFor('existing=true&email=ann%40example.com')).toEqual({
      kind: 'existing-account',
      email: 'ann@example.com',
    });
    expect(actionFor('existing=true')).toEqual({ kind: 'none' });
  });

  it('opens the trial prompt for subscribe=true unless the person already has access', () => {
    expect(actionFor('subscribe=true')).toEqual({ kind: 'trial-prompt' });
    expect(actionFor('subscribe=true', NO_ACCESS)).toEqual({ kind: 'trial-prompt' });
    expect(actionFor('subscribe=true', MEMBER)).toEqual({ kind: 'clean' });
  });

  it('opens the access dialog for a session parameter alone', () => {
    expect(actionFor('session=s1')).toEqual({ kind: 'access', session: 's1' });
    expect(actionFor('session=s1', MEMBER)).toEqual({ kind: 'access', session: 's1' });
  });

  it('leaves other addresses alone', () => {
    expect(actionFor('')).toEqual({ kind: 'none' });
    expect(actionFor('utm_source=google&keyword=email')).toEqual({ kind: 'none' });
    expect(actionFor('success=false')).toEqual({ kind: 'none' });
  });
});
