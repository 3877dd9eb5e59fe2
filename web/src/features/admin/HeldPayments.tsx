import { useEffect, useId, useRef, useState } from 'react';
import { Button } from '../../components/Button';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { ApiError } from '../../lib/api';
import { operationsApi, type HeldPayment } from './operations-api';
import { countOf, formatMoment } from './operations-format';
import './operations.css';

export const NONE_HELD = 'No payments are waiting for their owner.';
export const HELD_UNREADABLE = 'The held payments could not be read. Please reload the page.';
export const REMIND_FAILED = 'The owner could not be mailed. Please try again.';
export const DECLINE_FAILED = 'The payment could not be canceled. Please try again.';

/** A moment in a cell: it may break after its day, never inside the day or the time. */
function when(value: string | null): string {
  return value ? formatMoment(value).replace(/ (?!\d{1,2}:)/g, '\u00a0') : '–';
}

/** The server's own answers as it says them; its failures and the network's in our words. */
function failure(cause: unknown, fallback: string): string {
  return cause instanceof ApiError && cause.status >= 400 && cause.status < 500 && cause.code !== 'http_error'
    ? cause.message
    : fallback;
}

/**
 * Payments held for an account's owner (paid signed out with the address of an account): each
 * with what the operator may do about it.
 */
export function HeldPayments() {
  const idPrefix = useId();
  const [held, setHeld] = useState<HeldPayment[] | null | undefined>(undefined);
  /** The payment an action is under way for. */
  const [busy, setBusy] = useState<string | null>(null);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [declining, setDeclining] = useState<HeldPayment | null>(null);
  const [declineError, setDeclineError] = useState<string | null>(null);
  const resultRef = useRef<HTMLParagraphElement>(null);
  /** Set when a row went away with the focus in it: the message takes the focus. */
  const focusResult = useRef(false);

  useEffect(() => {
    const controller = new AbortController();
    operationsApi
      .held(controller.signal)
      .then((answer) => setHeld(Array.isArray(answer?.held) ? answer.held : []))
      .catch(() => {
        if (!controller.signal.aborted) setHeld(null);
      });
    return () => controller.abort();
  }, []);

  useEffect(() => {
    if (result && focusResult.current) {
      focusResult.current = false;
      resultRef.current?.focus();
    }
  }, [result]);

  function forget(id: string) {
    setHeld((all) => all?.filter((payment) => payment.id !== id) ?? all);
    focusResult.current = true;
  }

  async function remind(payment: HeldPayment) {
    setBusy(payment.id);
    setResult(null);
    try {
      const { message } = await operationsApi.remindHeld(payment.id);
      setResult({ ok: true, text: message });
    } catch (cause) {
      if (cause instanceof ApiError && cause.code === 'not_held') forget(payment.id);
      setResult({ ok: false, text: failure(cause, REMIND_FAILED) });
    } finally {
      setBusy(null);
    }
  }

  async function decline(payment: HeldPayment) {
    setBusy(payment.id);
    setResult(null);
    setDeclineError(null);
    try {
      const { message } = await operationsApi.declineHeld(payment.id);
      setDeclining(null);
      forget(payment.id);
      setResult({ ok: true, text: message });
    } catch (cause) {
      if (cause instanceof ApiError && cause.code === 'not_held') {
        setDeclining(null);
        forget(payment.id);
        setResult({ ok: false, text: cause.message });
      } else {
        // The dialog stays open for another try.
        setDeclineError(failure(cause, DECLINE_FAILED));
      }
    } finally {
      setBusy(null);
    }
  }

  return (
    <section className="card admin-section ops-section" aria-labelledby="admin-held-title">
      <h2 id="admin-held-title" className="admin-section__title">
        Held payments
      </h2>
      <p className="admin-section__note">
        A held payment was made, signed out, with the address of an existing account: it changes nothing in that account
        and waits for its owner to add it or decline it. When its wait ends, it is canceled and refunded by itself.
      </p>
      {result &&
        (result.ok ? (
          <p ref={resultRef} tabIndex={-1} className="ops-done" role="status">
            {result.text}
          </p>
        ) : (
          <p ref={resultRef} tabIndex={-1} className="form__error ops-message" role="alert">
            {result.text}
          </p>
        ))}
      {held === undefined ? (
        <p className="ops-loaded">Reading the held payments...</p>
      ) : held === null ? (
        // Said where the list would be, not announced: the page says loudly enough when the server fails.
        <p className="form__error ops-message">{HELD_UNREADABLE}</p>
      ) : held.length === 0 ? (
        <p className="ops-loaded">{NONE_HELD}</p>
      ) : (
        <div className="ops-held">
          <table className="admin-table ops-held__table" role="table">
            <caption className="ops-sr-only">{countOf(held.length, 'payment')} waiting for their owner</caption>
            <thead role="rowgroup">
              <tr role="row">
                <th scope="col" role="columnheader">
                  Owner&apos;s address
                </th>
                <th scope="col" role="columnheader">
                  Paid
                </th>
                <th scope="col" role="columnheader">
                  Waits until
                </th>
                <th scope="col" role="columnheader">
                  Setup fee
                </th>
                <th scope="col" role="columnheader">
                  What you can do
                </th>
              </tr>
            </thead>
            <tbody role="rowgroup">
              {held.map((payment) => {
                const ownerId = `${idPrefix}-${payment.id}`;
                const working = busy === payment.id;
                return (
                  <tr key={payment.id} role="row">
                    <th scope="row" role="rowheader" id={ownerId} className="ops-held__owner">
                      {payment.email}
                    </th>
                    <td role="cell" data-label="Paid">
                      {when(payment.paidAt)}
                    </td>
                    <td role="cell" data-label="Waits until">
                      {when(payment.expiresAt)}
                    </td>
                    <td role="cell" data-label="Setup fee">
                      {payment.setupFee ? 'Yes ($1)' : 'No'}
                    </td>
                    <td role="cell" className="ops-held__cell">
                      <div className="ops-held__actions">
                        <Button
                          variant="secondary"
                          disabled={busy !== null}
                          aria-busy={working && declining === null}
                          aria-describedby={ownerId}
                          onClick={() => void remind(payment)}
                        >
                          {working && declining === null ? 'Mailing...' : 'Mail the owner again'}
                        </Button>
                        <Button
                          variant="danger"
                          disabled={busy !== null}
                          aria-describedby={ownerId}
                          onClick={() => {
                            setDeclineError(null);
                            setResult(null);
                            setDeclining(payment);
                          }}
                        >
                          Cancel and refund
                        </Button>
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {declining && (
        <ConfirmDialog
          title="Cancel and refund"
          confirmLabel="Cancel and refund"
          busyLabel="Canceling..."
          cancelLabel="Keep it waiting"
          busy={busy === declining.id}
          error={declineError}
          onConfirm={() => void decline(declining)}
          onCancel={() => {
            setDeclining(null);
            setDeclineError(null);
          }}
        >
          The subscription paid with the address {declining.email}
          {declining.paidAt ? ` on ${formatMoment(declining.paidAt)}` : ''} is canceled now
          {declining.setupFee ? ', and the $1 setup fee is refunded to whoever paid' : ' (no setup fee was paid)'}.
          Nothing in the owner&apos;s account changes.
        </ConfirmDialog>
      )}
    </section>
  );
}
