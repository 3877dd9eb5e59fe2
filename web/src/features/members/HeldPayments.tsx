import { useEffect, useState } from 'react';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { usePublicConfig } from '../../lib/public-config';
import { membersApi, type HeldPayment } from './api';

function dateOf(iso: string | null): string {
  if (!iso) return 'recently';
  return new Date(iso).toLocaleDateString('en-US', { month: 'long', day: 'numeric', year: 'numeric' });
}

function messageOf(cause: unknown): string {
  return cause instanceof ApiError || cause instanceof Error ? cause.message : String(cause);
}

/**
 * Payments made signed out with this member's address. They changed nothing in the account: the
 * member adds one to the account, or declines it (canceled and refunded to whoever paid).
 */
export function HeldPayments({ email, onChanged }: { email: string; onChanged: () => void }) {
  const { productName } = usePublicConfig();
  const [held, setHeld] = useState<HeldPayment[]>([]);
  const [waitingForProof, setWaitingForProof] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);

  useEffect(() => {
    let live = true;
    membersApi
      .heldPayments()
      .then(({ held: payments, waitingForProof: waiting }) => {
        if (!live) return;
        setHeld(payments);
        setWaitingForProof(waiting === true);
      })
      .catch(() => {
        // Nothing to show when it cannot be read; the mail told the member too.
      });
    return () => {
      live = false;
    };
  }, []);

  async function settle(payment: HeldPayment, action: 'claim' | 'decline') {
    setBusy(payment.id);
    setResult(null);
    try {
      const { message } =
        action === 'claim' ? await membersApi.claimHeld(payment.id) : await membersApi.declineHeld(payment.id);
      setResult({ ok: true, text: message });
      setHeld((all) => all.filter((other) => other.id !== payment.id));
      if (action === 'claim') onChanged();
    } catch (cause) {
      setResult({ ok: false, text: messageOf(cause) });
      if (cause instanceof ApiError && cause.code === 'not_held') {
        setHeld((all) => all.filter((other) => other.id !== payment.id));
      }
    } finally {
      setBusy(null);
    }
  }

  // A payment waits, but this session has not proved the address: the mailed link does (and,
  // when the password was set before, asks for a new one: the address's owner takes the account).
  if (waitingForProof && held.length === 0 && !result) {
    return (
      <section className="pending-setup held-payments" aria-labelledby="held-payments-title">
        <div className="pending-setup__text">
          <h2 id="held-payments-title" className="pending-setup__title">
            A payment is waiting for you
          </h2>
          <p className="pending-setup__lead">
            A payment for {productName} was made with your email address. To see it and add it to your account, open the
            link in the email we sent to {email} about it (after an hour, use &apos;Forgot password?&apos; on the sign-in
            page instead).
          </p>
        </div>
      </section>
    );
  }
  if (held.length === 0 && !result) return null;
  return (
    <section className="pending-setup held-payments" aria-labelledby="held-payments-title">
      <div className="pending-setup__text">
        <h2 id="held-payments-title" className="pending-setup__title">
          A payment is waiting for you
        </h2>
        {held.map((payment) => (
          <div key={payment.id} className="held-payments__item">
            <p className="pending-setup__lead">
              Someone paid for {productName} on {dateOf(payment.paidAt)} with your email address, without being signed
              in. Nothing in your account has changed. If it was you, add it to your account. If not, cancel it: it is
              refunded to whoever paid{payment.expiresAt ? `, as it will be on ${dateOf(payment.expiresAt)} anyway` : ''}.
            </p>
            <div className="billing-actions__buttons">
              <Button disabled={busy !== null} onClick={() => void settle(payment, 'claim')}>
                {busy === payment.id ? 'Working...' : 'Add it to my account'}
              </Button>
              <Button variant="secondary" disabled={busy !== null} onClick={() => void settle(payment, 'decline')}>
                Not me: cancel it
              </Button>
            </div>
          </div>
        ))}
        {result && (
          <p className={result.ok ? 'billing-actions__result' : 'form__error'} role={result.ok ? 'status' : 'alert'}>
            {result.text}
          </p>
        )}
      </div>
    </section>
  );
}
