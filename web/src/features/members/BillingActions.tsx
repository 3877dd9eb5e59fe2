import { useState } from 'react';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { membersApi } from './api';

type Result = { ok: boolean; text: string };

function messageOf(cause: unknown): string {
  return cause instanceof ApiError || cause instanceof Error ? cause.message : String(cause);
}

/** Cancel anytime, and the $1 setup fee back on request: both decided by the server. */
export function BillingActions() {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState<'cancel' | 'refund' | null>(null);
  const [result, setResult] = useState<Result | null>(null);

  async function run(kind: 'cancel' | 'refund') {
    setBusy(kind);
    setResult(null);
    try {
      const { message } = kind === 'cancel' ? await membersApi.cancelSubscription() : await membersApi.refundFee();
      setResult({ ok: true, text: message });
      setConfirming(false);
    } catch (cause) {
      setResult({ ok: false, text: messageOf(cause) });
    } finally {
      setBusy(null);
    }
  }

  return (
    <div className="billing-actions">
      {confirming ? (
        <div className="billing-actions__confirm" role="group" aria-label="Cancel your subscription">
          <p>Cancel your subscription? You keep access until the end of the current period, and nothing more is charged.</p>
          <div className="billing-actions__buttons">
            <Button variant="secondary" disabled={busy !== null} onClick={() => void run('cancel')}>
              {busy === 'cancel' ? 'Canceling...' : 'Yes, cancel'}
            </Button>
            <Button variant="link" onClick={() => setConfirming(false)}>
              Keep my subscription
            </Button>
          </div>
        </div>
      ) : (
        <div className="billing-actions__buttons">
          <Button variant="secondary" onClick={() => setConfirming(true)}>
            Cancel subscription
          </Button>
          <Button variant="secondary" disabled={busy !== null} onClick={() => void run('refund')}>
            {busy === 'refund' ? 'Refunding...' : 'Refund my $1 setup fee'}
          </Button>
        </div>
      )}
      {result && (
        <p className={result.ok ? 'form__success' : 'form__error'} role={result.ok ? 'status' : 'alert'}>
          {result.text}
        </p>
      )}
    </div>
  );
}
