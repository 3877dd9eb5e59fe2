import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { Button } from '../../components/Button';
import { usePublicConfig } from '../../lib/public-config';
import { useSession } from '../../lib/session';
import type { Access, User } from '../../lib/auth';
import { AccessDialog } from '../../features/access/AccessDialog';
import { recordEvent } from '../../lib/analytics';
import { SelectedShortcuts } from '../../features/shortcuts/ShortcutsDialog';
import { TrialPrompt } from '../../features/trial/TrialPrompt';
import { trialButtonLabel } from '../../features/trial/labels';
import { BillingActions } from '../../features/members/BillingActions';
import { CheckoutNotice, type NoticeKind } from '../../features/trial/CheckoutNotice';
import { ExistingAccountDialog } from '../../features/members/ExistingAccountDialog';
import { MembersWorkspace } from './MembersWorkspace';
import { PendingSetupBanner } from '../../features/members/PendingSetupBanner';
import { HeldPayments } from '../../features/members/HeldPayments';
import { SignInPanel } from '../../features/members/SignInPanel';
import { WelcomeDialog } from '../../features/members/WelcomeDialog';
import { membersApi } from '../../features/members/api';
import { formatTrialEnd } from '../../features/members/format';
import { urlAction } from '../../features/members/url-actions';
import { CHECK_THROTTLE_MS } from '../../lib/subscription';

/** How often a member without access is checked again while the page is open (the spec's throttle). */
export const ACCESS_CHECK_EVERY_MS = CHECK_THROTTLE_MS;

/** The spec's pause before the address loses the checkout parameters after the automatic sign-in. */
export const URL_CLEANUP_DELAY_MS = 1000;

type Overlay =
  | { kind: 'trial' }
  | { kind: 'welcome' }
  | { kind: 'existing'; email: string }
  | { kind: 'access'; session: string | null; startAt: 'checking' | 'login'; email: string };

/** Who is looking, as far as this page cares. */
type Viewer = 'loading' | 'visitor' | 'no-access' | 'member';

/** `accessAsked`: the server was asked for this user's access facts and has answered (or failed). */
function viewerOf(user: User | null | undefined, accessAsked: boolean): Viewer {
  if (user === undefined) return 'loading';
  if (user === null) return 'visitor';
  if (user.access === undefined) return accessAsked ? 'no-access' : 'loading';
  return user.access.hasAccess ? 'member' : 'no-access';
}

function TrialOffer({ signedIn, onStart }: { signedIn: boolean; onStart: () => void }) {
  const { assistantName } = usePublicConfig();
  return (
    <section className="card members-offer" aria-labelledby="members-offer-title">
      <h2 id="members-offer-title" className="members__card-title">
        Unlimited help from {assistantName}
      </h2>
      <ul className="members-offer__points">
        <li>Ask about email, passwords, video calls, your phone or your computer</li>
        <li>Clear, step-by-step answers in plain language, any time of day</li>
        <li>7 days for $1, then $20/month. Cancel anytime.</li>
      </ul>
      <Button className="members-offer__button" onClick={onStart}>
        {trialButtonLabel(signedIn)}
      </Button>
    </section>
  );
}

function MembershipStatus({ access }: { access: Access }) {
  const trialEnd = access.trialActive && access.trialEndDate ? formatTrialEnd(access.trialEndDate) : null;
  return (
    <section className="card members-status" aria-labelledby="members-status-title">
      <h2 id="members-status-title" className="members__card-title">
        Your membership
      </h2>
      {access.trialActive && (
        <>
          <p className="trial-badge">Trial Active</p>
          {trialEnd && <p className="members-status__text">Your trial runs until {trialEnd}</p>}
        </>
      )}
      {/* A subscription in its trial is 'trialing', which the spec counts as active; during the
          trial the badge above says it, and "Subscription active" would read as already charged. */}
      {access.hasActiveSubscription && !access.trialActive && (
        <p className="members-status__text members-status__active">Subscription active</p>
      )}
      {access.trialActive && (
        <p className="members-status__text">After the trial: $20/month. Cancel anytime.</p>
      )}
      <BillingActions feeRefundable={access.feeRefundable === true} />
    </section>
  );
}

/** The favourite sites (the account's, or a visitor's on this device), one click away, and the dialog to choose more. */
function ShortcutsRow({ names }: { names?: string[] }) {
  const headingId = useId();
  return (
    <section
      className="card members-shortcuts"
      aria-labelledby={headingId}
      onClickCapture={(event) => {
        if (event.target instanceof Element && event.target.closest('a[href]')) {
          recordEvent('feature_use', { feature: 'shortcuts' });
        }
      }}
    >
      <h2 id={headingId} className="members__card-title">
        Your favorite sites
      </h2>
      <SelectedShortcuts names={names} />
    </section>
  );
}

/** `/`: the members page. Its query string carries what checkouts and mail links bring back. */
export function MembersPage() {
  const { productName, assistantName } = usePublicConfig();
  const { user, signedIn, refresh, unreachable, checkAccess } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  const [overlay, setOverlay] = useState<Overlay | null>(null);
  const [notice, setNotice] = useState<NoticeKind | null>(null);
  const [signingIn, setSigningIn] = useState(false);
  // Each address is handled once: sign-in tokens work only once, and React may run effects twice.
  const handledKey = useRef<string | null>(null);
  const cleanupTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const accessRequestedFor = useRef<string | null>(null);
  const [accessAnsweredFor, setAccessAnsweredFor] = useState<string | null>(null);
  const viewer = viewerOf(user, user ? accessAnsweredFor === user.id : false);

  useEffect(() => () => clearTimeout(cleanupTimer.current), []);

  // A member without access may have just paid (the webhook can come while the page is open):
  // the spec's subscription check, now, when the page comes back into view, and every 15 s.
  useEffect(() => {
    if (viewer !== 'no-access') return undefined;
    const check = () => {
      if (document.visibilityState !== 'hidden') void checkAccess();
    };
    check();
    const timer = setInterval(check, ACCESS_CHECK_EVERY_MS);
    window.addEventListener('focus', check);
    document.addEventListener('visibilitychange', check);
    return () => {
      clearInterval(timer);
      window.removeEventListener('focus', check);
      document.removeEventListener('visibilitychange', check);
    };
  }, [viewer, checkAccess]);

  // A member with access has opened the members area: counted once per account and visit.
  const memberAreaRecordedFor = useRef<string | null>(null);
  useEffect(() => {
    if (viewer !== 'member' || !user || memberAreaRecordedFor.current === user.id) return;
    memberAreaRecordedFor.current = user.id;
    recordEvent('members_area');
  }, [viewer, user]);

  // Sign-in answers (this page's, the sign-in page's, a token's) carry no access facts; only
  // `/api/auth/me` has them. Asked once per account, so an answer without them cannot loop.
  useEffect(() => {
    if (!user || user.access !== undefined || accessRequestedFor.current === user.id) return;
    const id = user.id;
    accessRequestedFor.current = id;
    void refresh().finally(() => setAccessAnsweredFor(id));
  }, [user, refresh]);

  useEffect(() => {
    // Most answers depend on whether someone is signed in, so wait until the server has said.
    if (user === undefined || handledKey.current === location.key) return;
    handledKey.current = location.key;
    const action = urlAction(new URLSearchParams(location.search), {
      signedIn: user !== null,
      email: user?.email,
      hasAccess: user?.access?.hasAccess === true,
    });
    const cleanUrl = () => navigate('/', { replace: true });

    switch (action.kind) {
      case 'none':
        // Back from a paid checkout while signed in (the success page says so).
        if ((location.state as { welcome?: boolean } | null)?.welcome) setOverlay({ kind: 'welcome' });
        return;
      case 'clean':
        cleanUrl();
        return;
      case 'account-setup':
        navigate(action.to, { replace: true });
        return;
      case 'notice':
        setNotice(action.notice);
        cleanUrl();
        return;
      case 'existing-account':
        setOverlay({ kind: 'existing', email: action.email });
        cleanUrl();
        return;
      case 'trial-prompt':
        setOverlay({ kind: 'trial' });
        cleanUrl();
        return;
      case 'access':
        setOverlay({ kind: 'access', session: action.session, startAt: 'checking', email: '' });
        cleanUrl();
        return;
      case 'token-sign-in':
        setSigningIn(true);
        membersApi
          .redeemToken(action.jwt ?? undefined)
          .then(({ user: tokenUser }) => {
            signedIn(tokenUser);
            // A link that took the account over leads to a new password first (AppLayout).
            if (!tokenUser.mustChoosePassword) setOverlay({ kind: 'welcome' });
            if (action.jwt) cleanUrl();
            else cleanupTimer.current = setTimeout(cleanUrl, URL_CLEANUP_DELAY_MS);
          })
          .catch(() => {
            // No usable token (expired, used, another browser): the post-checkout sign-in, unless
            // this browser is signed in already.
            if (user === null) setOverlay({ kind: 'access', session: null, startAt: 'login', email: action.email });
            cleanUrl();
          })
          .finally(() => setSigningIn(false));
        return;
    }
  }, [user, location.key, location.search, location.state, navigate, signedIn]);

  const closeOverlay = () => setOverlay(null);
  const openTrial = () => setOverlay({ kind: 'trial' });
  // The chat found no active trial or subscription: the upgrade modal, and fresh access facts
  // (a trial can end while the page is open).
  const accessLost = useCallback(() => {
    setOverlay({ kind: 'trial' });
    void refresh();
  }, [refresh]);

  return (
    <div className="members">
      {unreachable && (
        <p className="members__unreachable" role="status">
          We can&apos;t reach {productName} right now. You are seeing your account as it was; we keep trying.
        </p>
      )}
      {user?.pendingSetup && <PendingSetupBanner pending={user.pendingSetup} />}
      {/* A session that must choose a password first is on its way to account setup: the server
          answers it nothing else, so the page asks nothing. */}
      {user && !user.mustChoosePassword && (
        <HeldPayments key={user.id} email={user.email} onChanged={() => void refresh()} />
      )}
      {notice && (
        <CheckoutNotice
          kind={notice}
          signedIn={Boolean(user)}
          offerTrial={viewer !== 'member'}
          onDismiss={() => setNotice(null)}
        />
      )}
      <section className="members__intro" aria-labelledby="members-title">
        <h1 id="members-title" className="page-title">
          Welcome to {productName}
        </h1>
        <p className="members__lead">
          {viewer === 'member'
            ? `${assistantName}, your personal assistant, is here whenever you need help.`
            : `Friendly, patient help from ${assistantName} with any computer or online question, day or night.`}
        </p>
        {(signingIn || viewer === 'loading') && (
          <p className="members__loading" role="status">
            <span className="spinner" aria-hidden="true" /> {signingIn ? 'Signing you in...' : 'Loading your account...'}
          </p>
        )}
      </section>

      {(viewer === 'loading' || signingIn) && (
        // Holds the place of what follows until the server has said who is looking, so the footer
        // does not show up and then jump away.
        <div className="members__placeholder" aria-hidden="true" />
      )}
      {viewer !== 'loading' && !signingIn && (
        // A new account (or signing out) starts with a fresh chat and closed sidebars.
        <MembersWorkspace
          key={user?.id ?? 'visitor'}
          hasAccess={viewer === 'member'}
          signedIn={viewer !== 'visitor'}
          onUpgradeRequired={openTrial}
          onAccessLost={accessLost}
        />
      )}
      {/* Visitors too: their picks are kept on this device. */}
      {viewer !== 'loading' && !signingIn && <ShortcutsRow names={user?.shortcuts} />}
      {viewer === 'visitor' && !signingIn && (
        <div className="members__columns">
          <TrialOffer signedIn={false} onStart={openTrial} />
          <SignInPanel />
        </div>
      )}
      {viewer === 'no-access' && <TrialOffer signedIn onStart={openTrial} />}
      {viewer === 'member' && user?.access && <MembershipStatus access={user.access} />}

      {overlay?.kind === 'trial' && <TrialPrompt onClose={closeOverlay} />}
      {overlay?.kind === 'welcome' && <WelcomeDialog onClose={closeOverlay} />}
      {overlay?.kind === 'existing' && <ExistingAccountDialog email={overlay.email} onClose={closeOverlay} />}
      {overlay?.kind === 'access' && (
        <AccessDialog
          session={overlay.session}
          startAt={overlay.startAt}
          initialEmail={overlay.email}
          onClose={closeOverlay}
        />
      )}
    </div>
  );
}
