import { useCallback, useEffect, useRef, useState } from 'react';
import { trialApi } from './api';
import { browserLocation } from '../../lib/browser';
import { firstTouch } from '../../lib/campaign-params';

/** Where the payment provider sends a person who cancels the checkout. */
export const TRIAL_CANCEL_URL = '/?canceled=true';
/** Still on this page this long after sending the browser away means the redirect did not happen. */
export const REDIRECT_GRACE_MS = 5000;
export const NO_REDIRECT = 'Failed to redirect to checkout page. Please try again.';

function redirectFailure(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  return `Failed to redirect to checkout page: ${message}`;
}

/**
 * Starts the trial checkout and follows it; the spec's two texts when that does not happen.
 * `source`: the trial prompt's ($1 setup fee, then the trial) or the landing page's free trial.
 */
export function useStartTrial(source: 'chat_trial_prompt' | 'direct_signup' = 'chat_trial_prompt') {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const busyRef = useRef(false);
  const graceTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => () => clearTimeout(graceTimer.current), []);

  const fail = useCallback((text: string) => {
    busyRef.current = false;
    setBusy(false);
    setError(text);
  }, []);

  const start = useCallback(async () => {
    if (busyRef.current) return;
    busyRef.current = true;
    setBusy(true);
    setError(null);
    try {
      // A page of its own has no campaign: the checkout's is the visitor's first touch.
      const touch = firstTouch();
      const { url } = await trialApi.createCheckout({
        ...touch,
        firstTouch: touch,
        source,
        isTrial: true,
        cancelUrl: TRIAL_CANCEL_URL,
      });
      if (!url) {
        fail(NO_REDIRECT);
        return;
      }
      browserLocation.assign(url);
      graceTimer.current = setTimeout(() => fail(NO_REDIRECT), REDIRECT_GRACE_MS);
    } catch (cause) {
      fail(redirectFailure(cause));
    }
  }, [fail, source]);

  return { start, busy, error };
}
