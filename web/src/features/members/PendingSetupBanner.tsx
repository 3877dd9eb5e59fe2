import { Link } from 'react-router';
import type { PendingSetup } from '../../lib/auth';

function accountSetupPath(pending: PendingSetup): string {
  const query = new URLSearchParams({
    email: pending.email,
    session: pending.session,
    session_id: pending.paymentSessionId,
    success: 'true',
  });
  return `/account-setup?${query}`;
}

/** For an account a checkout created: it has no password yet, so only this browser can reach it. */
export function PendingSetupBanner({ pending }: { pending: PendingSetup }) {
  return (
    <section className="pending-setup" aria-labelledby="pending-setup-title">
      <div className="pending-setup__text">
        <h2 id="pending-setup-title" className="pending-setup__title">
          Complete Your Account Setup
        </h2>
        <p className="pending-setup__lead">Choose a password so you can sign in to your account from any device.</p>
      </div>
      <Link to={accountSetupPath(pending)} className="btn btn--primary pending-setup__action">
        Complete Setup
      </Link>
    </section>
  );
}
