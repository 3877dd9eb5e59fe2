import { useState } from 'react';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { membersApi } from './api';

type Result = { ok: boolean; text: string };

function messageOf(cause: unknown): string {
  return cause instanceof ApiError || cause instanceof Error ? cause.message : String(cause);
}

/** Cancel anytime, and the $1 setup fee back on request: both asked first, and decided by the server. */
export function BillingActions({ feeRefundable }: { feeRefundable: boolean }) {
  const [confirming, setConfirming] = useState<'cancel' | 'refund' | null>(null);
  const [busy, setBusy] = useState<'cancel' | 'refund' | null>(null);
  const [refunded, setRefunded] = useState(false);
  const [result, setResult] = useState<Result | null>(null);

  async function run(kind: 'cancel' | 'refund') {
    setBusy(kind);
    setResult(null);
    try {
      const { message } = kind === 'cancel' ? await membersApi.cancelSubscription() : await membersApi.refundFee();
      setResult({ ok: true, text: message });
      if (kind === 'refund') setRefunded(true);
      setConfirming(null);
    } catch (cause) {
      setResult({ ok: false, text: messageOf(cause) });
      // A fee refunded already (in another tab, say) is not offered again.
      if (kind === 'refund' && cause instanceof ApiError && cause.code === 'already_refunded') {
        setRefunded(true);
        setConfirming(null);
      }
    } finally {
      setBusy(null);
    }
  }

  return (
    <div className="billing-actions">
      {confirming === 'cancel' && (
        <div className="billing-actions__confirm" role="group" aria-label="Cancel your subscription">
          <p>Cancel your subscription? You keep access until the end of the current period, and nothing more is charged.</p>
          <div className="billing-actions__buttons">
            <Button variant="secondary" disabled={busy !== null} onClick={() => void run('cancel')}>
              {busy === 'cancel' ? 'Canceling...' : 'Yes, cancel'}
            </Button>
            <Button variant="link" onClick={() => setConfirming(null)}>
              Keep my subscription
            </Button>
          </div>
        </div>
      )}
      {confirming === 'refund' && (
        <div className="billing-actions__confirm" role="group" aria-label="Refund your $1 setup fee">
          <p>
            Refund your $1 setup fee? It goes back to your card in 5-7 business days. Your trial and your account stay as
            they are.
          </p>
          <div className="billing-actions__buttons">
            <Button variant="secondary" disabled={busy !== null} onClick={() => void run('refund')}>
              {busy === 'refund' ? 'Refunding...' : 'Yes, refund my $1'}
            </Button>
            <Button variant="link" onClick={() => setConfirming(null)}>
              Keep it
            </Button>
          </div>
        </div>
      )}
      {confirming === null && (
        <div className="billing-actions__buttons">
          <Button variant="secondary" onClick={() => setConfirming('cancel')}>
            Cancel subscription
          </Button>
          {feeRefundable && !refunded && (
            <Button variant="secondary" onClick={() => setConfirming('refund')}>
              Refund my $1 setup fee
            </Button>
          )}
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
