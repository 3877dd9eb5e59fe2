import { useEffect, useState } from 'react';
import { useLocation, useNavigate, useSearchParams } from 'react-router';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { fetchCheckoutSuccess, type CheckoutSuccess } from '../../lib/checkout';
import { useSession } from '../../lib/session';

const MISSING_SESSION = 'Missing required session parameters';
const PROCESSING_FAILED = 'Error processing checkout success';
const CHECKOUT_FAILED = 'An error occurred while processing your checkout.';

/**
 * The spec's three texts: what the server said; 'Error processing checkout success' when it
 * answered without saying; the general fallback when no answer came (offline, time-out).
 */
function failureText(cause: unknown): string {
  if (cause instanceof ApiError && cause.status > 0) {
    return cause.code === 'http_error' ? PROCESSING_FAILED : cause.message || PROCESSING_FAILED;
  }
  return CHECKOUT_FAILED;
}

function accountSetupPath(answer: CheckoutSuccess): string {
  const query = new URLSearchParams({
    success: 'true',
    session: answer.sessionId,
    session_id: answer.paymentSessionId,
    email: answer.email,
  });
  return `/account-setup?${query}`;
}

/** Where the buyer goes after a paid checkout, as the server decided. */
function nextPath(answer: CheckoutSuccess): string {
  if (answer.next === 'sign-in') return `/?${new URLSearchParams({ existing: 'true', email: answer.email })}`;
  return accountSetupPath(answer);
}

/** `/checkout-success`: where the payment provider sends the browser after a paid checkout. */
export function CheckoutSuccessPage() {
  const navigate = useNavigate();
  const { refresh } = useSession();
  const { search } = useLocation();
  const [params] = useSearchParams();
  const hasSession = Boolean(params.get('session_id') || params.get('session'));
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    if (!hasSession) return undefined;
    const controller = new AbortController();
    setFailure(null);
    fetchCheckoutSuccess(search, controller.signal)
      .then((answer) => {
        if (!answer?.sessionId || !answer.paymentSessionId || !answer.email) throw new Error(CHECKOUT_FAILED);
        if (answer.next === 'members') {
          // Signed in already: the members page, with the access this payment gave.
          return refresh().then(() => {
            if (!controller.signal.aborted) navigate('/', { replace: true, state: { welcome: true } });
          });
        }
        navigate(nextPath(answer), { replace: true });
        return undefined;
      })
      .catch((cause) => {
        if (!controller.signal.aborted) setFailure(failureText(cause));
      });
    return () => controller.abort();
  }, [hasSession, search, navigate, refresh]);

  const message = hasSession ? failure : MISSING_SESSION;
  if (message === null) {
    return (
      <section className="card checkout-status" aria-labelledby="checkout-success-title" aria-busy="true">
        <span className="spinner spinner--large" aria-hidden="true" />
        <h1 id="checkout-success-title" className="page-title">
          Processing your subscription...
        </h1>
        <p className="checkout-status__text">This can take a few seconds. Please keep this page open.</p>
      </section>
    );
  }

  return (
    <section className="card checkout-status" aria-labelledby="checkout-success-title">
      <h1 id="checkout-success-title" className="page-title">
        Something went wrong
      </h1>
      <p className="form__error" role="alert">
        {message}
      </p>
      <p className="checkout-status__actions">
        <Button onClick={() => navigate('/')}>Return to Home</Button>
      </p>
    </section>
  );
}
