import { useEffect, useId, useMemo, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { usePublicConfig } from '../../lib/public-config';
import { Button } from '../../components/Button';
import { AiCallsOverlay } from './AiCallsOverlay';
import { DEFAULT_HELP_INTRO, funnelsApi, type AiCallEvent, type HelpAnswer } from './api';
import { browserLocation, CHECKOUT_FALLBACK_URL } from '../../lib/browser';
import { firstTouch, readCampaignParams, rememberCampaignParams } from '../../lib/campaign-params';
import { helpHeadline } from './headline';
import { preserveHelpFunnel, restoreHelpFunnel } from './preserved';
import './funnels.css';

/** The spec's help-funnel checkout safety: still here this long after the button means no redirect. */
export const HELP_CHECKOUT_SAFETY_MS = 5000;
export const ISSUE_REQUIRED_TEXT = 'Please describe your issue so we can help.';

type Step = 'issue' | 'solution' | 'redirecting';

const NO_ANSWER: HelpAnswer = { summary: null, intro: DEFAULT_HELP_INTRO, aiEvents: [] };

/** The page's query without `canceled` (which only says the checkout came back). */
function withoutCanceled(search: string): string {
  const query = new URLSearchParams(search);
  query.delete('canceled');
  const rest = query.toString();
  return rest ? `?${rest}` : '';
}

/** What the visitor had before leaving for the checkout, if they come back within the hour. */
function restored() {
  const saved = restoreHelpFunnel();
  if (!saved) return null;
  return {
    issue: saved.rawUserInput,
    answer: { summary: saved.userIssue, intro: saved.aiIntro || DEFAULT_HELP_INTRO, aiEvents: [] } as HelpAnswer,
  };
}

/** /get-help and /funnel: issue, then the solution teaser with its paywall, then the checkout. */
export function HelpFunnelPage() {
  const { pathname, search } = useLocation();
  const navigate = useNavigate();
  const { debugTools } = usePublicConfig();
  const params = useMemo(() => readCampaignParams(search), [search]);
  const headline = helpHeadline(params.keyword);

  useEffect(() => {
    rememberCampaignParams(params);
  }, [params]);

  // Back from a canceled checkout (or with Back): the solution they had, not an empty form.
  const [preserved] = useState(restored);
  const [backFromCheckout] = useState(() => new URLSearchParams(search).get('canceled') === 'true');
  const [step, setStep] = useState<Step>(preserved ? 'solution' : 'issue');
  const [issue, setIssue] = useState(preserved?.issue ?? '');
  const [issueError, setIssueError] = useState<string | null>(null);
  const [analyzing, setAnalyzing] = useState(false);
  const [answer, setAnswer] = useState<HelpAnswer>(preserved?.answer ?? NO_ANSWER);
  const [aiEvents, setAiEvents] = useState<AiCallEvent[]>([]);
  const [processing, setProcessing] = useState(false);

  const issueId = useId();
  const issueErrorId = useId();
  const issueRef = useRef<HTMLTextAreaElement>(null);
  const stepHeadingRef = useRef<HTMLHeadingElement>(null);
  const analyzingRef = useRef(false);
  const checkoutStarted = useRef(false);
  const destinationChosen = useRef(false);
  const safetyTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => () => clearTimeout(safetyTimer.current), []);

  // The address loses `canceled` (a reload must not say it again); the campaign stays.
  useEffect(() => {
    if (new URLSearchParams(search).has('canceled')) {
      navigate({ pathname, search: withoutCanceled(search) }, { replace: true });
    }
  }, [navigate, pathname, search]);

  // Back from the checkout with the browser's Back button, a page restored from the back/forward
  // cache would still show 'Redirecting to checkout...' and its safety timer would fire: start over.
  useEffect(() => {
    const onPageShow = (event: PageTransitionEvent) => {
      if (event.persisted) window.location.reload();
    };
    window.addEventListener('pageshow', onPageShow);
    return () => window.removeEventListener('pageshow', onPageShow);
  }, []);

  // Each new step is announced by moving focus to its heading.
  const firstRender = useRef(true);
  useEffect(() => {
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    stepHeadingRef.current?.focus();
  }, [step]);

  async function submitIssue() {
    if (analyzingRef.current) return;
    const trimmed = issue.trim();
    if (trimmed === '') {
      setIssueError(ISSUE_REQUIRED_TEXT);
      issueRef.current?.focus();
      return;
    }
    analyzingRef.current = true;
    setIssueError(null);
    setAnalyzing(true);
    let result: HelpAnswer;
    try {
      result = await funnelsApi.askForHelp({ issue: trimmed, ...params });
    } catch {
      // The solution teaser works without the AI's words.
      result = NO_ANSWER;
    }
    setAnswer(result);
    setAiEvents((previous) => [...previous, ...result.aiEvents]);
    setAnalyzing(false);
    setStep('solution');
  }

  function leaveFor(url: string) {
    if (destinationChosen.current) return;
    destinationChosen.current = true;
    browserLocation.assign(url);
  }

  async function startCheckout() {
    if (checkoutStarted.current) return;
    checkoutStarted.current = true;
    setProcessing(true);
    // Still on this page 5 s after the button: whatever happened, take the fallback.
    safetyTimer.current = setTimeout(() => {
      destinationChosen.current = true;
      browserLocation.assign(CHECKOUT_FALLBACK_URL);
    }, HELP_CHECKOUT_SAFETY_MS);
    try {
      const started = await funnelsApi.createCheckout({
        source: 'help_funnel',
        isTrial: true,
        ...params,
        headline,
        firstTouch: firstTouch(),
        cancelUrl: `${pathname}?${new URLSearchParams({
          ...Object.fromEntries(new URLSearchParams(withoutCanceled(search))),
          canceled: 'true',
        })}`,
      });
      if (destinationChosen.current) return;
      if (!started?.url) {
        leaveFor(CHECKOUT_FALLBACK_URL);
        return;
      }
      preserveHelpFunnel({
        timestamp: Date.now(),
        userIssue: answer.summary,
        rawUserInput: issue.trim(),
        aiIntro: answer.intro,
        funnel: 'help_funnel',
        campaignid: params.campaignid ?? null,
        keyword: params.keyword ?? null,
        headline,
      });
      setStep('redirecting');
      leaveFor(started.url);
    } catch {
      leaveFor(CHECKOUT_FALLBACK_URL);
    }
  }

  function onIssueKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    // Enter submits, Shift+Enter starts a new line; Enter that ends an IME composition does neither.
    if (event.key !== 'Enter' || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    void submitIssue();
  }

  function onIssueSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void submitIssue();
  }

  return (
    <div className={debugTools ? 'help-funnel help-funnel--debug' : 'help-funnel'}>
      {step === 'issue' && (
        <section className="card help-funnel__card" aria-labelledby="help-funnel-title">
          <h1 id="help-funnel-title" className="help-funnel__headline">
            {headline}
          </h1>
          {backFromCheckout && !preserved && (
            <p className="help-funnel__notice" role="status">
              Your checkout was canceled, and nothing was charged.
            </p>
          )}
          <p className="help-funnel__prompt">Enter your issue in the form below to receive an instant answer</p>
          <form className="help-funnel__form" onSubmit={onIssueSubmit} noValidate>
            <label htmlFor={issueId} className="help-funnel__label">
              Describe your issue
            </label>
            <textarea
              id={issueId}
              ref={issueRef}
              className="help-funnel__issue"
              rows={4}
              placeholder="For example: I can't sign in to my email"
              value={issue}
              onChange={(event) => {
                setIssue(event.target.value);
                if (issueError) setIssueError(null);
              }}
              onKeyDown={onIssueKeyDown}
              aria-invalid={issueError !== null}
              aria-describedby={issueError ? issueErrorId : undefined}
              required
            />
            {issueError && (
              <p id={issueErrorId} className="form__error" role="alert">
                {issueError}
              </p>
            )}
            <Button type="submit" className="help-funnel__submit" disabled={analyzing}>
              {analyzing ? 'Analyzing Issue...' : 'Get Help Now'}
            </Button>
          </form>
        </section>
      )}

      {step === 'solution' && (
        <section className="card help-funnel__card" aria-labelledby="help-funnel-title">
          <h1 id="help-funnel-title" ref={stepHeadingRef} tabIndex={-1} className="help-funnel__headline">
            Solution Found:
          </h1>
          {backFromCheckout && (
            <p className="help-funnel__notice" role="status">
              Your checkout was canceled, and nothing was charged. Your solution is still here.
            </p>
          )}
          {answer.summary && <p className="help-funnel__summary">{answer.summary}</p>}
          <p className="help-funnel__intro">{answer.intro}</p>
          <ol className="help-funnel__steps">
            {['Apply the solution', 'Prevent future issues'].map((title) => (
              <li key={title} className="help-funnel__step">
                <h2 className="help-funnel__step-title">{title}</h2>
                <div className="help-funnel__locked-lines" aria-hidden="true">
                  <span />
                  <span />
                  <span />
                </div>
              </li>
            ))}
          </ol>
          <div className="paywall">
            <div className="paywall__blur" aria-hidden="true">
              <span />
              <span />
              <span />
              <span />
            </div>
            <div className="paywall__lock">
              <svg className="paywall__icon" viewBox="0 0 24 24" width="40" height="40" aria-hidden="true">
                <path
                  fill="currentColor"
                  d="M12 2a5 5 0 0 0-5 5v3H6a2 2 0 0 0-2 2v8a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2v-8a2 2 0 0 0-2-2h-1V7a5 5 0 0 0-5-5Zm-3 8V7a3 3 0 1 1 6 0v3H9Zm3 3.5a1.5 1.5 0 0 1 .75 2.8V18h-1.5v-1.7A1.5 1.5 0 0 1 12 13.5Z"
                />
              </svg>
              <p className="paywall__text">Your complete step-by-step fix is ready.</p>
              <Button className="paywall__button" onClick={() => void startCheckout()} disabled={processing}>
                {processing ? (
                  'Processing...'
                ) : (
                  <>
                    {/* The arrow never sits alone on a line of its own. */}
                    Fix my issue for <span className="paywall__nowrap">free &gt;</span>
                  </>
                )}
              </Button>
              {/* The spec's button says 'free'; what it costs is said right under it. */}
              <p className="paywall__terms">
                7 days of help for a $1 setup fee (refundable at any time), then $20/month. Cancel anytime.
              </p>
            </div>
          </div>
        </section>
      )}

      {step === 'redirecting' && (
        <section className="card help-funnel__card help-funnel__redirect" aria-labelledby="help-funnel-title">
          <span className="spinner spinner--large" aria-hidden="true" />
          <h1 id="help-funnel-title" ref={stepHeadingRef} tabIndex={-1} className="help-funnel__headline">
            Redirecting to checkout...
          </h1>
        </section>
      )}

      {debugTools && <AiCallsOverlay events={aiEvents} />}
    </div>
  );
}
